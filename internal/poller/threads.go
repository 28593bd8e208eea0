package poller

import (
	"errors"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// runReplies is the conversations.replies stream: threads whose latest_reply a read saw
// move (known changes) first, then never-read tracked messages history did not return
// (locate), then the thread rotation — watched threads while they are below their
// share, else the least recently read thread — until the cap or the soft deadline.
// With nothing due it waits for the other streams to queue more, and stops when none
// is left that could.
func (t *tick) runReplies() error {
	for {
		job, ok, err := t.nextReplies()
		if err != nil {
			return err
		}
		if !ok {
			if !t.waitForWork(func() bool { return len(t.threadQueue) > 0 || len(t.locateQueue) > 0 }) {
				return nil
			}
			continue
		}
		if err := job(); err != nil {
			if errors.Is(err, errStreamStop) {
				return nil
			}
			if ends(err) {
				return err
			}
		}
	}
}

// nextReplies picks the replies stream's next job.
func (t *tick) nextReplies() (func() error, bool, error) {
	t.mu.Lock()
	for len(t.threadQueue) > 0 {
		c := t.threadQueue[0]
		t.threadQueue = t.threadQueue[1:]
		if !t.eligible[c.Channel] {
			continue
		}
		t.triedThreads[c.Ref] = true
		t.mu.Unlock()
		return func() error { return t.readThread(c) }, true, nil
	}
	for len(t.locateQueue) > 0 {
		ref := t.locateQueue[0]
		t.locateQueue = t.locateQueue[1:]
		if !t.eligible[ref.Channel] {
			continue
		}
		t.mu.Unlock()
		return func() error { return t.locate(ref) }, true, nil
	}
	t.mu.Unlock()
	if t.owesWatched(t.replies) {
		m, ok, err := t.watchedThread()
		if err != nil {
			return nil, false, err
		}
		if ok {
			t.spendWatched(t.replies)
			return t.threadJob(m), true, nil
		}
	}
	m, ok, err := t.rotationThread()
	if err != nil || !ok {
		return nil, false, err
	}
	return t.threadJob(m), true, nil
}

func (t *tick) threadJob(m rm.Message) func() error {
	t.mu.Lock()
	t.triedThreads[rm.Ref{Channel: m.Channel, TS: m.TS}] = true
	t.mu.Unlock()
	return func() error {
		err := t.readThread(threadCandidate{Ref: rm.Ref{Channel: m.Channel, TS: m.TS}, latestReply: m.LatestReply})
		if err == nil {
			t.mu.Lock()
			t.threadReads++
			if t.watchedThreads[rm.Ref{Channel: m.Channel, TS: m.TS}] {
				t.watchedReads++
			}
			t.mu.Unlock()
		}
		return err
	}
}

// threadDue reports whether m's thread is due for a rotation read this tick: a tracked
// parent whose thread exists, of an eligible conversation, whose thread was not read
// since the tick started (a read time in the future counts as due), not picked yet.
func (t *tick) threadDue(m *rm.Message) bool {
	if !m.IsParent() || m.ThreadGone || !m.IsTracked() || m.LastPolledAt == nil {
		return false
	}
	ref := rm.Ref{Channel: m.Channel, TS: m.TS}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.eligible[m.Channel] || t.triedThreads[ref] || t.queued[ref] {
		return false
	}
	return m.ThreadSyncedAt == nil || m.ThreadSyncedAt.Before(t.start) || m.ThreadSyncedAt.After(t.now())
}

// rotationThread returns the tracked parent whose thread was read least recently and
// is due.
func (t *tick) rotationThread() (rm.Message, bool, error) {
	return t.stalestInTail(t.threadDue, func(m *rm.Message) *time.Time { return m.ThreadSyncedAt })
}

// watchedThread returns the due thread, least recently read, of a watched parent or of
// the parent of a watched reply.
func (t *tick) watchedThread() (rm.Message, bool, error) {
	return t.stalestOf(t.watchedThreads, t.threadDue, threadOlder)
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

// readThread fetches the whole thread of parent (all pages) and, only if every page
// was read, replaces its reply set and parent in one transaction with the watermark
// written last. latestReply is the parent's latest_reply as last read, used as the
// watermark when no page carried the parent. It returns nil when the thread was cut
// short or skipped (the reason is recorded), an error only to end the tick.
func (t *tick) readThread(c threadCandidate) error {
	parent, latestReply := c.Ref, c.latestReply
	r := rm.ThreadRead{Keep: map[rm.TS]bool{}, ByTS: map[rm.TS]int{}}
	cursor := ""
	started := t.now()
	for pages := 0; ; pages++ {
		var page rm.Page
		err := t.do(t.replies, func() (err error) {
			page, err = t.p.src.Replies(t.ctx, rm.RepliesRequest{Channel: parent.Channel, TS: parent.TS, Limit: rm.RepliesPageLimit, Cursor: cursor})
			return err
		})
		if err != nil {
			if errors.Is(err, errStreamStop) && pages == 0 && c.first != nil {
				// Not begun: it stays deferred, first in the next tick's queue.
				t.mu.Lock()
				t.threadQueue = append(t.threadQueue, c)
				t.mu.Unlock()
				return err
			}
			if kerr := t.keepFirst(c, started, ends(err) || rm.ClassOf(err) == rm.ClassTransient); kerr != nil {
				return kerr
			}
			if ends(err) {
				return err // cut short: writes nothing of the thread
			}
			switch {
			case rm.CodeOf(err) == "thread_not_found":
				return t.p.w.ThreadGone(parent, t.now())
			case rm.ClassOf(err) == rm.ClassConversation:
				return t.conversationFailed(parent.Channel, err)
			}
			t.skip("%s/%s thread: %v (nothing written)", parent.Channel, parent.TS, err)
			return nil
		}
		t.mu.Lock()
		t.threadCalls++
		t.mu.Unlock()
		if pages == 0 {
			// The thread is read as of its first page: later pages come later.
			started = t.readAt(started, &page)
		}
		t.vetPage(parent.Channel, &page, rm.PageThread, parent.TS)
		for _, s := range page.Skipped {
			if s.TS == "" || s.TS == parent.TS {
				t.skip("%s/%s thread: undecodable message: %s (nothing written)", parent.Channel, parent.TS, s.Err)
				return t.keepFirst(c, started, true)
			}
			r.Keep[s.TS] = true
		}
		for _, m := range page.Messages {
			// The parent is identified by ts == thread_ts, never by position: it
			// may come first on every page, or only on the first.
			if m.TS == parent.TS {
				p := m
				r.Parent = &p
				continue
			}
			if i, dup := r.ByTS[m.TS]; dup {
				r.Replies[i] = m
				continue
			}
			r.ByTS[m.TS] = len(r.Replies)
			r.Replies = append(r.Replies, m)
		}
		if page.NextCursor == "" {
			break
		}
		if page.NextCursor == cursor {
			t.skip("%s/%s thread: conversations.replies returned the cursor it was given (nothing written)", parent.Channel, parent.TS)
			return t.keepFirst(c, started, true)
		}
		cursor = page.NextCursor
	}
	if len(r.Keep) > 0 {
		t.skip("%s/%s thread: %d undecodable repl(ies) kept as stored", parent.Channel, parent.TS, len(r.Keep))
	}
	if r.Parent == nil && c.first != nil {
		r.Parent = c.first // no page carried the parent: the read that deferred it did
	}
	return t.writeThread(parent, latestReply, &r, started)
}

// keepFirst handles a parent a read deferred to its thread read when that thread read
// began but could not be made whole. A failure that may pass (retry) carries the
// candidate to the next tick, up to carryTries times, so that the parent is stored
// with its thread; after that, or for a failure that will not pass, the parent is
// stored as read: its own read is not lost, and its watermark, still empty, has the
// thread read again later.
func (t *tick) keepFirst(c threadCandidate, started time.Time, retry bool) error {
	if c.first == nil {
		return nil
	}
	if retry && c.tries < carryTries {
		c.tries++
		t.mu.Lock()
		t.p.carried = append(t.p.carried, c)
		t.mu.Unlock()
		return nil
	}
	_, err := t.p.w.ApplyReads([]rm.Message{*c.first}, t.p.identity, started)
	return err
}

// carryTries is how many ticks a deferred parent waits for its thread read to succeed
// before it is stored alone.
const carryTries = 3

// writeThread replaces a fully read thread through the writer, then notes the users
// its messages name.
func (t *tick) writeThread(parent rm.Ref, latestReply rm.TS, r *rm.ThreadRead, started time.Time) error {
	written, err := t.p.w.WriteThread(parent, latestReply, r, t.p.identity, started)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range written {
		t.noteUsersLocked(&written[i])
	}
	t.sum.ThreadsWritten++
	t.sum.MessagesWritten += len(written)
	return nil
}
