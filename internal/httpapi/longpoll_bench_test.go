package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

var longPollWakeups = flag.Int("longpoll.wakeups", 200, "wake-ups BenchmarkLongPollWakeup times per size and iteration")

// longPollChannels is how many conversations the wake-up stores spread their
// messages over.
const longPollChannels = 50

// BenchmarkLongPollWakeup measures how long a change takes to reach a consumer
// already waiting in GET /v1/changes?after=LAST&wait=30s, on stores of 10,000,
// 100,000 and 1,000,000 messages (sub-benchmarks msgs=10k, msgs=100k, msgs=1M) whose
// every message went through the writer with the change feed on and backfill on (a
// message_posted or reply_added row each, as a first sync with changes.backfill
// records them).
//
// The server is the daemon's (internal/cli serveHTTP): httpapi.New over
// projection.Watch of the store, httpapi.NewServer on 127.0.0.1, the Notifier
// closed on shutdown, and the writer's commit hook publishing the last seq to it
// (the daemon's changesCommitted). The store is built without fsync, then reopened
// with the daemon's options (fsync on every commit) for the measured writes; bbolt's
// consistency check runs on it after the build and at the end (storetest). One
// keep-alive client waits; once the API's long-poll gauge (/metrics) shows it
// waiting, the writer applies one new message (one change) and the client reads the
// answer's body, which must hold exactly that change. Reported, in milliseconds over every
// wake-up of the run (-longpoll.wakeups per iteration, default 200):
//
//   - wake-ms-p50, wake-ms-p99: from just before the writer's transaction starts
//     (ApplyReads, fsync included) to the answer's body read by the client;
//   - commit-ms-p50, commit-ms-p99: from right after the commit (the writer's
//     OnChanges hook, before it publishes) to the body read: what the API adds
//     (Notifier.Wait's wake-up, changefeed.Read in a fresh View, JSON, loopback).
//
// ns/op is the time of one iteration: the whole round of wake-ups, the store's build
// excluded. Run it once per size, e.g.
//
//	go test ./internal/httpapi -run '^$' -bench 'LongPollWakeup' -benchtime 1x
//	go test ./internal/httpapi -run '^$' -bench 'LongPollWakeup/msgs=10k' -benchtime 1x
//
// Each size logs its build time and file size. The 10k store builds in about 0.3 s
// and 200 wake-ups take about 1 s; the 1M store needs about 1.5 GB in the test's
// temporary directory (about 1,500 bytes a message with the feed).
func BenchmarkLongPollWakeup(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"msgs=10k", 10_000}, {"msgs=100k", 100_000}, {"msgs=1M", 1_000_000}} {
		b.Run(size.name, func(b *testing.B) { benchLongPollWakeup(b, size.n) })
	}
}

func benchLongPollWakeup(b *testing.B, n int) {
	polled := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	built := time.Now()
	path, last := writeFeedStore(b, n, polled)
	if fi, err := os.Stat(path); err == nil {
		b.Logf("store of %d messages, feed at seq %d: built and checked in %s, %d bytes", n, last, time.Since(built).Round(time.Millisecond), fi.Size())
	}
	store := storetest.OpenAt(b, path, boltstore.Options{}) // fsync on, as internal/cli openStore
	model := projection.Watch(store)
	notifier := &changefeed.Notifier{}
	var committed atomic.Int64 // UnixNano right after the last commit
	w := rm.NewWriter(model, rm.WriterOptions{Feed: rm.FeedConfig{Backfill: true}, OnChanges: func(seq uint64) {
		committed.Store(time.Now().UnixNano())
		notifier.Publish(seq)
	}})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := httpapi.NewServer(ln.Addr().String(), httpapi.New(httpapi.Options{
		Store: model, Interval: time.Minute, Notifier: notifier, Listen: ln.Addr().String(),
	}))
	srv.RegisterOnShutdown(notifier.Close)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			b.Errorf("serve: %v", err)
		}
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}} // the long poll's and the scrapes'
	b.Cleanup(client.CloseIdleConnections)
	base := "http://" + ln.Addr().String()

	type answer struct {
		read time.Time
		page changefeed.Page
		err  error
	}
	poll := func(after uint64, out chan<- answer) {
		var a answer
		defer func() { out <- a }()
		resp, err := client.Get(base + "/v1/changes?wait=30s&after=" + strconv.FormatUint(after, 10))
		if err != nil {
			a.err = err
			return
		}
		body, err := io.ReadAll(resp.Body)
		a.read = time.Now()
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			a.err = fmt.Errorf("GET /v1/changes?after=%d: %d %s %v", after, resp.StatusCode, body, err)
			return
		}
		a.err = json.Unmarshal(body, &a.page)
	}

	var wake, fromCommit []time.Duration
	k := n // the next message's number: after every stored one
	b.ResetTimer()
	for range b.N {
		for range *longPollWakeups {
			out := make(chan answer, 1)
			go poll(last, out)
			waitForLongPoll(b, client, base+"/metrics")
			msg := feedStoreMessage(k, polled)
			k++
			start := time.Now()
			if _, err := w.ApplyReads([]rm.Message{msg}, &rm.Identity{UserID: "U0SELF000", TeamID: "T0LONGPOL"}, polled); err != nil {
				b.Fatal(err)
			}
			a := <-out
			if a.err != nil {
				b.Fatal(a.err)
			}
			if len(a.page.Changes) != 1 || a.page.Changes[0].Seq <= last || a.page.Changes[0].TS != msg.TS {
				b.Fatalf("long poll after %d answered %+v, want the one change of %s %s", last, a.page.Changes, msg.Channel, msg.TS)
			}
			last = a.page.Changes[0].Seq
			wake = append(wake, a.read.Sub(start))
			fromCommit = append(fromCommit, a.read.Sub(time.Unix(0, committed.Load())))
		}
	}
	b.StopTimer()
	b.ReportMetric(percentileMS(wake, 50), "wake-ms-p50")
	b.ReportMetric(percentileMS(wake, 99), "wake-ms-p99")
	b.ReportMetric(percentileMS(fromCommit, 50), "commit-ms-p50")
	b.ReportMetric(percentileMS(fromCommit, 99), "commit-ms-p99")
}

// waitForLongPoll returns once a GET /v1/changes is waiting on the Notifier (the
// API's /metrics shows slackpoll_changes_long_polls 1), so that the write that
// follows wakes a waiting long poll rather than meeting a request still on its first
// read. The scrapes end before the write starts: they are not timed.
func waitForLongPoll(b *testing.B, client *http.Client, metricsURL string) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(metricsURL)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
		}
		if strings.Contains(string(body), "\nslackpoll_changes_long_polls 1\n") {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("no long poll waiting after 30s")
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// percentileMS is the p-th percentile of d (nearest rank), in milliseconds.
func percentileMS(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return float64(s[max(i, 1)-1]) / float64(time.Millisecond)
}

// writeFeedStore writes n messages to a new store (without fsync) through the writer
// with the change feed and backfill on, in commits of 25,000, checks and closes it,
// and returns its path and the feed's last seq. Messages come in runs of ten in one
// conversation: a parent, eight more messages and a reply to the parent.
func writeFeedStore(b *testing.B, n int, polled time.Time) (path string, last uint64) {
	b.Helper()
	s := storetest.Open(b)
	defer storetest.Close(b, s)
	w := rm.NewWriter(s, rm.WriterOptions{Feed: rm.FeedConfig{Backfill: true}, Now: func() time.Time { return polled },
		OnChanges: func(seq uint64) { last = seq }})
	configured := make([]string, longPollChannels)
	for c := range configured {
		configured[c] = fmt.Sprintf("C%08dL", c)
	}
	if _, err := w.EnsureConversations(configured); err != nil {
		b.Fatal(err)
	}
	id := &rm.Identity{UserID: "U0SELF000", TeamID: "T0LONGPOL"}
	const commit = 25_000
	msgs := make([]rm.Message, 0, commit)
	for i := 0; i < n; i += commit {
		msgs = msgs[:0]
		for j := i; j < min(n, i+commit); j++ {
			msgs = append(msgs, feedStoreMessage(j, polled))
		}
		if _, err := w.ApplyReads(msgs, id, polled); err != nil {
			b.Fatal(err)
		}
	}
	return s.Path(), last
}

// feedStoreMessage is message j of writeFeedStore's stores: ts one second apart, in
// the conversation of its run of ten.
func feedStoreMessage(j int, polled time.Time) rm.Message {
	run := j / 10
	ts := func(j int) rm.TS { return rm.TS(fmt.Sprintf("%d.000200", 1_700_000_000+j)) }
	m := rm.Message{Channel: fmt.Sprintf("C%08dL", run%longPollChannels), TS: ts(j), User: fmt.Sprintf("U%07dL", j%97),
		Text: fmt.Sprintf("build %d is green on main, canary at 5%% — ship it? <https://ci.example.com/runs/%d|run>", j, j), LastPolledAt: &polled}
	if j%10 == 9 {
		m.ThreadTS = ts(run * 10)
	}
	return m
}
