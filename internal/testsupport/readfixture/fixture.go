// Package readfixture builds, for tests of the read side (status, show, the HTTP
// API), a real bbolt read model filled by a real tick of the Poller against the fake
// Slack (internal/slackfake through internal/slackapi). Test code only.
package readfixture

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// T0 is the fake workspace's clock: every ts the fake hands out is at or after it.
var T0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// Conversations of the workspace.
const (
	General  = "C0GENERAL" // public, the bot is a member: status ok
	Outside  = "C0OUTSIDE" // public, the bot is not a member: not_in_channel
	Secret   = "G0SECRET0" // private, the token lacks groups:history: missing_scope
	Record   = "ticket-42" // record key tracked on Parent
	Interval = time.Minute // tick.interval the fixture's poller uses
)

// Users of the workspace: Avery has a display name, Bee only a real name.
const (
	Avery = "U0AVERY00"
	Bee   = "U0BEE0000"
)

// Private conversations (Options.Private): a DM with Avery and a group DM, which an
// agent must not see unless it is allowed to (the MCP server's exposure policy).
const (
	DM        = "D0DIRECT0"
	GroupDM   = "G0GROUPDM"
	DMRecord  = "dm-secret" // record key tracked on DMParent
	DMKeyword = "confidential"
)

// NeverPolled is a ts tracked in General after the tick, so never read.
const NeverPolled rm.TS = "1700000000.000100"

// Options are optional hooks wired into the Slack client and the poller.
type Options struct {
	OnCall func(method, outcome string, waited time.Duration)
	OnTick func(rm.TickSummary)
	// Private adds DM and GroupDM to the workspace and the configured list: in DM
	// a thread (DMParent, DMReply) whose parent carries DMRecord, in GroupDM one
	// message (GroupDMMessage); every text holds DMKeyword.
	Private bool
}

// Fixture is the polled read model and the handles tests need.
type Fixture struct {
	Store  *boltstore.Store
	Path   string
	Poller *poller.Poller
	Fake   *slackfake.Server
	// Configured is the poller's conversation list.
	Configured []string
	// Summary is the tick's summary.
	Summary rm.TickSummary
	// In General: Parent (by Avery, edited, reactions by Avery and Bee, record
	// Record) with one Reply (by Bee, edited); Plain (by Bee); Own (the token's bot).
	Parent, Reply, Plain, Own rm.TS
	// With Options.Private: the DM's thread and the group DM's message.
	DMParent, DMReply, GroupDMMessage rm.TS
	// Clock is the time the fixture reads as now; tests may move it.
	Clock *Clock
}

// Clock is a settable clock safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// New builds the workspace, runs one tick into a new store in t.TempDir, tracks
// NeverPolled and attaches Record to Parent. The store is checked (bbolt's check) and
// closed when the test ends (storetest.OpenAt).
func New(t testing.TB, opts Options) *Fixture {
	t.Helper()
	clock := &Clock{t: T0}
	fake := slackfake.New(slackfake.Options{Now: clock.Now})
	f := &Fixture{Fake: fake, Clock: clock, Configured: []string{General, Outside, Secret}}
	must(t, fake.AddUser(slackfake.User{ID: Avery, DisplayName: "avery", RealName: "Avery Example"}))
	must(t, fake.AddUser(slackfake.User{ID: Bee, RealName: "Bee Example"}))
	must(t, fake.AddConversation(slackfake.PublicChannel(General, "general")))
	out := slackfake.PublicChannel(Outside, "outside")
	out.BotMember = false
	must(t, fake.AddConversation(out))
	must(t, fake.AddConversation(slackfake.PrivateChannel(Secret, "secret")))
	fake.RevokeScope("groups:history")

	f.Parent = mustTS(t)(fake.Post(General, Avery, "Deploy finished"))
	f.Reply = mustTS(t)(fake.Reply(General, f.Parent, Bee, "thanks"))
	must(t, fake.Edit(General, f.Reply, "thanks!"))
	must(t, fake.Edit(General, f.Parent, "Deploy finished (v2)"))
	must(t, fake.React(General, f.Parent, Avery, "white_check_mark"))
	must(t, fake.React(General, f.Parent, Bee, "white_check_mark"))
	f.Plain = mustTS(t)(fake.Post(General, Bee, "lunch?"))
	f.Own = mustTS(t)(fake.PostAsAppBot(General, fake.BotID(), "I am the bot"))
	must(t, fake.React(General, f.Own, fake.BotUserID(), "eyes"))
	if opts.Private {
		must(t, fake.AddConversation(slackfake.DirectMessage(DM, Avery)))
		must(t, fake.AddConversation(slackfake.GroupDM(GroupDM, "mpdm-avery--bee-1")))
		f.DMParent = mustTS(t)(fake.Post(DM, Avery, "the "+DMKeyword+" salary numbers"))
		f.DMReply = mustTS(t)(fake.Reply(DM, f.DMParent, Avery, DMKeyword+": do not forward"))
		f.GroupDMMessage = mustTS(t)(fake.Post(GroupDM, Bee, "a "+DMKeyword+" plan for the deploy"))
		f.Configured = append(f.Configured, DM, GroupDM)
	}
	clock.Advance(time.Second)

	f.Path = filepath.Join(t.TempDir(), "slackpoll.db")
	store := storetest.OpenAt(t, f.Path, boltstore.Options{NoSync: true})
	f.Store = store

	rates := map[string]float64{}
	for _, m := range slackapi.Methods {
		rates[m] = 600_000 // 100 µs apart: pacing is not under test here
	}
	src, err := slackapi.New(slackapi.Options{
		Token: fake.Token(), APIURL: "http://slack.fake/api/", HTTPClient: fake.Client(),
		Rates: rates, OnCall: opts.OnCall,
	})
	must(t, err)
	p := poller.New(store, src, poller.Config{
		Conversations: f.Configured,
		Rates:         rates,
		Budget:        poller.Budget{HistoryCalls: 33, RepliesCalls: 12, UsersInfoCalls: 20, ReactionsCalls: 25},
		Interval:      Interval,
		Now:           clock.Now,
		OnTick:        opts.OnTick,
	})
	f.Poller = p
	f.Summary, err = p.Tick(context.Background())
	must(t, err)
	must(t, rm.Track(store, General, NeverPolled, ""))
	must(t, rm.Track(store, General, f.Parent, Record))
	if opts.Private {
		must(t, rm.Track(store, DM, f.DMParent, DMRecord))
	}
	return f
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustTS(t testing.TB) func(rm.TS, error) rm.TS {
	return func(ts rm.TS, err error) rm.TS {
		t.Helper()
		must(t, err)
		return ts
	}
}
