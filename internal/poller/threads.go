package poller

import (
	"context"
	"fmt"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// repliesStream is the conversations.replies stream: a thread read the last tick's end
// cut between pages first, then threads whose latest_reply a read saw move (known
// changes), then never-read tracked messages history did not
// return (locate), then the thread rotation — watched threads while they are below
// their share, else the least recently read thread — until the cap or the soft
// deadline. With nothing due it waits for the other streams to queue more, and stops
// when none is left that could.
type repliesStream struct {
	t *tick
	g gate
	// triedThreads holds the threads it picked this tick, read or not.
	triedThreads map[rm.Ref]bool
	// threadReads counts the rotation's thread reads this tick, watchedReads the
	// watched among them, threadCalls the calls of every thread read: its
	// throughput, for the staleness estimates.
	threadReads, watchedReads, threadCalls int
}

func newRepliesStream(t *tick, cap int) *repliesStream {
	return &repliesStream{
		t: t, g: gate{method: rm.MethodReplies, capName: "replies_calls", left: cap},
		triedThreads: map[rm.Ref]bool{},
	}
}

func (rs *repliesStream) gate() *gate   { return &rs.g }
func (rs *repliesStream) enabled() bool { return true }

func (rs *repliesStream) tally(s *rotationSample) {
	s.threads += rs.threadReads
	s.watched += rs.watchedReads
	s.threadCalls += rs.threadCalls
}

func (rs *repliesStream) run() error {
	for {
		job, ok, err := rs.next()
		if err != nil {
			return err
		}
		if !ok {
			if !rs.t.work.idle.wait(rs.t.work.threadsOrLocateLocked) {
				return nil
			}
			continue
		}
		if err := job(); err != nil {
			return err
		}
	}
}

// next picks the stream's next job: a queued thread, a message to locate, a watched
// thread owed its share, the rotation's stalest thread.
func (rs *repliesStream) next() (func() error, bool, error) {
	t := rs.t
	if cut := t.p.mem.threadCut; cut != nil {
		t.p.mem.threadCut = nil
		if t.convs.has(cut.c.Channel) {
			rs.triedThreads[cut.c.Ref] = true
			return func() error { return rs.counted(cut.rotation, cut.c.Ref, rs.readThread(*cut)) }, true, nil
		}
		if cut.c.first != nil {
			// Its conversation is not read this tick: the read begins again once it
			// is, and the parent waits with the threads carried.
			t.work.requeueThread(cut.c)
		}
	}
	if c, ok := t.work.nextThread(t.convs.has); ok {
		rs.triedThreads[c.Ref] = true
		return func() error { return rs.readThread(threadCut{c: c}) }, true, nil
	}
	if ref, ok := t.work.nextLocate(t.convs.has); ok {
		return func() error { return rs.locate(ref) }, true, nil
	}
	if rs.g.owesWatched(t.p.cfg.Tracking.WatchedShare) {
		m, ok, err := t.stalestOf(t.watchedThreads, rs.due, threadOlder)
		if err != nil {
			return nil, false, err
		}
		if ok {
			rs.g.watched++
			return rs.rotationJob(m), true, nil
		}
	}
	m, ok, err := t.stalestInTail(rs.due, func(m *rm.Message) *time.Time { return m.ThreadSyncedAt })
	if err != nil || !ok {
		return nil, false, err
	}
	return rs.rotationJob(m), true, nil
}

// rotationJob reads m's thread for the rotation.
func (rs *repliesStream) rotationJob(m rm.Message) func() error {
	ref := rm.Ref{Channel: m.Channel, TS: m.TS}
	rs.triedThreads[ref] = true
	return func() error {
		c := threadCandidate{Ref: ref, latestReply: m.LatestReply}
		return rs.counted(true, ref, rs.readThread(threadCut{c: c, rotation: true}))
	}
}

// counted counts a rotation's thread read of ref that ended this tick (err nil), and
// returns err.
func (rs *repliesStream) counted(rotation bool, ref rm.Ref, err error) error {
	if err == nil && rotation {
		rs.threadReads++
		if rs.t.watchedThreads[ref] {
			rs.watchedReads++
		}
	}
	return err
}

// due reports whether m's thread is due for a rotation read this tick: a tracked
// parent whose thread exists, of an eligible conversation, whose thread was not read
// since the tick started (a read time in the future counts as due), not picked or
// queued yet.
func (rs *repliesStream) due(m *rm.Message) bool {
	if !m.IsParent() || m.ThreadGone || !m.IsTracked() || m.LastPolledAt == nil {
		return false
	}
	t := rs.t
	ref := rm.Ref{Channel: m.Channel, TS: m.TS}
	if !t.convs.has(m.Channel) || rs.triedThreads[ref] || t.work.isQueued(ref) {
		return false
	}
	return m.ThreadSyncedAt == nil || m.ThreadSyncedAt.Before(t.start) || m.ThreadSyncedAt.After(t.now())
}

// threadOlder reports whether a's thread was read before b's (never first).
func threadOlder(a, b *rm.Message) bool {
	switch {
	case a.ThreadSyncedAt == nil:
		return b.ThreadSyncedAt != nil
	case b.ThreadSyncedAt == nil:
		return false
	}
	return a.ThreadSyncedAt.Before(*b.ThreadSyncedAt)
}

// threadCut is a thread read: the candidate, and for a read an earlier tick's end cut
// between pages (memory.threadCut), the pages read, the cursor to go on from and
// when the read began. rotation marks a read of the rotation (counted when it ends).
type threadCut struct {
	c        threadCandidate
	rotation bool
	r        *rm.ThreadRead // nil: the read begins
	cursor   string
	started  time.Time
}

// readThread fetches the whole thread of parent (all pages; for a read that was cut,
// the pages from its cursor) and, only if every page was read, replaces its reply set
// and parent in one transaction with the watermark written last. latestReply is the
// parent's latest_reply as last read, used as the watermark when no page carried the
// parent. A read the tick's end (cap, soft deadline) cuts between pages is kept in
// memory.threadCut: the next tick goes on from its cursor. It returns nil when the
// thread was cut short or skipped (the reason is recorded), an error only to end the
// tick (errStop when the stream stopped).
func (rs *repliesStream) readThread(cut threadCut) error {
	t := rs.t
	c := cut.c
	parent, latestReply := c.Ref, c.latestReply
	r, cursor, started := cut.r, cut.cursor, cut.started
	resumed := r != nil
	if !resumed {
		r, started = rm.NewThreadRead(), t.now()
	}
	for pages := 0; ; pages++ {
		var page rm.Page
		what := fmt.Sprintf("%s/%s thread", parent.Channel, parent.TS)
		o, err := t.do(&rs.g, call{ch: parent.Channel, item: true, what: what, note: " (nothing written)"}, func(ctx context.Context) (err error) {
			page, err = t.p.src.Replies(ctx, rm.RepliesRequest{Channel: parent.Channel, TS: parent.TS, Limit: rm.RepliesPageLimit, Cursor: cursor})
			return err
		})
		if o != done {
			if o == stopped && pages == 0 && !resumed && c.first != nil {
				// Not begun: it stays deferred, first in the next tick's queue.
				t.work.requeueThread(c)
				return errStop
			}
			if o == stopped && (pages > 0 || resumed) {
				// Cut between pages by the tick's end: the next tick goes on from
				// here. Begun again, it would spend a call of each tick on pages
				// read before (a tick holds 4 calls at 1 request a minute), and a
				// thread of more pages than a tick's calls would never be written.
				t.p.mem.threadCut = &threadCut{c: c, rotation: cut.rotation, r: r, cursor: cursor, started: started}
				return errStop
			}
			// Cut short, it writes nothing of the thread; a failure that may pass
			// (stopped, fatal, skipped: transient) has the deferred parent wait for
			// the next thread read.
			if kerr := rs.keepFirst(c, started, o != gone && o != failed); kerr != nil {
				return kerr
			}
			if o == gone {
				return t.p.w.ThreadGone(parent, t.now())
			}
			return stepErr(o, err)
		}
		rs.threadCalls++
		if pages == 0 && !resumed {
			// The thread is read as of its first page: later pages come later.
			started = t.readAt(started, &page)
		}
		t.vetPage(parent.Channel, &page, rm.PageThread, parent.TS)
		for _, s := range page.Skipped {
			if s.TS == "" || s.TS == parent.TS {
				t.report.skip("%s/%s thread: undecodable message: %s (nothing written)", parent.Channel, parent.TS, s.Err)
				return rs.keepFirst(c, started, true)
			}
			r.Keep(s.TS)
		}
		for _, m := range page.Messages {
			r.Add(parent.TS, m)
		}
		if page.NextCursor == "" {
			break
		}
		if page.NextCursor == cursor {
			t.report.skip("%s/%s thread: conversations.replies returned the cursor it was given (nothing written)", parent.Channel, parent.TS)
			return rs.keepFirst(c, started, true)
		}
		cursor = page.NextCursor
	}
	if r.Kept() > 0 {
		t.report.skip("%s/%s thread: %d undecodable repl(ies) kept as stored", parent.Channel, parent.TS, r.Kept())
	}
	if r.Parent == nil && c.first != nil {
		r.Parent = c.first // no page carried the parent: the read that deferred it did
	}
	return rs.writeThread(parent, latestReply, r, started)
}

// keepFirst handles a parent a read deferred to its thread read when that thread read
// began but could not be made whole. A failure that may pass (retry) carries the
// candidate to the next tick, up to carryTries times, so that the parent is stored
// with its thread; after that, or for a failure that will not pass, the parent is
// stored as read: its own read is not lost, and its watermark, still empty, has the
// thread read again later.
func (rs *repliesStream) keepFirst(c threadCandidate, started time.Time, retry bool) error {
	t := rs.t
	if c.first == nil {
		return nil
	}
	if retry && c.tries < carryTries {
		c.tries++
		t.p.mem.carried = append(t.p.mem.carried, c)
		return nil
	}
	_, err := t.p.w.ApplyReads([]rm.Message{*c.first}, t.p.mem.identity, started)
	return err
}

// carryTries is how many ticks a deferred parent waits for its thread read to succeed
// before it is stored alone.
const carryTries = 3

// writeThread replaces a fully read thread through the writer, then notes the users
// its messages name.
func (rs *repliesStream) writeThread(parent rm.Ref, latestReply rm.TS, r *rm.ThreadRead, started time.Time) error {
	t := rs.t
	written, err := t.p.w.WriteThread(parent, latestReply, r, t.p.mem.identity, started)
	if err != nil {
		return err
	}
	t.work.noteUsers(written)
	t.report.add(func(s *rm.TickSummary) { s.ThreadsWritten++ })
	return nil
}
