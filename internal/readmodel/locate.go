package readmodel

// notInHistory handles an exact single read that did not return ref. A message read
// before is marked missing (rule 4: kept, never erased). A message added by track and
// never read may instead be a thread reply, which conversations.history never returns:
// locate asks conversations.replies before anything is marked.
func (t *tick) notInHistory(ref Ref) error {
	m, ok, err := t.message(ref)
	if err != nil {
		return err
	}
	if ok && m.LastPolledAt == nil && !m.IsReply() {
		return t.locate(ref)
	}
	return t.markGone(ref)
}

// markGone records that a complete read covering ref did not return it: missing_since
// is set (kept if already set) and last_polled_at advances; the content stays.
func (t *tick) markGone(ref Ref) error {
	now := t.now()
	return storeErr(t.p.store.Update(func(tx Tx) error {
		m, ok, err := tx.Message(ref.Channel, ref.TS)
		if err != nil || !ok {
			return err
		}
		if m.MissingSince == nil {
			m.MissingSince = &now
		}
		m.LastPolledAt = &now
		return tx.PutMessage(m)
	}))
}

// locate finds the thread of a tracked message that history did not return, with one
// conversations.replies call, ts = ref.TS, limit 1: Slack's ts there is "either a
// thread's parent message or a message in the thread", and the answer starts with the
// parent (see conversations.replies). The placeholder then becomes a reply of that
// parent, which joins the tail (it is stored, or tracked as never read): the parent's
// thread read fills the reply in, and every later one keeps it fresh. thread_not_found,
// or an answer that names no thread, is Slack saying the message is not there:
// missing_since. Without a replies call left this tick the placeholder stays unread,
// first in the tail next tick.
func (t *tick) locate(ref Ref) error {
	if t.left.RepliesCalls <= 0 {
		if !t.p.unlocated[ref] {
			t.p.unlocated[ref] = true
			t.skip("%s/%s: not in conversations.history, so it may be a thread reply; finding its thread needs a conversations.replies call and replies_calls is spent this tick", ref.Channel, ref.TS)
		}
		return nil
	}
	if t.pastDeadline() {
		t.p.unlocated[ref] = true
		return errStopTick
	}
	delete(t.p.unlocated, ref)
	t.left.RepliesCalls--
	t.call(MethodReplies)
	page, err := t.p.src.Replies(t.ctx, RepliesRequest{Channel: ref.Channel, TS: ref.TS, Limit: 1})
	if err != nil {
		if ferr := t.fatal(err); ferr != nil {
			return ferr
		}
		switch {
		case CodeOf(err) == "thread_not_found":
			return t.markGone(ref)
		case ClassOf(err) == ClassConversation:
			return t.conversationFailed(ref.Channel, err)
		}
		t.skip("%s/%s: finding its thread: %v", ref.Channel, ref.TS, err)
		return nil
	}
	for _, s := range page.Skipped {
		if s.TS == ref.TS || s.TS == "" {
			t.skip("%s/%s: finding its thread: undecodable: %s", ref.Channel, ref.TS, s.Err)
			return nil
		}
	}
	var self, parent *Message
	for i := range page.Messages {
		m := &page.Messages[i]
		switch {
		case m.TS == ref.TS:
			self = m
		case m.ThreadTS == m.TS && parent == nil:
			parent = m
		}
	}
	if self != nil && !self.IsReply() {
		// History should have returned it; replies did, and a read is a read.
		return t.applyPage([]Message{*self}, nil)
	}
	var threadTS TS
	switch {
	case self != nil:
		threadTS = self.ThreadTS
	case parent != nil:
		threadTS = parent.TS
	default:
		return t.markGone(ref)
	}
	if parent != nil && parent.TS != threadTS {
		parent = nil // some other thread's parent: not this reply's
	}
	t.p.log.Info("tracked message is a thread reply", "channel", ref.Channel, "ts", string(ref.TS), "thread_ts", string(threadTS))
	return t.adoptReply(ref, threadTS, self, parent)
}

// adoptReply writes, in one transaction, what locate learned: the reply (as read, or
// the placeholder moved under threadTS) and its parent (as read, or a never-read
// placeholder when the store does not hold it). A parent the store holds gets a thread
// read queued when the reply is still only a placeholder, whatever its watermark says.
func (t *tick) adoptReply(ref Ref, threadTS TS, self, parent *Message) error {
	now := t.now()
	var written []Message
	var thread *Message
	force := self == nil
	err := t.p.store.Update(func(tx Tx) error {
		written, thread = written[:0], nil
		if self != nil {
			m, err := applyRead(tx, *self, t.p.identity, now)
			if err != nil {
				return err
			}
			written = append(written, m)
		} else {
			m, ok, err := tx.Message(ref.Channel, ref.TS)
			if err != nil || !ok {
				return err
			}
			m.ThreadTS = threadTS
			if err := tx.PutMessage(m); err != nil {
				return err
			}
		}
		if parent != nil {
			m, err := applyRead(tx, *parent, t.p.identity, now)
			if err != nil {
				return err
			}
			unverified, err := unverifiedReplies(tx, &m)
			if err != nil {
				return err
			}
			force = force || unverified
			written = append(written, m)
			thread = &written[len(written)-1]
			return nil
		}
		p, ok, err := trackIfAbsent(tx, ref.Channel, threadTS)
		if ok {
			thread = &p
		}
		return err
	})
	if err != nil {
		return storeErr(err)
	}
	for i := range written {
		t.noteUsers(&written[i])
	}
	if thread != nil && thread.LastPolledAt != nil {
		t.queueThread(thread, force)
	}
	t.sum.MessagesWritten += len(written)
	return nil
}
