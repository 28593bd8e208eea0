package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// `slackpoll once` with a webhook whose receiver refuses: the tick writes the changes
// and their outbox rows, the attempt after it fails and parks them (max_attempts 1);
// changes, outbox and requeue then read and mend the store.
func TestChangesOutboxAndRequeueOnTheStore(t *testing.T) {
	fake, _ := onceWorkspace(t)
	refused := 0
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		refused++
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer rx.Close()
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cfg := writeConfig(t, cfgOpts{
		store: filepath.Join(t.TempDir(), "slackpoll.db"), apiURL: srv.URL, slack: fake.Token(), convs: []string{"C0GENERAL"},
		extra: fmt.Sprintf("changes:\n  backfill: true\nwebhooks:\n  - name: app\n    url: %s\n    secret: s\n    max_attempts: 1\n    kinds: [reply_added]\n", rx.URL),
	})
	if code, _, errOut := runCLI(context.Background(), "once", "--config", cfg); code != 0 {
		t.Fatalf("once: %d %s", code, errOut)
	}
	code, out, errOut := runCLI(context.Background(), "changes", "--config", cfg)
	if code != 0 {
		t.Fatalf("changes: %d %s", code, errOut)
	}
	var kinds []string
	var last uint64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var c rm.Change
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("changes printed %q: %v", line, err)
		}
		kinds = append(kinds, c.Kind)
		last = c.Seq
	}
	if strings.Join(kinds, ",") != "message_posted,reply_added" {
		t.Errorf("changes = %v, want the parent posted then its reply (backfill on)", kinds)
	}
	if _, out, _ := runCLI(context.Background(), "changes", "--config", cfg, "--after", fmt.Sprint(last)); out != "" {
		t.Errorf("changes --after the last seq printed %q", out)
	}
	if _, out, _ := runCLI(context.Background(), "changes", "--config", cfg, "--kind", "reply_added"); strings.Count(out, "\n") != 1 {
		t.Errorf("changes --kind reply_added printed %q", out)
	}
	if code, _, errOut := runCLI(context.Background(), "changes", "--config", cfg, "--kind", "nope"); code != ExitUsage || !strings.Contains(errOut, "allowed:") {
		t.Errorf("changes --kind nope: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(context.Background(), "changes", "--config", cfg, "--follow"); code != ExitRuntime || !strings.Contains(errOut, "no daemon holds store") {
		t.Errorf("changes --follow without a daemon: %d %s", code, errOut)
	}

	if refused != 1 {
		t.Errorf("the receiver was asked %d times, want once (the reply_added change, right after the tick)", refused)
	}
	code, out, _ = runCLI(context.Background(), "outbox", "--config", cfg, "--parked")
	if code != 0 || !strings.Contains(out, "reply_added") || !strings.Contains(out, "parked") || !strings.Contains(out, "HTTP 503") {
		t.Errorf("outbox --parked: %d\n%s", code, out)
	}
	// status points at the commands that exist.
	_, out, _ = runCLI(context.Background(), "status", "--config", cfg)
	wantContains(t, "status with a parked row", out, "webhook app: 0 pending, 1 parked; see `slackpoll outbox --parked`, then `slackpoll requeue --webhook app`")
	if code, _, errOut := runCLI(context.Background(), "requeue", "--config", cfg); code != ExitUsage || !strings.Contains(errOut, "--webhook") {
		t.Errorf("requeue without --webhook: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(context.Background(), "requeue", "--config", cfg, "--webhook", "ap"); code != ExitUsage || !strings.Contains(errOut, `configures no webhook "ap" (configured: app)`) {
		t.Errorf("requeue of a misspelled webhook: %d %s", code, errOut)
	}
	if _, out, _ := runCLI(context.Background(), "outbox", "--config", cfg, "--parked", "--webhook", "nobody"); !strings.Contains(out, "(no parked rows)") {
		t.Errorf("outbox --parked with none parked:\n%s", out)
	}
	if code, out, _ := runCLI(context.Background(), "requeue", "--config", cfg, "--webhook", "app"); code != 0 || !strings.Contains(out, "requeued 1 parked row") {
		t.Errorf("requeue: %d %s", code, out)
	}
	if _, out, _ := runCLI(context.Background(), "outbox", "--config", cfg, "--parked"); !strings.Contains(out, "(no parked rows)") {
		t.Errorf("outbox --parked after requeue:\n%s", out)
	}
	if _, out, _ := runCLI(context.Background(), "outbox", "--config", cfg); !strings.Contains(out, "reply_added") || strings.Contains(out, "everything was delivered") {
		t.Errorf("outbox after requeue, one row pending:\n%s", out)
	}
	_, out, _ = runCLI(context.Background(), "status", "--config", cfg)
	wantContains(t, "status", out, "change feed: last seq 2", "webhook app: 1 pending")
}

func TestChangesThroughTheDaemonWhileItHoldsTheStore(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	var seqs []uint64
	err := f.Store.Update(func(tx rm.Tx) error {
		for _, kind := range []string{rm.ChangeReactionAdded, rm.ChangeMessageEdited} {
			c := rm.Change{ID: rm.NewEventID(), Kind: kind, Channel: readfixture.General, TS: "1.000001"}
			if err := tx.AppendChange(&c); err != nil {
				return err
			}
			seqs = append(seqs, c.Seq)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured, listen: daemonAPI(t, f, "t0k"), token: "t0k"})
	code, out, errOut := runCLI(t.Context(), "changes", "--config", cfg, "--after", fmt.Sprint(seqs[0]-1), "--kind", rm.ChangeMessageEdited)
	if code != ExitOK {
		t.Fatalf("changes = %d, stderr %s", code, errOut)
	}
	var c rm.Change
	if err := json.Unmarshal([]byte(out), &c); err != nil || c.Seq != seqs[1] || strings.Count(out, "\n") != 1 {
		t.Errorf("changes through the API printed %q (%v), want the edit, seq %d", out, err, seqs[1])
	}
}

// A webhook removed (or renamed) from the config leaves its undelivered rows in the
// outbox, where nothing delivers them. They are kept — configuring the name again
// delivers them — but status and the daemon's start say so, rather than show them
// as pending like a live webhook's.
func TestOutboxRowsOfAWebhookNoLongerConfiguredAreReported(t *testing.T) {
	fake, _ := onceWorkspace(t)
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer rx.Close()
	srv := httptest.NewServer(fake)
	defer srv.Close()
	store := filepath.Join(t.TempDir(), "slackpoll.db")
	base := cfgOpts{store: store, apiURL: srv.URL, slack: fake.Token(), convs: []string{"C0GENERAL"}, extra: "changes:\n  backfill: true\n"}
	with := base
	with.extra += fmt.Sprintf("webhooks:\n  - name: old\n    url: %s\n    secret: s\n", rx.URL)
	if code, _, errOut := runCLI(context.Background(), "once", "--config", writeConfig(t, with)); code != 0 {
		t.Fatalf("once: %d %s", code, errOut)
	}
	without := writeConfig(t, base)
	_, out, _ := runCLI(context.Background(), "status", "--config", without)
	wantContains(t, "status", out, "webhook old: not configured")
	code, _, errOut := runCLI(context.Background(), "once", "--config", without)
	if code != 0 {
		t.Fatalf("once without the webhook: %d %s", code, errOut)
	}
	wantContains(t, "once's log", errOut, "not configured", "webhook=old")

	// The rows of the removed webhook can be dropped; a configured webhook's cannot.
	if code, _, errOut := runCLI(context.Background(), "outbox", "--config", writeConfig(t, with), "--drop", "--webhook", "old"); code != ExitRuntime || !strings.Contains(errOut, "is still configured") {
		t.Errorf("outbox --drop of a configured webhook: %d %s", code, errOut)
	}
	code, out, errOut = runCLI(context.Background(), "outbox", "--config", without, "--drop", "--webhook", "old")
	if code != ExitOK || !strings.Contains(out, "dropped 2 outbox row(s) of webhook old") {
		t.Fatalf("outbox --drop: %d %s %s", code, out, errOut)
	}
	if _, out, _ := runCLI(context.Background(), "status", "--config", without); strings.Contains(out, "webhook old") {
		t.Errorf("status still reports webhook old after its rows were dropped:\n%s", out)
	}
}

// The outbox says which rows a failing row holds back (they showed as due), an empty
// --json listing says so on stderr (it printed nothing at all), and a requeue of a
// seq that is not parked is an error (it said "requeued 0").
func TestOutboxHeldRowsEmptyJSONAndRequeueOfAnUnknownSeq(t *testing.T) {
	f := closedStore(t)
	s, err := boltstore.Open(f.Path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = s.Update(func(tx rm.Tx) error {
		for seq, attempts := range map[uint64]int{7: 3, 8: 0, 9: 0} {
			ch := readfixture.General
			if seq == 9 {
				ch = "C0OTHER00"
			}
			r := rm.OutboxRow{Webhook: "app", Seq: seq, Change: rm.Change{Seq: seq, ID: rm.NewEventID(), Kind: rm.ChangeMessageEdited, Channel: ch, TS: "1.000001"},
				Enqueued: now, Attempts: attempts, LastError: "HTTP 503"}
			if err := tx.PutOutbox(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured, extra: "webhooks:\n  - name: app\n    url: http://127.0.0.1:9/\n    secret: s\n"})
	_, out, _ := runCLI(context.Background(), "outbox", "--config", cfg)
	var row8, row9 string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "app      8 "):
			row8 = l
		case strings.HasPrefix(l, "app      9 "):
			row9 = l
		}
	}
	if !strings.Contains(row8, "held (behind seq 7)") {
		t.Errorf("seq 8, behind failing seq 7 in its conversation, is not shown held:\n%s", out)
	}
	if !strings.Contains(row9, " due ") {
		t.Errorf("seq 9, of another conversation, is not shown due:\n%s", out)
	}
	code, out, errOut := runCLI(context.Background(), "outbox", "--config", cfg, "--parked", "--json")
	if code != ExitOK || out != "" || !strings.Contains(errOut, "no rows") {
		t.Errorf("outbox --parked --json with none parked: %d %q %q, want no JSON and a note on stderr", code, out, errOut)
	}
	code, _, errOut = runCLI(context.Background(), "requeue", "--config", cfg, "--webhook", "app", "999")
	if code != ExitRuntime || !strings.Contains(errOut, "not parked rows of webhook app") {
		t.Errorf("requeue of an unknown seq: %d %s", code, errOut)
	}
}

// `slackpoll outbox` lists at most 1000 rows; a longer outbox must not look like one
// of 1000 rows.
func TestOutboxSaysWhenItListsOnlyThe1000First(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slackpoll.db")
	s := storetest.OpenAt(t, path, boltstore.Options{NoSync: true})
	err := s.Update(func(tx rm.Tx) error {
		for range 1001 {
			c := rm.Change{ID: rm.NewEventID(), Kind: rm.ChangeMessageEdited, Channel: "C0GENERAL", TS: "1.000001"}
			if err := tx.AppendChange(&c); err != nil {
				return err
			}
			if err := tx.PutOutbox(rm.OutboxRow{Webhook: "app", Seq: c.Seq, Change: c}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	storetest.Close(t, s)
	cfg := writeConfig(t, cfgOpts{store: path, convs: []string{"C0GENERAL"}})
	code, out, errOut := runCLI(context.Background(), "outbox", "--config", cfg)
	if code != 0 {
		t.Fatalf("outbox: %d %s", code, errOut)
	}
	wantContains(t, "outbox of 1001 rows", out, "only the first 1000 rows are listed")
}

// `changes --follow` through the daemon's API outlives a restart of the daemon: it
// says it lost the daemon, waits for it, and goes on after the last seq it printed.
// It used to exit 1, blaming http.listen.
func TestChangesFollowResumesAfterTheDaemonRestarts(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	appendChange := func(kind string) uint64 {
		c := rm.Change{ID: rm.NewEventID(), Kind: kind, Channel: readfixture.General, TS: "1.000001"}
		if err := f.Store.Update(func(tx rm.Tx) error { return tx.AppendChange(&c) }); err != nil {
			t.Fatal(err)
		}
		return c.Seq
	}
	first := appendChange(rm.ChangeReactionAdded)
	serve := func(ln net.Listener) *httptest.Server {
		srv := httptest.NewUnstartedServer(httpapi.New(httpapi.Options{Store: f.Store, Configured: f.Configured, Interval: readfixture.Interval, Now: f.Clock.Now}))
		srv.Listener = ln
		srv.Start()
		return srv
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := serve(ln)
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured, listen: addr})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errOut lockedBuffer
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"changes", "--config", cfg, "--after", fmt.Sprint(first - 1), "--follow"}, Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }})
	}()
	waitUntil(t, func() bool { return strings.Contains(out.String(), fmt.Sprintf(`"seq":%d`, first)) }, "the first change")
	srv.Close() // the daemon stops
	waitUntil(t, func() bool { return strings.Contains(errOut.String(), "reconnecting") }, "a line saying the daemon is gone")
	second := appendChange(rm.ChangeMessageEdited)
	ln, err = net.Listen("tcp", addr) // and starts again, on the same address
	if err != nil {
		t.Fatal(err)
	}
	srv = serve(ln)
	defer srv.Close()
	waitUntil(t, func() bool { return strings.Contains(out.String(), fmt.Sprintf(`"seq":%d`, second)) }, "the change written while the daemon was down")
	cancel()
	if code := <-done; code != ExitOK {
		t.Errorf("changes --follow ended with %d after Ctrl-C, want 0; stderr:\n%s", code, errOut.String())
	}
	if n := strings.Count(out.String(), fmt.Sprintf(`"seq":%d,`, first)); n != 1 {
		t.Errorf("the first change was printed %d times, want once (resume after the last seq printed):\n%s", n, out.String())
	}
	wantContains(t, "stderr", errOut.String(), fmt.Sprintf("resuming after seq %d", first))
}

func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 20 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
