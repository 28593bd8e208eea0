package readmodel

import "time"

// syncThreads reads the threads queued by phase 1, in the order their parents were
// read, until the replies_calls cap is spent or the deadline passes.
func (t *tick) syncThreads() error {
	for len(t.threadQueue) > 0 {
		c := t.threadQueue[0]
		t.threadQueue = t.threadQueue[1:]
		if !t.eligible[c.Channel] {
			continue
		}
		if t.pastDeadline() {
			return errStopTick
		}
		if t.left.RepliesCalls <= 0 {
			t.noteStop("budget:replies_calls")
			return nil
		}
		if err := t.readThread(c.Ref, c.latestReply); err != nil {
			return err
		}
	}
	return nil
}

// threadRead is a whole thread as read by conversations.replies.
type threadRead struct {
	parent  *Message    // the parent element, if any page carried it
	replies []Message   // without the parent, ascending by ts as Slack sent them
	keep    map[TS]bool // replies that could not be decoded: keep the stored copy
	byTS    map[TS]int  // index into replies, to drop repeats across pages
}

// readThread fetches the whole thread of parent (all pages) and, only if every page
// was read, replaces its reply set and parent in one transaction with the watermark
// written last. latestReply is the parent's latest_reply as last read, used as the
// watermark when no page carried the parent. It returns nil when the thread was cut
// short or skipped (the reason is recorded), an error only to end the tick.
func (t *tick) readThread(parent Ref, latestReply TS) error {
	r := threadRead{keep: map[TS]bool{}, byTS: map[TS]int{}}
	cursor := ""
	for {
		if t.pastDeadline() {
			return errStopTick
		}
		if !t.take(&t.left.RepliesCalls, "replies_calls") {
			return nil // cut short: writes nothing
		}
		t.call(MethodReplies)
		page, err := t.p.src.Replies(t.ctx, RepliesRequest{Channel: parent.Channel, TS: parent.TS, Limit: RepliesPageLimit, Cursor: cursor})
		if err != nil {
			if ferr := t.fatal(err); ferr != nil {
				return ferr
			}
			switch {
			case CodeOf(err) == "thread_not_found":
				return t.threadGone(parent)
			case ClassOf(err) == ClassConversation:
				return t.conversationFailed(parent.Channel, err)
			}
			t.skip("%s/%s thread: %v (nothing written)", parent.Channel, parent.TS, err)
			return nil
		}
		for _, s := range page.Skipped {
			if s.TS == "" || s.TS == parent.TS {
				t.skip("%s/%s thread: undecodable message: %s (nothing written)", parent.Channel, parent.TS, s.Err)
				return nil
			}
			r.keep[s.TS] = true
		}
		for _, m := range page.Messages {
			// The parent is identified by ts == thread_ts, never by position: it
			// may come first on every page, or only on the first.
			if m.TS == parent.TS {
				p := m
				r.parent = &p
				continue
			}
			if i, dup := r.byTS[m.TS]; dup {
				r.replies[i] = m
				continue
			}
			r.byTS[m.TS] = len(r.replies)
			r.replies = append(r.replies, m)
		}
		if page.NextCursor == "" {
			break
		}
		if page.NextCursor == cursor {
			t.skip("%s/%s thread: conversations.replies returned the cursor it was given (nothing written)", parent.Channel, parent.TS)
			return nil
		}
		cursor = page.NextCursor
	}
	if len(r.keep) > 0 {
		t.skip("%s/%s thread: %d undecodable repl(ies) kept as stored", parent.Channel, parent.TS, len(r.keep))
	}
	return t.writeThread(parent, latestReply, &r)
}

// writeThread replaces a fully read thread in one transaction: stale replies deleted,
// every reply replaced whole, the parent refreshed from its own element, and the
// parent's reply watermark put last.
func (t *tick) writeThread(parent Ref, latestReply TS, r *threadRead) error {
	now := t.now()
	var written []Message
	err := t.p.store.Update(func(tx Tx) error {
		written = written[:0]
		stored, err := tx.Replies(parent.Channel, parent.TS)
		if err != nil {
			return err
		}
		for _, old := range stored {
			if _, ok := r.byTS[old.TS]; !ok && !r.keep[old.TS] {
				if err := dropReply(tx, old, now); err != nil {
					return err
				}
			}
		}
		for _, read := range r.replies {
			if read.ThreadTS == "" {
				read.ThreadTS = parent.TS // a reply always belongs to the thread it came from
			}
			m, err := applyRead(tx, read, t.p.identity, now)
			if err != nil {
				return err
			}
			written = append(written, m)
		}
		p, ok, err := tx.Message(parent.Channel, parent.TS)
		if err != nil {
			return err
		}
		watermark := latestReply
		if r.parent != nil {
			var prev *Message
			if ok {
				prev = &p
			}
			p = merge(prev, *r.parent, t.p.identity, now)
			watermark = r.parent.LatestReply
			written = append(written, p)
		} else if !ok {
			p = Message{Channel: parent.Channel, TS: parent.TS, ThreadTS: parent.TS, LatestReply: latestReply}
		}
		p.ReplyWatermark = watermark
		p.ThreadSyncedAt = &now
		return tx.PutMessage(p)
	})
	if err != nil {
		return storeErr(err)
	}
	for i := range written {
		t.noteUsers(&written[i])
	}
	t.sum.ThreadsWritten++
	t.sum.MessagesWritten += len(written)
	return nil
}

// threadGone applies thread_not_found, Slack's final answer that the thread is gone:
// the reply set becomes empty, the parent is marked deleted, and its watermark becomes
// its last read latest_reply so the thread is not asked for again.
func (t *tick) threadGone(parent Ref) error {
	now := t.now()
	return storeErr(t.p.store.Update(func(tx Tx) error {
		stored, err := tx.Replies(parent.Channel, parent.TS)
		if err != nil {
			return err
		}
		for _, old := range stored {
			if err := dropReply(tx, old, now); err != nil {
				return err
			}
		}
		p, ok, err := tx.Message(parent.Channel, parent.TS)
		if err != nil || !ok {
			return err
		}
		p.Deleted = true
		p.ThreadGone = true
		p.ReplyWatermark = p.LatestReply
		return tx.PutMessage(p)
	}))
}

// dropReply removes a reply that a whole-thread read (or thread_not_found) says is
// gone. A reply someone tracked — it carries a record key, or track added it and it
// was never read — is kept instead, out of its thread, as deleted and missing since
// now: the record stays attached and tells what became of its message.
func dropReply(tx Tx, old Message, now time.Time) error {
	if old.Record == "" && old.LastPolledAt != nil {
		return tx.DeleteMessage(old.Channel, old.TS)
	}
	old.ThreadTS, old.Deleted, old.LastPolledAt = "", true, &now
	if old.MissingSince == nil {
		old.MissingSince = &now
	}
	return tx.PutMessage(old)
}
