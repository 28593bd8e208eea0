package mcp_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/mcp"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

var (
	benchMessages = flag.Int("mcp.messages", 1_000_000, "messages of the store BenchmarkToolLatency builds")
	benchCalls    = flag.Int("mcp.calls", 2000, "calls of each tool BenchmarkToolLatency times")
	benchSearch   = flag.Bool("mcp.search", true, "also time search_messages (builds the SQLite projection of the store first: minutes at 1,000,000 messages)")
)

// benchChannels are the store's conversations; one message in 10 starts a thread of
// 1 to 40 replies.
const benchChannels = 20

var benchWords = []string{"deploy", "rollback", "canary", "incident", "metrics", "review", "release", "schema",
	"timeout", "memory", "branch", "config", "ticket", "meeting", "notes", "passed", "tomorrow", "looks", "good"}

// buildBenchStore writes n messages (thread replies included) over benchChannels
// public channels and one DM, as the poller would have stored them, and returns the
// store and the thread parents.
func buildBenchStore(b *testing.B, n int) (*boltstore.Store, []rm.Ref) {
	b.Helper()
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	polled := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	text := func() string {
		t := ""
		for i := range 8 + rng.IntN(20) {
			if i > 0 {
				t += " "
			}
			t += benchWords[rng.IntN(len(benchWords))]
		}
		return t
	}
	var parents []rm.Ref
	written, k := 0, 0
	const batch = 20_000
	for written < n {
		err := s.Update(func(tx rm.Tx) error {
			if written == 0 {
				if err := tx.PutIdentity(rm.Identity{TeamID: "T0BENCH00"}); err != nil {
					return err
				}
				for c := range benchChannels {
					if err := tx.PutConversation(rm.Conversation{ID: fmt.Sprintf("C%09d", c), Name: fmt.Sprintf("channel-%d", c), Type: rm.TypePublicChannel, Status: rm.StatusOK}); err != nil {
						return err
					}
				}
				if err := tx.PutConversation(rm.Conversation{ID: "D000000000", Type: rm.TypeIM, Status: rm.StatusOK}); err != nil {
					return err
				}
			}
			for end := min(n, written+batch); written < end; k++ {
				ch := fmt.Sprintf("C%09d", k%benchChannels)
				if k%50 == 7 {
					ch = "D000000000"
				}
				sec := 1_600_000_000 + k*60
				m := rm.Message{Channel: ch, TS: rm.TS(fmt.Sprintf("%d.000100", sec)), User: fmt.Sprintf("U%08d", rng.IntN(300)),
					Text: text(), LastPolledAt: &polled}
				if k%4 == 0 {
					m.Reactions = []rm.Reaction{{Name: "eyes", Count: 2, Users: []string{"U00000001", "U00000002"}}}
				}
				var replies []rm.Message
				if k%10 == 0 {
					nr := 1 + rng.IntN(40)
					for r := range nr {
						replies = append(replies, rm.Message{Channel: ch, TS: rm.TS(fmt.Sprintf("%d.%06d", sec+1+r, 100)), ThreadTS: m.TS,
							User: fmt.Sprintf("U%08d", rng.IntN(300)), Text: text(), LastPolledAt: &polled})
					}
					m.ThreadTS, m.ReplyCount = m.TS, nr
					m.LatestReply, m.ReplyWatermark = replies[nr-1].TS, replies[nr-1].TS
					m.ThreadSyncedAt = &polled
					if ch != "D000000000" {
						parents = append(parents, rm.Ref{Channel: ch, TS: m.TS})
					}
				}
				for _, msg := range append([]rm.Message{m}, replies...) {
					if err := tx.PutMessage(msg); err != nil {
						return err
					}
					written++
				}
			}
			return tx.PutLastTick(rm.TickSummary{Started: polled, Finished: polled.Add(time.Minute), StopReason: "complete",
				Staleness: rm.Staleness{RotationPeriod: time.Hour, WatchedRotation: 5 * time.Minute}})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return s, parents
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkToolLatency times tool calls through the SDK's client on a store of
// -mcp.messages messages (1,000,000 by default; about a minute to build), over the
// daemon's /mcp (Streamable HTTP through the read API's checks) and over an
// in-process session (stdio's path without the pipe): read_conversation (a page
// of 20 at a random point of a random channel), read_thread (a random thread, 50
// replies at most), and search_messages (20 hits of a mix of queries, on a SQLite
// projection of the store). It reports p50 and p99 per tool and transport, in ms.
//
//	go test ./internal/mcp -run '^$' -bench ToolLatency -benchtime 1x
func BenchmarkToolLatency(b *testing.B) {
	store, parents := buildBenchStore(b, *benchMessages)
	b.Logf("store of %d messages, %d threads", *benchMessages, len(parents))
	reader := &mcp.StoreReader{Store: store, Interval: time.Minute, DaemonRunning: true}
	if *benchSearch {
		tg, err := projection.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "bench.sqlite"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = tg.Close() })
		start := time.Now()
		if err := projection.New(projection.Options{Store: projection.Watch(store), Target: tg}).Sync(context.Background(), true); err != nil {
			b.Fatal(err)
		}
		b.Logf("SQLite projection built in %v", time.Since(start).Round(time.Second))
		reader.Searcher = func(ctx context.Context, q projection.Query, f projection.Freshness) (projection.Page, error) {
			return tg.Search(ctx, "T0BENCH00", q, f)
		}
	}
	srv := mcp.New(mcp.Options{Open: func(context.Context) (mcp.Reader, func(), error) { return reader, func() {}, nil }, Version: "bench"})
	api := httptest.NewServer(httpapi.New(httpapi.Options{Store: store, Interval: time.Minute, Token: testToken, MCP: srv.Handler()}))
	b.Cleanup(api.Close)
	rng := rand.New(rand.NewPCG(3, 4))
	span := 1_600_000_000 + (*benchMessages/2)*60 // roughly where the timelines end
	calls := map[string]func() map[string]any{
		"read_conversation": func() map[string]any {
			latest := 1_600_000_000 + rng.IntN(span-1_600_000_000)
			return map[string]any{"channel": fmt.Sprintf("C%09d", rng.IntN(benchChannels)), "latest": fmt.Sprintf("%d.000000", latest)}
		},
		"read_thread": func() map[string]any {
			p := parents[rng.IntN(len(parents))]
			return map[string]any{"channel": p.Channel, "ts": string(p.TS)}
		},
	}
	if *benchSearch {
		// A mix: a word (every word is common here), two words, a word in one
		// conversation, a word before a random time.
		n := 0
		calls["search_messages"] = func() map[string]any {
			n++
			w := benchWords[rng.IntN(len(benchWords))]
			switch n % 4 {
			case 1:
				return map[string]any{"query": w + " " + benchWords[rng.IntN(len(benchWords))]}
			case 2:
				return map[string]any{"query": w, "channel": fmt.Sprintf("C%09d", rng.IntN(benchChannels))}
			case 3:
				return map[string]any{"query": w, "before": fmt.Sprintf("%d.000000", 1_600_000_000+rng.IntN(span-1_600_000_000))}
			}
			return map[string]any{"query": w}
		}
	}
	for _, tr := range []string{"http", "stdio"} {
		ctx := context.Background()
		client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		var ct sdk.Transport
		if tr == "http" {
			ct = &sdk.StreamableClientTransport{Endpoint: api.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}}}
		} else {
			c, s := sdk.NewInMemoryTransports()
			sctx, cancel := context.WithCancel(ctx)
			b.Cleanup(cancel)
			go func() { _ = srv.Run(sctx, s) }()
			ct = c
		}
		cs, err := client.Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, tool := range slices.Sorted(func(yield func(string) bool) {
			for k := range calls {
				if !yield(k) {
					return
				}
			}
		}) {
			lat := make([]float64, 0, *benchCalls)
			cpu := cpuTime()
			for range *benchCalls {
				args := calls[tool]()
				start := time.Now()
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
				lat = append(lat, float64(time.Since(start).Microseconds())/1000)
				if err != nil || res.IsError {
					b.Fatalf("%s(%v): %v %v", tool, args, err, res)
				}
			}
			perCall := float64((cpuTime() - cpu).Microseconds()) / 1000 / float64(len(lat))
			slices.Sort(lat)
			p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
			// The CPU time (client and server together, this process) is what a call
			// costs whatever else the machine runs; the latencies are not.
			b.Logf("%s %s: p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d calls; %.2f ms CPU a call", tr, tool, p50, p99, lat[len(lat)-1], len(lat), perCall)
			b.ReportMetric(perCall, "ms-cpu-"+tr+"-"+tool)
			b.ReportMetric(p50, "ms-p50-"+tr+"-"+tool)
			b.ReportMetric(p99, "ms-p99-"+tr+"-"+tool)
		}
		_ = cs.Close()
	}
}
