package poller

import rm "github.com/slackpoll/slackpoll/internal/readmodel"

// vetPage settles a page read from Slack by rm.VetMessages and flags what it settled,
// and the notes the Source made while decoding it (Page.Notes), in the tick's errors
// and the log. thread is the thread's parent ts for a PageThread page.
func (t *tick) vetPage(ch string, page *rm.Page, kind rm.PageKind, thread rm.TS) {
	notes := rm.VetMessages(page, kind, thread)
	for _, n := range append(page.Notes, notes...) {
		t.report.flag("%s/%s: %s", ch, n.TS, n.Err)
	}
}

// vetReactionsGet vets the message a reactions.get call returned as vetPage vets a
// page, and keeps a timeline message a timeline message: a message the store holds
// as not a reply (a history read said so, see vetPage) that reactions.get returns
// with another thread's thread_ts keeps the stored thread_ts, or every reactions.get
// read would move it into that thread and the next history read back out.
func (t *tick) vetReactionsGet(m *rm.Message) error {
	page := rm.Page{Messages: []rm.Message{*m}}
	t.vetPage(m.Channel, &page, rm.PageOther, "")
	*m = page.Messages[0]
	if !m.IsReply() || m.Subtype == rm.SubtypeThreadBroadcast {
		return nil
	}
	stored, ok, err := t.message(rm.Ref{Channel: m.Channel, TS: m.TS})
	if err != nil || !ok || stored.LastPolledAt == nil || stored.IsReply() {
		return err
	}
	t.report.flag("%s/%s: reactions.get returned it with thread_ts %s, but it is a timeline message: stored as one", m.Channel, m.TS, m.ThreadTS)
	m.ThreadTS = stored.ThreadTS
	return nil
}
