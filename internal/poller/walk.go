package poller

import (
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// sweep reads one conversation's bulk window: a fresh walk from the newest message
// down to now − BulkWindow or, when the last walk was cut short, the rest of that walk
// (resumeWalk). Without resuming, a window deeper than the pages a tick can spend on
// it — 15 messages a page and a few pages a tick under non_marketplace — would be
// read from the newest message again every time and its older part never.
func (t *tick) sweep(c rm.Conversation) (fresh, pages int, err error) {
	ch := c.ID
	if c.WalkBottom != "" && c.WalkTop != "" {
		resumed, fresh, pages, err := t.resumeWalk(ch, c)
		if err != nil || resumed {
			return fresh, pages, err
		}
		c.Cover(c.WalkTop, time.Time{})
	}
	return t.freshWalk(ch, c.CoveredTo)
}

// freshWalk pages (now − BulkWindow, now] newest first until the cursor is empty, the
// history_calls cap is spent or the soft deadline passes. Each page is committed as it
// arrives (one transaction per page). Only a walk that reached its empty cursor is a
// complete read of the window (rule 4), which marks missing_since on stored timeline
// messages it did not return. covered is the conversation's CoveredTo.
func (t *tick) freshWalk(ch string, covered rm.TS) (int, int, error) {
	// ts values are Slack's clock: the window is placed by it, not by ours.
	readAt := t.slackNow()
	oldest := rm.TSFromUnix(readAt.Add(-t.p.cfg.BulkWindow).Unix())
	w := walk{ch: ch, floor: covered, seen: map[rm.TS]bool{}, provable: true, started: readAt}
	done, err := t.walk(&w, rm.HistoryRequest{Channel: ch, Oldest: oldest, Limit: rm.HistoryPageLimit})
	if err != nil || !done {
		return w.fresh, w.pages, err
	}
	if w.provable {
		if _, err := t.p.w.MarkMissing(ch, oldest, rm.TSFromUnix(readAt.Unix()), false, w.seen, false, t.now()); err != nil {
			return w.fresh, w.pages, err
		}
	}
	return w.fresh, w.pages, t.walkDone(ch, w.coveredTop(), readAt)
}

// resumeWalk reads the part of a walk cut short that it did not reach: newest first
// below WalkBottom (exclusive), down to CoveredTo or the window's start, whichever is
// later — what lies below CoveredTo was read by a complete walk and is tracked since.
// Reaching the empty cursor completes the walk; it marks nothing missing, since its
// pages were read over several ticks. It reports false, without a call, when nothing
// is left to read (the window's start moved past the walk's bottom): then the walk is
// complete and the sweep goes on with a fresh walk.
func (t *tick) resumeWalk(ch string, c rm.Conversation) (bool, int, int, error) {
	floor := rm.TSFromUnix(t.slackNow().Add(-t.p.cfg.BulkWindow).Unix())
	if floor.Before(c.CoveredTo) {
		floor = c.CoveredTo
	}
	if !floor.Before(c.WalkBottom) {
		err := t.p.w.UpdateConversation(ch, func(c *rm.Conversation) { c.Cover(c.WalkTop, time.Time{}) })
		return false, 0, 0, err
	}
	w := walk{ch: ch, top: c.WalkTop, bottom: c.WalkBottom, seen: map[rm.TS]bool{}}
	done, err := t.walk(&w, rm.HistoryRequest{Channel: ch, Oldest: floor, Latest: c.WalkBottom, Limit: rm.HistoryPageLimit})
	if err != nil || !done {
		return true, w.fresh, w.pages, err
	}
	return true, w.fresh, w.pages, t.walkDone(ch, w.coveredTop(), w.started)
}

// walk is one bulk window walk in progress: it has read every message in
// [bottom, top] of its range. top is the newest ts read, not our clock: a message that
// reaches Slack after the first page has a ts above it (ts order is Slack's), however
// far our clock is from Slack's.
type walk struct {
	ch          string
	top, bottom rm.TS
	// floor is CoveredTo when the walk began (fresh walks): once bottom reaches it,
	// everything up to top has been read, by this walk or a complete one before it.
	floor rm.TS
	// covered is set once bottom reached floor and coverage was recorded.
	covered  bool
	seen     map[rm.TS]bool
	provable bool // every skipped message's ts is known (fresh walks only)
	// gap is set when a page had an undecodable message of unknown ts: the walk
	// cannot say it read everything in its range, so it records no progress and
	// claims no coverage.
	gap bool
	// disordered is set once a page is not newest first: then the lowest ts read
	// says nothing about what lies above it, and no progress is recorded (Slack does
	// not document its paging direction for every case).
	disordered bool
	// fresh counts the messages the walk stored for the first time; pages the
	// pages it read.
	fresh, pages int
	// started is when a fresh walk began, for the change feed's baseline; zero for
	// a resumed walk, whose start is known only as top, the newest ts it read.
	started time.Time
}

// walk pages req until the empty cursor (done), a spent cap, the deadline, an error or
// a repeated cursor, committing each page and the walk's progress after it.
func (t *tick) walk(w *walk, req rm.HistoryRequest) (done bool, err error) {
	for {
		var page rm.Page
		started := t.now()
		err := t.do(t.history, func() (err error) {
			page, err = t.p.src.History(t.ctx, req)
			return err
		})
		if err != nil {
			if ends(err) {
				return false, err // cut short: proves nothing about absence
			}
			return false, t.conversationFailed(w.ch, err)
		}
		w.pages++
		started = t.readAt(started, &page)
		t.learnPageCap(req.Limit, &page)
		t.vetPage(w.ch, &page, rm.PageHistory, "")
		var unread []rm.TS
		for _, s := range page.Skipped {
			if s.TS == "" {
				w.provable, w.gap = false, true
			} else {
				w.seen[s.TS] = true // unreadable, not absent
				unread = append(unread, s.TS)
			}
		}
		if len(page.Skipped) > 0 {
			t.skip("%s: %d undecodable message(s): %s", w.ch, len(page.Skipped), joinErrs(page.Skipped))
		}
		// The walk goes on below them: the tail must read them, so they are tracked
		// as never read if the store does not hold them.
		if err := t.p.w.TrackUnread(w.ch, unread); err != nil {
			return false, err
		}
		out, err := t.applyReads(page.Messages, w.seen, started)
		if err != nil {
			return false, err
		}
		t.countHeadReads(out, &w.fresh)
		if err := t.advance(w, &page); err != nil {
			return false, err
		}
		if page.NextCursor == "" {
			return true, nil
		}
		if page.NextCursor == req.Cursor {
			t.skip("%s: conversations.history returned the cursor it was given; window left incomplete", w.ch)
			return false, nil
		}
		req.Cursor = page.NextCursor
	}
}

// advance lowers the walk's bottom to the oldest ts of page and records it, so that a
// walk cut short (or a daemon killed) resumes below it. Pages must come newest first,
// each below the last: otherwise the walk stops recording progress. top is the newest
// ts read whatever the order, so that a complete walk covers exactly what it read.
func (t *tick) advance(w *walk, page *rm.Page) error {
	for i := range page.Messages {
		if ts := page.Messages[i].TS; w.top == "" || w.top.Before(ts) {
			w.top = ts
		}
	}
	if w.gap && !w.disordered {
		w.disordered = true
		return t.p.w.UpdateConversation(w.ch, func(c *rm.Conversation) { c.WalkTop, c.WalkBottom = "", "" })
	}
	if w.disordered || w.covered {
		return nil
	}
	low := w.bottom
	for i := range page.Messages {
		ts := page.Messages[i].TS
		if i > 0 && !ts.Before(page.Messages[i-1].TS) || w.bottom != "" && !ts.Before(w.bottom) {
			w.disordered = true
			t.p.log.Warn("conversations.history page not newest first; this walk resumes from the newest message if cut short", "channel", w.ch)
			return t.p.w.UpdateConversation(w.ch, func(c *rm.Conversation) { c.WalkTop, c.WalkBottom = "", "" })
		}
		low = ts
	}
	if low == w.bottom {
		return nil
	}
	w.bottom = low
	if w.floor != "" && !w.floor.Before(w.bottom) {
		// Below here a complete walk has read everything: the window is covered
		// through top now, whether or not this walk gets to its empty cursor.
		w.covered = true
		return t.p.w.UpdateConversation(w.ch, func(c *rm.Conversation) { c.Cover(w.top, w.started) })
	}
	return t.p.w.UpdateConversation(w.ch, func(c *rm.Conversation) { c.WalkTop, c.WalkBottom = w.top, w.bottom })
}

// coveredTop is the top a complete walk may claim coverage through: none when a
// message of unknown ts was skipped.
func (w *walk) coveredTop() rm.TS {
	if w.gap {
		return ""
	}
	return w.top
}

// walkDone records a walk that reached its empty cursor: the window is read through
// top (unchanged when the walk read nothing), no walk is pending, and the
// conversation is swept.
func (t *tick) walkDone(ch string, top rm.TS, started time.Time) error {
	err := t.p.w.UpdateConversation(ch, func(c *rm.Conversation) { c.Cover(top, started) })
	if err != nil {
		return err
	}
	return t.conversationOK(ch, true)
}
