package readmodel

import (
	"fmt"
	"slices"
	"strings"
)

// PageKind says what a page may hold, which depends on the method that read it
// (VetMessages).
type PageKind int

// Page kinds.
const (
	// PageHistory: conversations.history, the conversation's timeline.
	PageHistory PageKind = iota
	// PageThread: a whole-thread read of conversations.replies; its thread is known.
	PageThread
	// PageOther: any other page (locate's one-message replies read).
	PageOther
)

// VetMessages checks a page read from Slack for shapes the model cannot hold as they
// are and settles each in one deterministic way, in page.Messages; it returns what it
// settled, one note per message, for the caller to report (the poller flags them in
// the tick's errors and the log), so that the odd data is seen, not silently
// changed. Nothing is dropped that a read could not give again. thread is the
// thread's parent ts for a PageThread page.
//
//   - Two messages with one ts (different content): the one edited last is kept
//     (by edited.ts), else the last in the page. Both stored in turn, one read
//     after the other, made every read an edit, for ever.
//   - In a history page, a reply that is not a thread_broadcast: conversations.history
//     returns a conversation's timeline, never its thread replies but broadcasts, so
//     its thread_ts names no thread of this conversation (one of another
//     conversation, in the data seen). It is a timeline message, and is stored as one,
//     without the thread_ts: shown, exported and reported (message_posted) as such.
//   - In a whole-thread read, a reply whose thread_ts names another thread: it
//     belongs to the thread that returned it.
//   - Reactions: see vetReactions.
func VetMessages(page *Page, kind PageKind, thread TS) []ItemError {
	var notes []ItemError
	msgs, dups := dedupe(page.Messages)
	notes = append(notes, dups...)
	for i := range msgs {
		m := &msgs[i]
		switch {
		case kind == PageHistory && m.IsReply() && m.Subtype != SubtypeThreadBroadcast:
			notes = append(notes, ItemError{m.TS, fmt.Sprintf("conversations.history returned it with thread_ts %s, which names no thread of this conversation (history returns no reply but a thread_broadcast): stored as a timeline message, without it", m.ThreadTS)})
			m.ThreadTS = ""
		case kind == PageThread && m.TS != thread && m.ThreadTS != thread:
			notes = append(notes, ItemError{m.TS, fmt.Sprintf("the thread %s returned it with thread_ts %q: stored as a reply of the thread that returned it", thread, m.ThreadTS)})
			m.ThreadTS = thread
		}
		if n := vetReactions(m); n != "" {
			notes = append(notes, ItemError{m.TS, n})
		}
	}
	page.Messages = msgs
	return notes
}

// dedupe keeps one message per ts: the one edited last (by edited.ts), else the last
// in the page; the kept one takes the place of the first. It returns a note for each
// ts whose copies differed (copies alike are dropped without one).
func dedupe(msgs []Message) ([]Message, []ItemError) {
	first := make(map[TS]int, len(msgs))
	var notes []ItemError
	out := msgs[:0:0]
	differ := map[TS]int{}
	for _, m := range msgs {
		i, dup := first[m.TS]
		if !dup {
			first[m.TS] = len(out)
			out = append(out, m)
			continue
		}
		if !sameContent(&out[i], &m) {
			differ[m.TS]++
		}
		if !editedTS(&m).Before(editedTS(&out[i])) {
			out[i] = m
		}
	}
	for _, m := range out {
		if n := differ[m.TS]; n > 0 {
			how := "the last in the page"
			if editedTS(&m) != "" {
				how = "the one edited last (edited.ts " + string(editedTS(&m)) + ")"
			}
			notes = append(notes, ItemError{m.TS, fmt.Sprintf("the page held %d different messages with this ts: kept %s", n+1, how)})
		}
	}
	if len(out) == len(msgs) {
		return msgs, nil
	}
	return out, notes
}

func editedTS(m *Message) TS {
	if m.Edited == nil {
		return ""
	}
	return m.Edited.TS
}

// sameContent reports whether two reads of one ts carry the same Slack fields.
func sameContent(a, b *Message) bool {
	return a.ThreadTS == b.ThreadTS && a.User == b.User && a.BotID == b.BotID && a.BotName == b.BotName &&
		a.Subtype == b.Subtype && a.Text == b.Text && sameEdited(a.Edited, b.Edited) &&
		a.ReplyCount == b.ReplyCount && a.LatestReply == b.LatestReply &&
		slices.EqualFunc(a.Reactions, b.Reactions, func(x, y Reaction) bool {
			return x.Name == y.Name && x.Count == y.Count && slices.Equal(x.Users, y.Users)
		})
}

// vetReactions settles reactions whose count is 0 or below, which no reaction can
// have: the users listed are the reaction (count = how many), and one that lists
// none is not stored. It returns a note, or "" when nothing was odd.
func vetReactions(m *Message) string {
	var odd []string
	kept := m.Reactions[:0:0]
	for _, r := range m.Reactions {
		if r.Count > 0 {
			kept = append(kept, r)
			continue
		}
		odd = append(odd, fmt.Sprintf("%s (count %d, %d users)", r.Name, r.Count, len(r.Users)))
		if len(r.Users) > 0 {
			r.Count = len(r.Users)
			kept = append(kept, r)
		}
	}
	if len(odd) == 0 {
		return ""
	}
	if m.Reactions != nil && kept == nil {
		kept = []Reaction{}
	}
	m.Reactions = kept
	return "reaction count 0 or below: " + strings.Join(odd, ", ") + ": a reaction listing users is stored with their number as its count, one listing none is not stored"
}
