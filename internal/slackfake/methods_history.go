package slackfake

import (
	"sort"
	"strconv"
)

// history answers conversations.history: timeline messages (top-level messages,
// thread parents and tombstones, thread_broadcast replies) newest first, within
// oldest/latest, limit default 100 and max 999 (and Options.PageCap), paginated by a
// cursor naming the next (older) message. Shape:
//
//	{"ok":true,["oldest":…,]["latest":…,]"messages":[…],"has_more":bool,"pin_count":0,
//	 "channel_actions_ts":null,"channel_actions_count":0,
//	 "response_metadata":{"next_cursor":"…" or ""}}
func (s *Server) history(c *call) (segments, *apiErr) {
	cv, e := s.readableConv(c.params)
	if e != nil {
		return nil, e
	}
	w, e := parseWindow(c.params)
	if e != nil {
		return nil, e
	}
	limit := pageLimit(c.params, 100, 999, s.opts.PageCap)
	cursor := c.params.Get("cursor")
	if cursor != "" {
		if c.fault.Kind == InvalidCursor {
			return nil, &apiErr{code: "invalid_cursor"}
		}
		k, ok := parseTSCursor(cursor)
		if !ok {
			return nil, &apiErr{code: "invalid_cursor"}
		}
		w.hi = min(w.hi, k)
	}
	tl := cv.timeline
	// top is the newest message in the window, walking down to the oldest.
	top := sort.Search(len(tl), func(i int) bool { return tl[i].key > w.hi }) - 1
	n := 0
	for top-n >= 0 && n < limit && tl[top-n].key >= w.lo {
		n++
	}
	hasMore := top-n >= 0 && tl[top-n].key >= w.lo
	next := ""
	if hasMore {
		next = tsCursor(tl[top-n].ts)
	}
	if c.fault.Kind == RepeatCursor {
		next, hasMore = cursor, true
	}
	bad := -1
	if c.fault.Kind == BadMessage && n > 0 {
		bad = s.rng.IntN(n)
	}

	page := make([]*message, n)
	for i := range page {
		page[i] = tl[top-i]
	}
	head := []byte(`{"ok":true`)
	if v := c.params.Get("oldest"); v != "" {
		head = appendField(head, "oldest", v)
	}
	if v := c.params.Get("latest"); v != "" {
		head = appendField(head, "latest", v)
	}
	tail := []byte(`,"pin_count":0,"channel_actions_ts":null,"channel_actions_count":0`)
	return s.messagePage(head, page, bad, hasMore, tail, next), nil
}

// messagePage assembles {head,"messages":[…],"has_more":…,tail,"response_metadata":…}
// from the cached message JSON; message bad gets a numeric latest_reply.
func (s *Server) messagePage(head []byte, page []*message, bad int, hasMore bool, tail []byte, next string) segments {
	out := make(segments, 0, 2*len(page)+3)
	out = append(out, append(head, `,"messages":[`...))
	for i, m := range page {
		if i > 0 {
			out = append(out, comma)
		}
		if i == bad {
			out = append(out, s.appendMessage(nil, m, true))
		} else {
			out = append(out, s.encoded(m))
		}
	}
	end := append([]byte(`],"has_more":`), strconv.FormatBool(hasMore)...)
	end = append(end, tail...)
	end = append(end, `,"response_metadata":{"next_cursor":`...)
	end = appendString(end, next)
	return append(out, append(end, `}}`...))
}

var comma = []byte{','}

// replies answers conversations.replies: the thread of ts (a parent, or any reply of
// it) as the parent first, then the replies ascending within oldest/latest; limit
// default and max 1000 (and Options.PageCap), counting the parent on the first page.
// Continuation pages start at the cursor's reply, preceded by the parent again when
// Options.RepeatParentOnEveryPage is set (then up to limit-1 replies, at least 1). A
// message without replies returns alone. An unknown ts, a deleted message, or a
// tombstone whose last reply is gone answers thread_not_found. Shape:
//
//	{"ok":true,"messages":[…],"has_more":bool,"response_metadata":{"next_cursor":"…" or ""}}
func (s *Server) replies(c *call) (segments, *apiErr) {
	cv, e := s.readableConv(c.params)
	if e != nil {
		return nil, e
	}
	k, ok := keyOf(tsParam(c.params))
	if !ok {
		return nil, &apiErr{code: "thread_not_found"}
	}
	root := cv.byKey[k]
	if root == nil {
		return nil, &apiErr{code: "thread_not_found"}
	}
	if root.parent != nil {
		root = root.parent
	}
	w, e := parseWindow(c.params)
	if e != nil {
		return nil, e
	}
	limit := pageLimit(c.params, 1000, 1000, s.opts.PageCap)
	rs := root.replies
	lo := sort.Search(len(rs), func(i int) bool { return rs[i].key >= w.lo })
	hi := sort.Search(len(rs), func(i int) bool { return rs[i].key > w.hi })
	if hi < lo {
		hi = lo
	}
	rs = rs[lo:hi]

	start, withParent, room := 0, true, limit-1
	cursor := c.params.Get("cursor")
	if cursor != "" {
		if c.fault.Kind == InvalidCursor {
			return nil, &apiErr{code: "invalid_cursor"}
		}
		ck, ok := parseTSCursor(cursor)
		if !ok {
			return nil, &apiErr{code: "invalid_cursor"}
		}
		start = sort.Search(len(rs), func(i int) bool { return rs[i].key >= ck })
		withParent = s.opts.RepeatParentOnEveryPage
		room = limit
		if withParent {
			room = max(limit-1, 1)
		}
	}
	n := min(room, len(rs)-start)
	page := make([]*message, 0, n+1)
	if withParent {
		page = append(page, root)
	}
	page = append(page, rs[start:start+n]...)
	hasMore := start+n < len(rs)
	next := ""
	if hasMore {
		next = tsCursor(rs[start+n].ts)
	}
	if c.fault.Kind == RepeatCursor {
		next, hasMore = cursor, true
	}
	bad := -1
	if c.fault.Kind == BadMessage && len(page) > 0 {
		bad = s.rng.IntN(len(page))
	}

	return s.messagePage([]byte(`{"ok":true`), page, bad, hasMore, nil, next), nil
}
