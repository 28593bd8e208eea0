package readmodel

// bulkWindow is phase 1: for each eligible conversation, in rotating order, page
// conversations.history newest first over (now − BulkWindow, now] until the cursor is
// empty, the history_pages cap is spent or the soft deadline passes. Each page is
// committed as it arrives (one transaction per page). Only a walk that reached its
// empty cursor is a complete read of the window (rule 4), which marks missing_since
// on stored timeline messages it did not return.
func (t *tick) bulkWindow() error {
	swept := 0
	// The next tick starts after the last conversation this one began to sweep (a
	// conversation cut short by the deadline goes first again next time).
	defer func() { t.p.rotation += max(1, swept) }()
	for _, ch := range t.rotated() {
		if t.pastDeadline() {
			return errStopTick
		}
		if t.left.HistoryPages <= 0 {
			t.noteStop("budget:history_pages")
			return nil
		}
		if err := t.sweep(ch); err != nil {
			return err
		}
		swept++
	}
	return nil
}

// applyPage writes the messages of one page in one transaction, queues the threads
// whose latest_reply moved, and notes the users to resolve.
func (t *tick) applyPage(msgs []Message, seen map[TS]bool) error {
	now := t.now()
	var stored []Message
	var unverified []bool
	err := t.p.store.Update(func(tx Tx) error {
		stored, unverified = stored[:0], unverified[:0]
		for _, read := range msgs {
			m, err := applyRead(tx, read, t.p.identity, now)
			if err != nil {
				return err
			}
			if err := trackParent(tx, &m); err != nil {
				return err
			}
			u, err := unverifiedReplies(tx, &m)
			if err != nil {
				return err
			}
			stored, unverified = append(stored, m), append(unverified, u)
		}
		return nil
	})
	if err != nil {
		return storeErr(err)
	}
	for i := range stored {
		m := &stored[i]
		if seen != nil {
			seen[m.TS] = true
		}
		t.queueThread(m, unverified[i])
		t.noteUsers(m)
	}
	t.sum.MessagesWritten += len(stored)
	return nil
}

// markMissing applies rule 4 after a complete window read over (oldest, latest]:
// stored timeline messages in that range that the read did not return get
// missing_since (kept if already set). Nothing else is changed or erased.
func (t *tick) markMissing(ch string, oldest, latest TS, seen map[TS]bool) error {
	now := t.now()
	return storeErr(t.p.store.Update(func(tx Tx) error {
		var gone []Message
		err := tx.Timeline(ch, oldest, latest, func(m Message) error {
			if m.TS.Compare(oldest) > 0 && !seen[m.TS] && m.MissingSince == nil {
				gone = append(gone, m)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, m := range gone {
			m.MissingSince = &now
			if err := tx.PutMessage(m); err != nil {
				return err
			}
		}
		return nil
	}))
}

// readOne is the exact single-message read of the tail: conversations.history with
// oldest = latest = ts, inclusive, limit 1 (without inclusive the window is empty). It
// is a complete read covering ts: absence marks missing_since, unless the message was
// never read and turns out to be a thread reply (notInHistory).
func (t *tick) readOne(ref Ref) error {
	t.call(MethodHistory)
	page, err := t.p.src.History(t.ctx, HistoryRequest{Channel: ref.Channel, Oldest: ref.TS, Latest: ref.TS, Inclusive: true, Limit: 1})
	if err != nil {
		if ferr := t.fatal(err); ferr != nil {
			return ferr
		}
		if ClassOf(err) == ClassConversation {
			return t.conversationFailed(ref.Channel, err)
		}
		t.skip("%s/%s: %v", ref.Channel, ref.TS, err)
		return nil
	}
	var found []Message
	for _, m := range page.Messages {
		if m.TS == ref.TS {
			found = append(found, m)
		}
	}
	for _, s := range page.Skipped {
		if s.TS == ref.TS || s.TS == "" {
			// Unreadable is not absent, and not polled either: last_polled_at
			// keeps saying how stale the stored copy is.
			t.skip("%s/%s: undecodable: %s", ref.Channel, ref.TS, s.Err)
			return nil
		}
	}
	if len(found) > 0 {
		return t.applyPage(found[:1], nil)
	}
	return t.notInHistory(ref)
}
