package poller

import (
	"math"
	"slices"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// rotationWindow is how many recent ticks the throughput is averaged over.
const rotationWindow = 16

// rotationSample is one tick's throughput: tracked messages re-read, watched ones, and
// threads re-read, over the time since the previous tick ended (the tick itself plus
// the wait before it, pacing included).
type rotationSample struct {
	reads, watched, threads int
	rangeCalls, threadCalls int
	span                    time.Duration
	// lag is how long the least recently read tracked message (or thread) had gone
	// unread when the tick ended: a full rotation takes at least that long.
	lag time.Duration
}

// estimateStaleness fills the tick's Staleness. A single tick is a poor estimate at 1
// request per minute: the calls before the soft deadline and the wait for the next
// vary from tick to tick; so the rotation periods are the class sizes over the
// throughput of the last ticks, including the pauses between them.
func (t *tick) estimateStaleness() {
	st := &t.sum.Staleness
	now := t.sum.Finished
	var counts rm.ChannelCounts
	var parents, replies int
	var perConv []int
	st.HeadAges = map[string]time.Duration{}
	_ = t.p.store.View(func(tx rm.Tx) error {
		return tx.Conversations(func(c rm.Conversation) error {
			n, err := tx.Counts(c.ID)
			counts.Messages += n.Messages
			counts.Tracked += n.Tracked
			perConv = append(perConv, n.Tracked)
			parents += n.Threads
			if t.eligible[c.ID] && c.HeadReadAt != nil {
				st.HeadAges[c.ID] = max(now.Sub(*c.HeadReadAt), 0).Round(time.Second)
			}
			return err
		})
	})
	replies = max(counts.Messages-counts.Tracked, 0)
	st.Tracked, st.Threads, st.Watched = counts.Tracked, parents, len(t.watched)
	st.PageCap = t.p.pageCap

	since := t.sum.Started
	if !t.p.lastFinished.IsZero() {
		since = t.p.lastFinished
	}
	t.p.lastFinished = now
	span := max(now.Sub(since), t.p.cfg.Interval)
	t.p.samples = append(t.p.samples, rotationSample{reads: t.reads, watched: t.watchedReads, threads: t.threadReads,
		rangeCalls: t.rangeCalls, threadCalls: t.threadCalls, span: span, lag: t.lag(now)})
	if len(t.p.samples) > rotationWindow {
		t.p.samples = t.p.samples[1:]
	}
	var total rotationSample
	for _, s := range t.p.samples {
		total.reads += s.reads
		total.watched += s.watched
		total.threads += s.threads
		total.rangeCalls += s.rangeCalls
		total.threadCalls += s.threadCalls
		total.span += s.span
		total.lag = max(total.lag, s.lag)
	}
	period := func(n, reads int) time.Duration {
		if n == 0 || reads == 0 {
			return 0
		}
		return time.Duration(float64(total.span) * float64(n) / float64(reads)).Round(time.Second)
	}
	// With ranges a rotation costs calls, not reads: the pages the store needs at the
	// rate the rotation got its method's calls (what head reads and thread syncs
	// leave it); the read throughput is the other bound. A class with members and
	// neither figure yet leaves the period unknown (0).
	page := t.p.pageCap
	if page <= 0 {
		page = rm.HistoryPageLimit
	}
	var pages int
	for _, n := range perConv {
		pages += (n + page - 1) / page
	}
	messages := max(period(st.Tracked, total.reads), period(pages, total.rangeCalls))
	threads := max(period(st.Threads, total.threads), period(parents+replies/page, total.threadCalls))
	st.RotationPeriod = max(messages, threads)
	if (st.Tracked > 0 && messages == 0) || (st.Threads > 0 && threads == 0) {
		st.RotationPeriod = 0
	}
	// Throughput alone is optimistic with ranges: a dense conversation re-reads a
	// page of messages a call, a scattered message costs a call of its own. What the
	// rotation lags behind now is what a change may wait.
	if st.RotationPeriod > 0 {
		st.RotationPeriod = max(st.RotationPeriod, total.lag.Round(time.Second))
	}
	st.WatchedRotation = period(st.Watched, total.watched)
	st.PhysicalLimit = PhysicalLimit(t.p.cfg.Rates, t.p.pageCap, perConv, parents, replies)
}

// PhysicalLimit is the least time in which rates (requests per minute per method)
// allow re-reading every tracked message and thread at page messages a page (0: not
// known, the largest page is assumed), the two methods running at once:
// Σ⌈tracked ÷ page⌉ conversations.history calls over the conversations (a range reads
// one conversation; perConv holds each one's tracked messages), and
// conversations.replies calls for parents threads holding replies replies in all.
// Those are Σ⌈(replies + 1) ÷ page⌉ over the threads, which the store does not count
// per thread: the bound used, max(parents, ⌈(parents + replies) ÷ page⌉), is never
// above it, so a rotation is never reported closer to the limit than it is.
func PhysicalLimit(rates map[string]float64, page int, perConv []int, parents, replies int) time.Duration {
	if page <= 0 {
		page = rm.HistoryPageLimit
	}
	calls := func(n int, method string) time.Duration {
		r := rates[method]
		if r <= 0 || n == 0 {
			return 0
		}
		return time.Duration(float64(n) / r * float64(time.Minute))
	}
	var pages int
	for _, n := range perConv {
		pages += int(math.Ceil(float64(n) / float64(page)))
	}
	history := calls(pages, rm.MethodHistory)
	repl := calls(max(parents, (parents+replies+page-1)/page), rm.MethodReplies)
	return max(history, repl).Round(time.Second)
}

func sortRefs(refs []rm.Ref) {
	slices.SortFunc(refs, func(a, b rm.Ref) int {
		if a.Channel != b.Channel {
			if a.Channel < b.Channel {
				return -1
			}
			return 1
		}
		return a.TS.Compare(b.TS)
	})
}

// lagScan bounds the never-read entries lag counts past; beyond it the lag is what
// they have waited, which is all it reports of them anyway.
const lagScan = 10000

// lag returns how long the rotation lags behind at now: the age of the oldest tail
// entry of an eligible conversation that is not backing off (its rotation time is the
// older of its own read and its thread's), or, while never-read entries wait, how long
// they have been waiting since the first tick that found some.
func (t *tick) lag(now time.Time) time.Duration {
	var oldest *time.Time
	never := 0
	_ = t.p.store.View(func(tx rm.Tx) error {
		_, err := tx.TailOldest(1, func(e rm.TailEntry) bool {
			if !t.eligible[e.Channel] || t.p.tailBackoff[e.Ref].until > t.p.tickNo || t.p.unlocated[e.Ref] {
				return never < lagScan
			}
			if e.RotatedAt == nil {
				never++
				return never < lagScan
			}
			oldest = e.RotatedAt
			return false
		})
		return err
	})
	var lag time.Duration
	if oldest != nil && now.After(*oldest) {
		lag = now.Sub(*oldest)
	}
	if never == 0 {
		t.p.neverSince = time.Time{}
		return lag
	}
	if t.p.neverSince.IsZero() || t.p.neverSince.After(now) {
		t.p.neverSince = t.sum.Started
	}
	return max(lag, now.Sub(t.p.neverSince))
}
