package poller

import (
	"sync"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// memory is what the scheduler remembers from one tick to the next; everything else a
// tick knows, it reads from the store or learns from Slack. It lives in the process:
// a restart forgets it, which costs a read or a call again, never data.
//
// Between ticks nothing runs. During a tick each part has one owner, named below;
// the parts two streams share are reached through the tick's workQueue (pending
// users, messages waiting for locate) or lock themselves (backoffs).
type memory struct {
	// tickNo counts this process's ticks (the tick).
	tickNo int
	// identity is auth.test's answer, asked once per process: the bot's IDs classify
	// own posts, its scopes drive discovery and reactions.get (setup).
	identity *rm.Identity
	// lastDiscover is when users.conversations last listed the bot's conversations
	// (setup).
	lastDiscover time.Time

	// history is the conversations.history stream's (historyStream).
	history historyMemory
	// carried are the thread syncs a tick queued but could not make (cap, soft
	// deadline): the next tick starts with them rather than waiting for the parent's
	// next read, a rotation away (the replies stream, and the tick's end). Lost on
	// restart, which costs that wait once.
	carried []threadCandidate
	// threadCut is the thread read a tick's end (cap, soft deadline) cut between
	// pages: the next tick goes on from its cursor (the replies stream). Lost on
	// restart, which costs its pages once more.
	threadCut *threadCut
	// noReactions holds watched messages reactions.get answered message_not_found
	// for: only history can tell a deleted message from a tombstone, so they rotate
	// there (the reactions stream). Lost on restart, which costs one reactions.get
	// call each.
	noReactions map[rm.Ref]bool

	// pendingUsers are user IDs seen in messages written but not (freshly) resolved:
	// every stream adds to them, the users stream resolves them (workQueue).
	pendingUsers map[string]struct{}
	// unlocated are never-read tracked messages a complete history read missed and
	// that wait for a conversations.replies call to find their thread (locate): the
	// history read is not repeated (workQueue). Lost on restart, which costs one read
	// again.
	unlocated map[rm.Ref]bool
	// backoff holds the tail entries whose last reads advanced nothing (the history
	// stream, and locate).
	backoff *backoffs

	// estimates are the throughput of the last ticks, for the staleness the tick
	// reports (the tick's end).
	estimates estimator
	// firstSync is what the first sync's progress log has said (the Poller, after
	// each tick).
	firstSync firstSyncMemory
}

func newMemory() memory {
	return memory{
		history:      historyMemory{arrivals: map[string]float64{}, rangeResume: map[string]rangeCut{}},
		noReactions:  map[rm.Ref]bool{},
		pendingUsers: map[string]struct{}{},
		unlocated:    map[rm.Ref]bool{},
		backoff:      &backoffs{runs: map[rm.Ref]backoff{}},
	}
}

// historyMemory is what the history stream remembers across ticks.
type historyMemory struct {
	// pageCap is the most messages a history page was seen to hold when the server
	// cut it short of the limit asked (15 for non-Marketplace apps); 0 while unknown.
	pageCap int
	// arrivals is, per conversation, the rate of new messages its head reads found
	// (messages per second, smoothed): what a head read is expected to bring.
	arrivals map[string]float64
	// rangeResume holds, per conversation, the tail range whose read a tick's end cut
	// between pages, and the cursor to go on from (see tailRanges.read). Lost on
	// restart, which costs that range's first pages once more.
	rangeResume map[string]rangeCut
}

// firstSyncMemory is what the first sync's progress log remembers.
type firstSyncMemory struct {
	// since is when this process saw the first sync under way; it logs its progress
	// (logged) until done.
	since        time.Time
	logged, done bool
	// threads is the threads never read at the last tick, and stalled how many ticks
	// in a row that did not go down once every conversation was read (threads Slack
	// will not give: thread_not_found, …).
	threads, stalled int
}

// rangeCut is a tail range read up to cursor: the request to go on with, and the
// last_polled_at of the range's due messages before the read began (the pages read
// advanced some of them: compared with times taken when it goes on, they would look
// stuck and back off).
type rangeCut struct {
	oldest, latest rm.TS
	limit          int
	cursor         string
	before         map[rm.Ref]*time.Time
}

// backoffs are the tail entries whose last reads advanced nothing (undecodable,
// failing): each is skipped for 2, 4, … up to 64 ticks, so that a message Slack keeps
// sending broken cannot take the tail's calls on every tick. Lost on restart, which
// costs one read again. Safe for concurrent use.
type backoffs struct {
	mu   sync.Mutex
	runs map[rm.Ref]backoff
}

// backoff is a tail entry's run of reads that advanced nothing: fails of them, and
// the tick it waits for.
type backoff struct {
	fails, until int
}

// waiting reports whether ref is backing off at tick tickNo.
func (b *backoffs) waiting(ref rm.Ref, tickNo int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs[ref].until > tickNo
}

// lengthen adds a read that advanced nothing to ref's run, at tick tickNo: it is
// skipped for 2, 4, … up to 64 ticks.
func (b *backoffs) lengthen(ref rm.Ref, tickNo int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.runs[ref]
	r.fails++
	r.until = tickNo + 1<<min(r.fails, 6)
	b.runs[ref] = r
}

// end ends ref's run: a read advanced it.
func (b *backoffs) end(ref rm.Ref) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.runs, ref)
}

// at returns the entries backing off at tick tickNo, sorted.
func (b *backoffs) at(tickNo int) []rm.Ref {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []rm.Ref
	for r, run := range b.runs {
		if run.until > tickNo {
			out = append(out, r)
		}
	}
	sortRefs(out)
	return out
}
