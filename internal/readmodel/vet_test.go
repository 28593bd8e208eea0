package readmodel

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestDedupeKeepsTheCopyEditedLastElseTheLast(t *testing.T) {
	edited := func(text string, at TS) Message {
		m := Message{TS: "1.000001", Text: text}
		if at != "" {
			m.Edited = &Edited{User: "U1", TS: at}
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		page  []Message
		want  string
		noted bool
	}{
		{"neither edited: the last", []Message{edited("a", ""), edited("b", "")}, "b", true},
		{"the first edited later", []Message{edited("a", "5.000000"), edited("b", "4.000000")}, "a", true},
		{"the last edited later", []Message{edited("a", "4.000000"), edited("b", "5.000000")}, "b", true},
		{"copies alike", []Message{edited("a", ""), edited("a", "")}, "a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := Page{Messages: append([]Message{{TS: "0.000001", Text: "other"}}, tc.page...)}
			notes := VetMessages(&page, PageHistory, "")
			if len(page.Messages) != 2 || page.Messages[1].Text != tc.want || page.Messages[0].Text != "other" {
				t.Errorf("page = %+v, want other, then %q", page.Messages, tc.want)
			}
			if (len(notes) > 0) != tc.noted {
				t.Errorf("notes %v, want noted %v", notes, tc.noted)
			}
		})
	}
}

// manyReactions is a message with n reactions of one user each, and one reaction of
// n users: the shapes whose diff was quadratic.
func manyReactions(n int, salt string) []Reaction {
	rs := make([]Reaction, 0, n+1)
	users := make([]string, n)
	for i := range n {
		rs = append(rs, Reaction{Name: fmt.Sprintf("emoji_%d", i), Count: 1, Users: []string{"U" + salt}})
		users[i] = fmt.Sprintf("U%d%s", i, salt)
	}
	return append(rs, Reaction{Name: "crowd", Count: n, Users: users})
}

// BenchmarkReactionChanges10k: the diff of a message with 10,000 reactions (and one
// reaction of 10,000 users) read again, unchanged and with every user changed, as the
// writer makes it inside its write transaction.
func BenchmarkReactionChanges10k(b *testing.B) {
	old, cur := manyReactions(10_000, "A"), manyReactions(10_000, "B")
	f := &feedTx{cfg: &FeedConfig{}, idLoaded: true}
	m := &Message{Channel: "C1", TS: "1.000001"}
	for _, bc := range []struct {
		name     string
		cur      []Reaction
		produces int
	}{{"unchanged", old, 0}, {"every-user-changed", cur, 40_000}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if out := f.reactionChanges(nil, m, old, bc.cur); len(out) != bc.produces {
					b.Fatalf("%d changes", len(out))
				}
			}
		})
	}
}

// A message first seen with 10,000 reactions made a message_posted of 500 KB: the
// reactions a change carries are bounded like its text, and the change says when
// they are left out.
func TestAChangeCarriesBoundedReactions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reactions []Reaction
		omitted   bool
	}{
		{"10,000 reactions", manyReactions(10_000, "A"), true},
		{"one reaction", []Reaction{{Name: "eyes", Count: 2, Users: []string{"U1", "U2"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Message{Channel: "C1", TS: "1.000001", Text: "hi", Reactions: tc.reactions}
			f := &feedTx{cfg: &FeedConfig{}, idLoaded: true}
			c := f.messageEvent(ChangeMessagePosted, m)
			c.After = messageValue(m, true)
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				After map[string]any `json:"after"`
			}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			_, carried := got.After["reactions"]
			if len(b) > 2*MaxChangeText || carried == tc.omitted || (got.After["reactions_omitted"] == true) != tc.omitted {
				t.Errorf("message_posted of %d bytes, reactions carried %v, reactions_omitted %v; want at most %d bytes, omitted %v",
					len(b), carried, got.After["reactions_omitted"], 2*MaxChangeText, tc.omitted)
			}
		})
	}
}
