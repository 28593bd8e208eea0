package demo

import (
	"context"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/testsupport/bubble"
)

// The rotation benchmark measures how long the poller takes to re-read every stored
// message and thread once — a full rotation, the worst-case staleness of a change no
// watermark shows — against the physical limit of Slack's allowance for that store,
// under testing/synctest so that hours of 1-request-a-minute polling take seconds.
//
//	go test ./internal/demo -run '^$' -bench Rotation -benchtime 1x
//
// Each shape is a generated store, read whole once by a fast poller, its messages
// then older than the bulk window; the measured poller runs with the default
// configuration (tick interval 1m, soft deadline 4m, default budgets) at a rate
// profile's rates, against a fake that returns at most the profile's page (15 or 999
// messages).

// rotationShape is one generated store.
type rotationShape struct {
	name          string
	conversations int
	messages      int     // top-level messages in all
	parentShare   float64 // share of them that are thread parents
	maxReplies    int     // replies of a parent: 1 to maxReplies
}

var rotationShapes = []rotationShape{
	{"dense-fewthreads-1conv", 1, 1200, 0.05, 3},
	{"dense-manythreads-1conv", 1, 1200, 0.3, 20},
	{"dense-fewthreads-10conv", 10, 1200, 0.05, 3},
	{"dense-manythreads-10conv", 10, 1200, 0.3, 20},
	{"sparse-fewthreads-1conv", 1, 120, 0.05, 3},
	{"sparse-manythreads-1conv", 1, 120, 0.3, 20},
	{"sparse-fewthreads-10conv", 10, 120, 0.05, 3},
	{"sparse-manythreads-10conv", 10, 120, 0.3, 20},
	// The store of the issue that asked for this: 3 conversations, 1,200 messages,
	// 144 threads.
	{"issue-3conv-144threads", 3, 1200, 0.12, 20},
}

// rotationResult is what one run measured.
type rotationResult struct {
	rotation, limit, serial time.Duration
	first                   time.Duration // the first rotation, right after the sync
	calls                   map[string]int
	quota                   map[string]float64 // calls ÷ (rotation × rate)
	overlap                 float64            // share of the rotation both history and replies were calling
}

func BenchmarkRotation(b *testing.B) {
	for _, profile := range []string{rm.ProfileNonMarketplace, rm.ProfileInternal} {
		for _, sh := range rotationShapes {
			b.Run(profile+"/"+sh.name, func(b *testing.B) {
				var res rotationResult
				for b.Loop() {
					res = bubble.Run(b, func(t *testing.T) rotationResult { return measureShape(t, sh, profile) })
				}
				b.ReportMetric(res.rotation.Minutes(), "rotation-min")
				b.ReportMetric(res.limit.Minutes(), "limit-min")
				b.ReportMetric(res.first.Minutes(), "first-rotation-min")
				b.ReportMetric(res.rotation.Seconds()/res.limit.Seconds(), "x-limit")
				// A message is re-read at most once a tick: a store whose limit is under
				// one tick interval rotates once a tick.
				b.ReportMetric(res.rotation.Seconds()/max(res.limit, time.Minute).Seconds(), "x-floor")
				b.ReportMetric(res.serial.Minutes(), "serial-min")
				b.ReportMetric(float64(res.calls[rm.MethodHistory]), "history-calls")
				b.ReportMetric(float64(res.calls[rm.MethodReplies]), "replies-calls")
				b.ReportMetric(res.quota[rm.MethodHistory], "history-quota")
				b.ReportMetric(res.quota[rm.MethodReplies], "replies-quota")
				b.ReportMetric(res.overlap, "both-busy")
			})
		}
	}
}

// BenchmarkWatchedRotation measures how long 200 watched messages scattered across a
// 12,000-message store take to be re-read, under non_marketplace rates, with and
// without reactions.get.
func BenchmarkWatchedRotation(b *testing.B) {
	for _, withReactions := range []bool{true, false} {
		name := "with-reactions.get"
		if !withReactions {
			name = "history-only"
		}
		b.Run(name, func(b *testing.B) {
			var took time.Duration
			for b.Loop() {
				took = bubble.Run(b, func(t *testing.T) time.Duration { return measureWatched(t, withReactions) })
			}
			b.ReportMetric(took.Minutes(), "watched-rotation-min")
		})
	}
}

// profileFake is a fake Slack with the page cap of profile and one user.
func profileFake(t *testing.T, profile string, scopes []string) (*slackfake.Server, map[string]float64) {
	rates, _ := rm.ProfileRates(profile)
	page := 999
	if profile == rm.ProfileNonMarketplace {
		page = 15
	}
	fake := slackfake.New(slackfake.Options{OmitBlocks: true, PageCap: page, Scopes: scopes})
	must(t, fake.AddUser(slackfake.User{ID: "U0AAAAAAA", DisplayName: "avery"}))
	return fake, rates
}

// generate posts the shape's messages and threads, a minute apart, and returns the
// conversation IDs and the number of replies of each thread.
func generate(t *testing.T, fake *slackfake.Server, sh rotationShape) ([]string, []int) {
	var convs []string
	for c := range sh.conversations {
		id := fmt.Sprintf("C0BENCH%02d", c)
		must(t, fake.AddConversation(slackfake.PublicChannel(id, strings.ToLower(id))))
		convs = append(convs, id)
	}
	var threads []int
	every := int(math.Round(1 / sh.parentShare))
	for i := range sh.messages {
		ch := convs[i%len(convs)]
		ts, err := fake.Post(ch, "U0AAAAAAA", "message")
		must(t, err)
		if i%every == 0 {
			n := 1 + i/every%sh.maxReplies
			for range n {
				_, err := fake.Reply(ch, ts, "U0AAAAAAA", "reply")
				must(t, err)
			}
			threads = append(threads, n)
		}
		time.Sleep(time.Second)
	}
	return convs, threads
}

// populate reads the whole workspace into store with a fast poller: the state a
// daemon reaches once its first sync is done.
func populate(t *testing.T, fake *slackfake.Server, store rm.Store, convs []string) {
	fast := map[string]float64{}
	for _, m := range rm.Methods() {
		fast[m] = 600_000
	}
	src, err := slackapi.New(slackapi.Options{Token: fake.Token(), APIURL: "http://slack.fake/api/",
		HTTPClient: fake.Client(), Rates: fast})
	must(t, err)
	p := poller.New(store, src, poller.Config{Conversations: convs, Rates: fast, BulkWindow: 10_000 * time.Hour,
		Budget: poller.Budget{HistoryCalls: 100_000, RepliesCalls: 100_000, UsersInfoCalls: 10}})
	for range 3 {
		if _, err := p.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// measureShape generates sh, populates a store, and runs the default poller at
// profile's rates until every tracked message and thread has been re-read.
func measureShape(t *testing.T, sh rotationShape, profile string) rotationResult {
	fake, rates := profileFake(t, profile, nil)
	convs, threads := generate(t, fake, sh)
	store := openTestStore(t)
	populate(t, fake, store, convs)
	time.Sleep(100 * time.Hour) // older than the bulk window: only the rotation reads them

	page := 999
	if profile == rm.ProfileNonMarketplace {
		page = 15
	}
	perConv := make([]int, len(convs))
	for i := range sh.messages {
		perConv[i%len(convs)]++
	}
	res := rotationResult{calls: map[string]int{}, quota: map[string]float64{}}
	// The limit, exactly: Σ⌈messages ÷ page⌉ history calls over the conversations and
	// Σ⌈(replies + 1) ÷ page⌉ replies calls over the threads, both methods at once.
	var historyPages, pages int
	for _, n := range perConv {
		historyPages += (n + page - 1) / page
	}
	for _, n := range threads {
		pages += (n + 1 + page - 1) / page
	}
	res.limit = max(time.Duration(float64(historyPages)/rates[rm.MethodHistory]*float64(time.Minute)),
		time.Duration(float64(pages)/rates[rm.MethodReplies]*float64(time.Minute)))
	// The plain design: one exact read per message, one replies call per thread page,
	// all in series.
	res.serial = time.Duration(float64(sh.messages)/rates[rm.MethodHistory]*float64(time.Minute) +
		float64(pages)/rates[rm.MethodReplies]*float64(time.Minute))

	busy := newBusyClock()
	src, err := slackapi.New(slackapi.Options{Token: fake.Token(), APIURL: "http://slack.fake/api/",
		HTTPClient: fake.Client(), Rates: rates, OnCall: busy.onCall})
	must(t, err)
	start := time.Now()
	busy.start = start
	p := poller.New(store, src, poller.Config{Conversations: convs, Rates: rates,
		Budget: poller.Budget{HistoryCalls: 250, RepliesCalls: 250, UsersInfoCalls: 100, ReactionsCalls: 250}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	rotated := func(since time.Time, which string) {
		t.Helper()
		for {
			time.Sleep(10 * time.Second)
			oldest, err := OldestPolled(store)
			must(t, err)
			if !oldest.IsZero() && oldest.After(since) {
				return
			}
			if time.Since(since) > 30*24*time.Hour {
				cancel()
				<-done
				t.Fatalf("%s/%s: no %s rotation in 30 days", profile, sh.name, which)
			}
		}
	}
	rotated(start, "full")
	// The first rotation after a sync reads the store in the order the sync left it;
	// the second, in the poller's own order: the steady state, which is measured.
	first := time.Now()
	res.first = first.Sub(start)
	busy.reset(first)
	rotated(first, "second")
	start = first
	res.rotation = time.Since(start)
	cancel()
	must(t, <-done)
	res.calls, res.overlap = busy.result(start, time.Now())
	for m, n := range res.calls {
		res.quota[m] = float64(n) / (res.rotation.Minutes() * rates[m])
	}
	return res
}

// measureWatched tracks 200 messages scattered over a 12,000-message store (every
// 60th) and measures how long the poller takes to re-read all of them.
func measureWatched(t *testing.T, withReactions bool) time.Duration {
	var scopes []string
	if !withReactions {
		for _, s := range slackfake.DefaultScopes {
			if s != rm.ScopeReactionsRead {
				scopes = append(scopes, s)
			}
		}
	}
	fake, rates := profileFake(t, rm.ProfileNonMarketplace, scopes)
	sh := rotationShape{name: "watched", conversations: 10, messages: 12000, parentShare: 0.05, maxReplies: 3}
	convs, _ := generate(t, fake, sh)
	store := openTestStore(t)
	populate(t, fake, store, convs)
	var watched []rm.Ref
	err := store.View(func(tx rm.Tx) error {
		for _, ch := range convs {
			i := 0
			err := tx.Timeline(ch, "", "", func(m rm.Message) error {
				if i++; i%60 == 0 && len(watched) < 200 {
					watched = append(watched, rm.Ref{Channel: ch, TS: m.TS})
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	must(t, err)
	for _, r := range watched {
		must(t, rm.Track(store, r.Channel, r.TS, ""))
	}
	time.Sleep(100 * time.Hour)

	src, err := slackapi.New(slackapi.Options{Token: fake.Token(), APIURL: "http://slack.fake/api/",
		HTTPClient: fake.Client(), Rates: rates})
	must(t, err)
	start := time.Now()
	p := poller.New(store, src, poller.Config{Conversations: convs, Rates: rates,
		Budget: poller.Budget{HistoryCalls: 250, RepliesCalls: 250, UsersInfoCalls: 100, ReactionsCalls: 250}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for {
		time.Sleep(10 * time.Second)
		all := true
		err := store.View(func(tx rm.Tx) error {
			for _, r := range watched {
				m, _, err := tx.Message(r.Channel, r.TS)
				if err != nil {
					return err
				}
				if m.LastPolledAt == nil || !m.LastPolledAt.After(start) {
					all = false
					return nil
				}
			}
			return nil
		})
		must(t, err)
		if all {
			break
		}
		if time.Since(start) > 30*24*time.Hour {
			cancel()
			<-done
			t.Fatal("200 watched messages not re-read in 30 days")
		}
	}
	took := time.Since(start)
	cancel()
	must(t, <-done)
	return took
}

// busyClock counts the calls per method and when each method was calling, to tell
// how much of the rotation both history and replies were in use at once.
type busyClock struct {
	mu    sync.Mutex
	start time.Time
	calls map[string]int
	// minutes holds, per method, the minutes since start in which it made a call.
	minutes map[string]map[int]bool
}

func newBusyClock() *busyClock {
	return &busyClock{calls: map[string]int{}, minutes: map[string]map[int]bool{}}
}

// reset starts counting again from start.
func (c *busyClock) reset(start time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.start, c.calls, c.minutes = start, map[string]int{}, map[string]map[int]bool{}
}

func (c *busyClock) onCall(method, outcome string, _ time.Duration) {
	if outcome != "ok" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[method]++
	if c.minutes[method] == nil {
		c.minutes[method] = map[int]bool{}
	}
	if since := time.Since(c.start); since >= 0 {
		c.minutes[method][int(since/time.Minute)] = true
	}
}

// result returns the calls per method and the share of the minutes from start to end
// in which both history and replies made a call.
func (c *busyClock) result(start, end time.Time) (map[string]int, float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := int((end.Sub(start) + time.Minute - 1) / time.Minute)
	both := 0
	for m := range c.minutes[rm.MethodHistory] {
		if c.minutes[rm.MethodReplies][m] {
			both++
		}
	}
	if total == 0 {
		return c.calls, 0
	}
	return maps.Clone(c.calls), float64(both) / float64(total)
}
