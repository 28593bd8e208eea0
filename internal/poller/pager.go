package poller

import (
	"context"
	"strings"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// historyRead is one conversations.history read paged by historyStream.pages: a head
// read's walk or a tail range.
type historyRead struct {
	req rm.HistoryRequest
	// call says what the read's failure means; incomplete names the read in the
	// report of a cursor Slack gave back ("window", "range").
	call       call
	incomplete string
	// seen collects the ts of every message the pages held, undecodable ones of known
	// ts included: unreadable is not absent.
	seen map[rm.TS]bool
	// keep, if set, picks the messages of a page to apply.
	keep func([]rm.Message) []rm.Message
	// trackUnread has an undecodable message of known ts the store does not hold
	// stored as a never-read placeholder, so that the tail reads it.
	trackUnread bool
	// each, if set, is called with each page and what it wrote, after it is applied;
	// false ends the read.
	each func(page *rm.Page, out []rm.Applied) (bool, error)

	// pages counts the pages read; gap is set once a page held an undecodable
	// message of unknown ts (what the read saw is then not all there is); learned
	// says the last page taught the page cap.
	pages   int
	gap     bool
	learned bool
}

// pages reads r page by page, newest first as Slack sends them, to the empty cursor:
// each page is applied as it comes (one transaction per page), its undecodable
// messages reported. It returns done and complete when it got to the empty cursor;
// done alone when it stopped short of it by itself (Slack gave back the cursor it was
// given: reported; or r.each ended it); else the seam's outcome of the call that did
// not succeed, and its error (fatal). r.req.Cursor is where a read cut short would
// go on.
func (h *historyStream) pages(r *historyRead) (o outcome, complete bool, err error) {
	t := h.t
	for {
		var page rm.Page
		started := t.now()
		o, err := t.do(&h.g, r.call, func(ctx context.Context) (err error) {
			page, err = t.p.src.History(ctx, r.req)
			return err
		})
		if o != done {
			return o, false, err
		}
		r.pages++
		started = t.readAt(started, &page)
		r.learned = h.learnPageCap(r.req.Limit, &page)
		t.vetPage(r.req.Channel, &page, rm.PageHistory, "")
		var unread []rm.TS
		for _, s := range page.Skipped {
			if s.TS == "" {
				r.gap = true
				continue
			}
			r.seen[s.TS] = true // unreadable, not absent
			unread = append(unread, s.TS)
		}
		if len(page.Skipped) > 0 {
			t.report.skip("%s: %d undecodable message(s): %s", r.req.Channel, len(page.Skipped), joinErrs(page.Skipped))
		}
		if r.trackUnread {
			if err := t.p.w.TrackUnread(r.req.Channel, unread); err != nil {
				return fatal, false, err
			}
		}
		msgs := page.Messages
		if r.keep != nil {
			msgs = r.keep(msgs)
		}
		out, err := t.applyReads(msgs, r.seen, started)
		if err != nil {
			return fatal, false, err
		}
		more := true
		if r.each != nil {
			if more, err = r.each(&page, out); err != nil {
				return fatal, false, err
			}
		}
		switch {
		case page.NextCursor == "":
			return done, true, nil
		case !more:
			return done, false, nil
		case page.NextCursor == r.req.Cursor:
			t.report.skip("%s: conversations.history returned the cursor it was given; %s left incomplete", r.req.Channel, r.incomplete)
			return done, false, nil
		}
		r.req.Cursor = page.NextCursor
	}
}

// learnPageCap notes the server's page cap from a page cut short of the limit asked
// with more to come (a non-Marketplace app gets 15 whatever it asks), and reports
// whether this page taught it.
func (h *historyStream) learnPageCap(asked int, page *rm.Page) bool {
	n := len(page.Messages) + len(page.Skipped)
	if page.NextCursor == "" || n == 0 || n >= asked {
		return false
	}
	if h.mem.pageCap != 0 && h.mem.pageCap <= n {
		return false
	}
	h.mem.pageCap = n
	h.t.p.log.Info("conversations.history pages hold at most this many messages; tail ranges are sized to it", "page_cap", n)
	return true
}

// pageSize is the number of stored messages a tail range covers: the learned page
// cap, or the most a page may hold while it is unknown.
func (h *historyStream) pageSize() int {
	if h.mem.pageCap > 0 {
		return h.mem.pageCap
	}
	return rm.HistoryPageLimit
}

func joinErrs(errs []rm.ItemError) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = string(e.TS) + ": " + e.Err
	}
	return strings.Join(parts, "; ")
}
