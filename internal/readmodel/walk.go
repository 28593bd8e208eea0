package readmodel

// sweep reads one conversation's bulk window: a fresh walk from the newest message
// down to now − BulkWindow or, when the last walk was cut short, the rest of that walk
// (resumeWalk). Without resuming, a window deeper than the pages a tick can spend on
// it — 15 messages a page and a few pages a tick under non_marketplace — would be
// read from the newest message again every time and its older part never.
func (t *tick) sweep(ch string) error {
	var c Conversation
	err := t.p.store.View(func(tx Tx) error {
		var err error
		c, _, err = tx.Conversation(ch)
		return err
	})
	if err != nil {
		return storeErr(err)
	}
	if c.WalkBottom != "" && c.WalkTop != "" {
		return t.resumeWalk(ch, c)
	}
	return t.freshWalk(ch)
}

// freshWalk pages (now − BulkWindow, now] newest first until the cursor is empty, the
// history_pages cap is spent or the soft deadline passes. Each page is committed as it
// arrives (one transaction per page). Only a walk that reached its empty cursor is a
// complete read of the window (rule 4), which marks missing_since on stored timeline
// messages it did not return.
func (t *tick) freshWalk(ch string) error {
	readAt := t.now()
	oldest := TSFromUnix(readAt.Add(-t.p.cfg.BulkWindow).Unix())
	w := walk{ch: ch, seen: map[TS]bool{}, provable: true}
	done, err := t.walk(&w, HistoryRequest{Channel: ch, Oldest: oldest, Limit: HistoryPageLimit})
	if err != nil || !done {
		return err
	}
	if w.provable {
		if err := t.markMissing(ch, oldest, TSFromUnix(readAt.Unix()), w.seen); err != nil {
			return err
		}
	}
	return t.walkDone(ch, w.top)
}

// resumeWalk reads the part of a walk cut short that it did not reach: newest first
// below WalkBottom (exclusive), down to CoveredTo or the window's start, whichever is
// later — what lies below CoveredTo was read by a complete walk and is tracked since.
// Reaching the empty cursor completes the walk; it marks nothing missing, since its
// pages were read over several ticks.
func (t *tick) resumeWalk(ch string, c Conversation) error {
	floor := TSFromUnix(t.now().Add(-t.p.cfg.BulkWindow).Unix())
	if floor.Before(c.CoveredTo) {
		floor = c.CoveredTo
	}
	if !floor.Before(c.WalkBottom) {
		return t.walkDone(ch, c.WalkTop)
	}
	w := walk{ch: ch, top: c.WalkTop, bottom: c.WalkBottom, seen: map[TS]bool{}}
	done, err := t.walk(&w, HistoryRequest{Channel: ch, Oldest: floor, Latest: c.WalkBottom, Limit: HistoryPageLimit})
	if err != nil || !done {
		return err
	}
	return t.walkDone(ch, w.top)
}

// walk is one bulk window walk in progress: it has read every message in
// [bottom, top] of its range. top is the newest ts read, not our clock: a message that
// reaches Slack after the first page has a ts above it (ts order is Slack's), however
// far our clock is from Slack's.
type walk struct {
	ch          string
	top, bottom TS
	seen        map[TS]bool
	provable    bool // every skipped message's ts is known (fresh walks only)
	// disordered is set once a page is not newest first: then the lowest ts read
	// says nothing about what lies above it, and no progress is recorded (see
	// facts §B1: Slack's paging direction is not documented for every case).
	disordered bool
}

// walk pages req until the empty cursor (done), a spent cap, the deadline, an error or
// a repeated cursor, committing each page and the walk's progress after it.
func (t *tick) walk(w *walk, req HistoryRequest) (done bool, err error) {
	for {
		if t.pastDeadline() {
			return false, errStopTick
		}
		if !t.take(&t.left.HistoryPages, "history_pages") {
			return false, nil // cut short: proves nothing about absence
		}
		t.call(MethodHistory)
		page, err := t.p.src.History(t.ctx, req)
		if err != nil {
			if ferr := t.fatal(err); ferr != nil {
				return false, ferr
			}
			return false, t.conversationFailed(w.ch, err)
		}
		for _, s := range page.Skipped {
			if s.TS == "" {
				w.provable = false
			} else {
				w.seen[s.TS] = true // unreadable, not absent
			}
		}
		if len(page.Skipped) > 0 {
			t.skip("%s: %d undecodable message(s): %s", w.ch, len(page.Skipped), joinErrs(page.Skipped))
		}
		if err := t.applyPage(page.Messages, w.seen); err != nil {
			return false, err
		}
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
func (t *tick) advance(w *walk, page *Page) error {
	for i := range page.Messages {
		if ts := page.Messages[i].TS; w.top == "" || w.top.Before(ts) {
			w.top = ts
		}
	}
	if w.disordered {
		return nil
	}
	low := w.bottom
	for i := range page.Messages {
		ts := page.Messages[i].TS
		if i > 0 && !ts.Before(page.Messages[i-1].TS) || w.bottom != "" && !ts.Before(w.bottom) {
			w.disordered = true
			t.p.log.Warn("conversations.history page not newest first; this walk resumes from the newest message if cut short", "channel", w.ch)
			return t.updateConversation(w.ch, func(c *Conversation) { c.WalkTop, c.WalkBottom = "", "" })
		}
		low = ts
	}
	if low == w.bottom {
		return nil
	}
	w.bottom = low
	return t.updateConversation(w.ch, func(c *Conversation) { c.WalkTop, c.WalkBottom = w.top, w.bottom })
}

// walkDone records a walk that reached its empty cursor: the window is read through
// top (unchanged when the walk read nothing), no walk is pending, and the
// conversation is swept.
func (t *tick) walkDone(ch string, top TS) error {
	err := t.updateConversation(ch, func(c *Conversation) {
		if top != "" {
			c.CoveredTo = top
		}
		c.WalkTop, c.WalkBottom = "", ""
	})
	if err != nil {
		return err
	}
	return t.conversationOK(ch, true)
}
