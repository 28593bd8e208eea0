package poller

import (
	"math"
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

// estimator is what the staleness estimates remember: the throughput of the last
// ticks. A single tick is a poor estimate at 1 request per minute: the calls before
// the soft deadline and the wait for the next vary from tick to tick; so the rotation
// periods are the class sizes over the throughput of the last ticks, including the
// pauses between them.
type estimator struct {
	samples      []rotationSample
	lastFinished time.Time
	// neverSince is the start of the first tick of the current run of ticks that
	// ended with never-read tracked messages waiting; zero when none waits.
	neverSince time.Time
}

// estimate fills the finished tick's Staleness, read being what its streams read.
func (e *estimator) estimate(t *tick, read rotationSample) {
	sum := &t.report.sum
	st := &sum.Staleness
	now := sum.Finished
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
			if t.convs.has(c.ID) && c.HeadReadAt != nil {
				st.HeadAges[c.ID] = max(now.Sub(*c.HeadReadAt), 0).Round(time.Second)
			}
			return err
		})
	})
	replies = max(counts.Messages-counts.Tracked, 0)
	st.Tracked, st.Threads, st.Watched = counts.Tracked, parents, len(t.watched)
	st.PageCap = t.p.mem.history.pageCap

	since := sum.Started
	if !e.lastFinished.IsZero() {
		since = e.lastFinished
	}
	e.lastFinished = now
	read.span = max(now.Sub(since), t.p.cfg.Interval)
	read.lag = e.lag(t, now)
	e.samples = append(e.samples, read)
	if len(e.samples) > rotationWindow {
		e.samples = e.samples[1:]
	}
	var total rotationSample
	for _, s := range e.samples {
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
	page := t.p.mem.history.pageCap
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
	st.PhysicalLimit = PhysicalLimit(t.p.cfg.Rates, t.p.mem.history.pageCap, perConv, parents, replies)
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

// lagScan bounds the never-read entries lag counts past; beyond it the lag is what
// they have waited, which is all it reports of them anyway.
const lagScan = 10000

// lag returns how long the rotation lags behind at now: the age of the oldest tail
// entry of an eligible conversation that is not backing off (its rotation time is the
// older of its own read and its thread's), or, while never-read entries wait, how long
// they have been waiting since the first tick that found some.
func (e *estimator) lag(t *tick, now time.Time) time.Duration {
	mem := &t.p.mem
	var oldest *time.Time
	never := 0
	_ = t.p.store.View(func(tx rm.Tx) error {
		_, err := tx.TailOldest(1, func(en rm.TailEntry) bool {
			if !t.convs.has(en.Channel) || mem.backoff.waiting(en.Ref, mem.tickNo) || t.work.awaitingLocate(en.Ref) {
				return never < lagScan
			}
			if en.RotatedAt == nil {
				never++
				return never < lagScan
			}
			oldest = en.RotatedAt
			return false
		})
		return err
	})
	var lag time.Duration
	if oldest != nil && now.After(*oldest) {
		lag = now.Sub(*oldest)
	}
	if never == 0 {
		e.neverSince = time.Time{}
		return lag
	}
	if e.neverSince.IsZero() || e.neverSince.After(now) {
		e.neverSince = t.report.sum.Started
	}
	return max(lag, now.Sub(e.neverSince))
}
