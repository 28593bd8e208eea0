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
func (hs *heads) sweep(c rm.Conversation) (fresh, pages int, err error) {
	ch := c.ID
	if c.WalkBottom != "" && c.WalkTop != "" {
		resumed, fresh, pages, err := hs.resumeWalk(ch, c)
		if err != nil || resumed {
			return fresh, pages, err
		}
		c.Cover(c.WalkTop, time.Time{})
	}
	return hs.freshWalk(ch, c.CoveredTo)
}

// freshWalk pages (now − BulkWindow, now] newest first until the cursor is empty, the
// history_calls cap is spent or the soft deadline passes. Each page is committed as it
// arrives (one transaction per page). Only a walk that reached its empty cursor is a
// complete read of the window, which marks missing_since on stored timeline messages
// it did not return (README, "Replace on read": absence is not erasure; only a
// complete read covering a ts marks it missing). covered is the conversation's
// CoveredTo.
func (hs *heads) freshWalk(ch string, covered rm.TS) (int, int, error) {
	t := hs.h.t
	// ts values are Slack's clock: the window is placed by it, not by ours.
	readAt := t.slackNow()
	oldest := rm.TSFromUnix(readAt.Add(-t.p.cfg.BulkWindow).Unix())
	w := walk{hs: hs, floor: covered, started: readAt}
	done, err := w.run(rm.HistoryRequest{Channel: ch, Oldest: oldest, Limit: rm.HistoryPageLimit})
	if err != nil || !done {
		return w.fresh, w.read.pages, err
	}
	if !w.read.gap {
		// Every message the pages held is in seen, undecodable ones too: what is
		// not there is not in the window.
		if _, err := t.p.w.MarkMissing(ch, oldest, rm.TSFromUnix(readAt.Unix()), false, w.read.seen, false, t.now()); err != nil {
			return w.fresh, w.read.pages, err
		}
	}
	return w.fresh, w.read.pages, hs.walkDone(ch, w.coveredTop(), readAt)
}

// resumeWalk reads the part of a walk cut short that it did not reach: newest first
// below WalkBottom (exclusive), down to CoveredTo or the window's start, whichever is
// later — what lies below CoveredTo was read by a complete walk and is tracked since.
// Reaching the empty cursor completes the walk; it marks nothing missing, since its
// pages were read over several ticks. It reports false, without a call, when nothing
// is left to read (the window's start moved past the walk's bottom): then the walk is
// complete and the sweep goes on with a fresh walk.
func (hs *heads) resumeWalk(ch string, c rm.Conversation) (bool, int, int, error) {
	t := hs.h.t
	floor := rm.TSFromUnix(t.slackNow().Add(-t.p.cfg.BulkWindow).Unix())
	if floor.Before(c.CoveredTo) {
		floor = c.CoveredTo
	}
	if !floor.Before(c.WalkBottom) {
		err := t.p.w.UpdateConversation(ch, func(c *rm.Conversation) { c.Cover(c.WalkTop, time.Time{}) })
		return false, 0, 0, err
	}
	w := walk{hs: hs, top: c.WalkTop, bottom: c.WalkBottom}
	done, err := w.run(rm.HistoryRequest{Channel: ch, Oldest: floor, Latest: c.WalkBottom, Limit: rm.HistoryPageLimit})
	if err != nil || !done {
		return true, w.fresh, w.read.pages, err
	}
	return true, w.fresh, w.read.pages, hs.walkDone(ch, w.coveredTop(), w.started)
}

// walkDone records a walk that reached its empty cursor: the window is read through
// top (unchanged when the walk read nothing), no walk is pending, and the
// conversation is swept.
func (hs *heads) walkDone(ch string, top rm.TS, started time.Time) error {
	t := hs.h.t
	err := t.p.w.UpdateConversation(ch, func(c *rm.Conversation) { c.Cover(top, started) })
	if err != nil {
		return err
	}
	return t.conversationOK(ch, true)
}

// walk is one bulk window walk in progress: it has read every message in
// [bottom, top] of its range. top is the newest ts read, not our clock: a message that
// reaches Slack after the first page has a ts above it (ts order is Slack's), however
// far our clock is from Slack's.
type walk struct {
	hs *heads
	// read is its pages: what they held (seen), how many, whether one held an
	// undecodable message of unknown ts (gap: the walk cannot say it read everything
	// in its range, so it records no progress and claims no coverage).
	read        historyRead
	top, bottom rm.TS
	// floor is CoveredTo when the walk began (fresh walks): once bottom reaches it,
	// everything up to top has been read, by this walk or a complete one before it.
	floor rm.TS
	// covered is set once bottom reached floor and coverage was recorded.
	covered bool
	// disordered is set once a page is not newest first: then the lowest ts read
	// says nothing about what lies above it, and no progress is recorded (Slack does
	// not document its paging direction for every case).
	disordered bool
	// fresh counts the messages the walk stored for the first time.
	fresh int
	// started is when a fresh walk began, for the change feed's baseline; zero for
	// a resumed walk, whose start is known only as top, the newest ts it read.
	started time.Time
}

// run pages req until the empty cursor (done), a spent cap, the deadline, a failure or
// a repeated cursor, committing each page and the walk's progress after it. Any
// failure fails the conversation for this tick. An undecodable message it meets is
// read by the tail: the walk goes on below it, and tracks it as never read if the
// store does not hold it.
func (w *walk) run(req rm.HistoryRequest) (done bool, err error) {
	w.read = historyRead{
		req: req, call: call{ch: req.Channel, whole: true}, incomplete: "window",
		seen: map[rm.TS]bool{}, trackUnread: true,
		each: func(page *rm.Page, out []rm.Applied) (bool, error) {
			w.hs.count(out, &w.fresh)
			return true, w.advance(page)
		},
	}
	o, complete, err := w.hs.h.pages(&w.read)
	return complete, stepErr(o, err) // cut short: proves nothing about absence
}

// advance lowers the walk's bottom to the oldest ts of page and records it, so that a
// walk cut short (or a daemon killed) resumes below it. Pages must come newest first,
// each below the last: otherwise the walk stops recording progress. top is the newest
// ts read whatever the order, so that a complete walk covers exactly what it read.
func (w *walk) advance(page *rm.Page) error {
	t, ch := w.hs.h.t, w.read.req.Channel
	for i := range page.Messages {
		if ts := page.Messages[i].TS; w.top == "" || w.top.Before(ts) {
			w.top = ts
		}
	}
	if w.read.gap && !w.disordered {
		w.disordered = true
		return t.p.w.UpdateConversation(ch, func(c *rm.Conversation) { c.WalkTop, c.WalkBottom = "", "" })
	}
	if w.disordered || w.covered {
		return nil
	}
	low := w.bottom
	for i := range page.Messages {
		ts := page.Messages[i].TS
		if i > 0 && !ts.Before(page.Messages[i-1].TS) || w.bottom != "" && !ts.Before(w.bottom) {
			w.disordered = true
			t.p.log.Warn("conversations.history page not newest first; this walk resumes from the newest message if cut short", "channel", ch)
			return t.p.w.UpdateConversation(ch, func(c *rm.Conversation) { c.WalkTop, c.WalkBottom = "", "" })
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
		return t.p.w.UpdateConversation(ch, func(c *rm.Conversation) { c.Cover(w.top, w.started) })
	}
	return t.p.w.UpdateConversation(ch, func(c *rm.Conversation) { c.WalkTop, c.WalkBottom = w.top, w.bottom })
}

// coveredTop is the top a complete walk may claim coverage through: none when a
// message of unknown ts was skipped.
func (w *walk) coveredTop() rm.TS {
	if w.read.gap {
		return ""
	}
	return w.top
}
