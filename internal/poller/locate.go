package poller

import (
	"context"
	"fmt"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// locate finds the thread of a tracked message that history did not return, with one
// conversations.replies call, ts = ref.TS, limit 1: Slack's ts there is "either a
// thread's parent message or a message in the thread", and the answer starts with the
// parent (see conversations.replies). The placeholder then becomes a reply of that
// parent, which joins the tail (it is stored, or tracked as never read): the parent's
// thread read fills the reply in, and every later one keeps it fresh. thread_not_found,
// or an answer that names no thread, is Slack saying the message is not there:
// missing_since; an answer with an undecodable message (the parent) is not, and leaves
// the placeholder unread. Without a replies call left this tick the placeholder stays
// unread, first in the tail next tick.
func (rs *repliesStream) locate(ref rm.Ref) error {
	t := rs.t
	if m, ok, err := t.message(ref); err != nil || !ok || m.LastPolledAt != nil {
		// Read since it was queued (its parent's thread read, queued by the same
		// range, stores it first) or gone: nothing to find, and no call to spend.
		t.work.located(ref)
		return err
	}
	var page rm.Page
	started := t.now()
	what := fmt.Sprintf("%s/%s: finding its thread", ref.Channel, ref.TS)
	o, err := t.do(&rs.g, call{ch: ref.Channel, item: true, what: what}, func(ctx context.Context) (err error) {
		page, err = t.p.src.Replies(ctx, rm.RepliesRequest{Channel: ref.Channel, TS: ref.TS, Limit: 1})
		return err
	})
	if o == stopped {
		// Still unlocated: the next tick's replies stream starts with it.
		t.work.requeueLocate(ref)
		return errStop
	}
	t.work.located(ref)
	// An answer that leaves the placeholder unread lets it go back to the tail, where
	// never read, it is the stalest of all: without a backoff it anchored a range on
	// every tick, which queued it here again, and the rest of the tail waited.
	unread := func() { t.p.mem.backoff.lengthen(ref, t.p.mem.tickNo) }
	switch o {
	case gone:
		return t.p.w.MarkGone(ref, t.now())
	case skipped:
		unread()
		return nil
	case fatal, failed:
		return stepErr(o, err)
	}
	for _, s := range page.Skipped {
		if s.TS == ref.TS || s.TS == "" {
			t.report.skip("%s/%s: finding its thread: undecodable: %s", ref.Channel, ref.TS, s.Err)
			unread()
			return nil
		}
	}
	t.vetPage(ref.Channel, &page, rm.PageOther, "")
	var self, parent *rm.Message
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
		_, err := t.applyReads([]rm.Message{*self}, nil, started)
		return err
	}
	var threadTS rm.TS
	switch {
	case self != nil:
		threadTS = self.ThreadTS
	case parent != nil:
		threadTS = parent.TS
	case len(page.Skipped) > 0:
		// Slack named a thread (its parent, at least) that could not be decoded: not
		// an answer of absence. The placeholder stays unread and is found again.
		t.report.skip("%s/%s: finding its thread: undecodable: %s", ref.Channel, ref.TS, joinErrs(page.Skipped))
		unread()
		return nil
	default:
		return t.p.w.MarkGone(ref, t.now())
	}
	if parent != nil && parent.TS != threadTS {
		parent = nil // some other thread's parent: not this reply's
	}
	t.p.log.Info("tracked message is a thread reply", "channel", ref.Channel, "ts", string(ref.TS), "thread_ts", string(threadTS))
	return rs.adoptReply(ref, threadTS, self, parent)
}

// adoptReply writes what locate learned through the writer, then queues the parent's
// thread when the store holds the parent read.
func (rs *repliesStream) adoptReply(ref rm.Ref, threadTS rm.TS, self, parent *rm.Message) error {
	t := rs.t
	written, thread, force, err := t.p.w.AdoptReply(ref, threadTS, self, parent, t.p.mem.identity, t.now())
	if err != nil {
		return err
	}
	t.work.noteUsers(written)
	if thread != nil && thread.LastPolledAt != nil {
		t.work.queueThread(thread, force)
	}
	return nil
}
