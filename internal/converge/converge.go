// Package converge compares a read model with the truth of a (fake) workspace, both in
// the export format of README, "Commands" (export). The demo and the convergence tests use it to say
// "read model matches the workspace: N messages, M threads, K users, 0 differences".
package converge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/google/go-cmp/cmp"

	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Lines is a read model or a truth, split by line kind.
type Lines struct {
	Conversations []export.ConversationLine
	Messages      []export.MessageLine
	Users         []export.UserLine
}

// ReadLines decodes export JSON Lines (README, "Commands" (export)), rejecting unknown kinds and
// unknown fields, so that comparing also checks the export format.
func ReadLines(r io.Reader) (Lines, error) {
	var out Lines
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return out, fmt.Errorf("line %d: %w", n, err)
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var err error
		switch head.Kind {
		case export.KindConversation:
			var c export.ConversationLine
			err = dec.Decode(&c)
			out.Conversations = append(out.Conversations, c)
		case export.KindMessage:
			var m export.MessageLine
			err = dec.Decode(&m)
			out.Messages = append(out.Messages, m)
		case export.KindUser:
			var u export.UserLine
			err = dec.Decode(&u)
			out.Users = append(out.Users, u)
		default:
			err = fmt.Errorf("unknown kind %q", head.Kind)
		}
		if err != nil {
			return out, fmt.Errorf("line %d: %w", n, err)
		}
	}
	return out, sc.Err()
}

// ModelLines exports a store and decodes it.
func ModelLines(s rm.Store, configured []string) (Lines, error) {
	var buf bytes.Buffer
	if err := s.View(func(tx rm.Tx) error { return export.Write(tx, &buf, configured) }); err != nil {
		return Lines{}, err
	}
	return ReadLines(&buf)
}

// Report is the outcome of a comparison.
type Report struct {
	Messages, Threads, Users int      // compared, from the truth
	Differences              []string // one per difference, readable
	// Pending counts the differences on messages the model says it has not read
	// yet: a tracked placeholder never read (last_polled_at null), or a thread parent
	// whose reply watermark is behind its latest_reply. They are work in progress,
	// visible as such to a reader of the model, not stale data presented as read.
	Pending int
}

func (r Report) String() string {
	return fmt.Sprintf("%d messages, %d threads, %d users, %d differences", r.Messages, r.Threads, r.Users, len(r.Differences))
}

// msgKey is the (channel, ts) join key.
type msgKey struct {
	ch string
	ts rm.TS
}

// comparable strips what only polling knows, which the truth cannot say.
func comparable(m export.MessageLine) export.MessageLine {
	m.LastPolledAt, m.MissingSince, m.Record, m.Tracked = nil, nil, "", false
	if len(m.Replies) > 0 {
		m.Replies = slices.Clone(m.Replies)
		for i := range m.Replies {
			m.Replies[i].LastPolledAt = nil
		}
	}
	return m
}

// withContentOf returns want with the content fields of got: what a deleted message
// looked like before Slack replaced it with a tombstone is not Slack's to tell.
func withContentOf(want, got export.MessageLine) export.MessageLine {
	want.User, want.UserLabel, want.BotID, want.Subtype = got.User, got.UserLabel, got.BotID, got.Subtype
	want.Text, want.Edited, want.Reactions, want.OwnPost = got.Text, got.Edited, got.Reactions, got.OwnPost
	return want
}

// Diff compares a read model with the truth. A conversation the bot cannot read keeps
// stale data by design, so only its status is compared; messages are compared in the
// conversations whose truth status is ok, and only those the read model is responsible
// for: at or after since (the bulk window's start; "" = all) and older ones it tracks.
// Every such truth message must be in the model, equal in every Slack field, with a
// reply watermark equal to its latest_reply and no missing_since. A model message
// absent from the truth must carry missing_since (deleted in Slack, kept here by rule
// 4). Users the model looked up must agree with the truth.
func Diff(model, truth Lines, since rm.TS) Report {
	var r Report
	add := func(format string, args ...any) { r.Differences = append(r.Differences, fmt.Sprintf(format, args...)) }

	readable := map[string]bool{}
	modelConv := map[string]export.ConversationLine{}
	for _, c := range model.Conversations {
		modelConv[c.ID] = c
	}
	for _, tc := range truth.Conversations {
		mc, ok := modelConv[tc.ID]
		if !ok {
			add("conversation %s: missing from the read model", tc.ID)
			continue
		}
		if tc.Status == rm.StatusChannelNotFound {
			// Slack hides what the token cannot see: only the status is knowable.
			mc.Type, mc.Name, mc.IsArchived = tc.Type, tc.Name, tc.IsArchived
		}
		if mc.Type != tc.Type || mc.Name != tc.Name || mc.IsArchived != tc.IsArchived || mc.Status != tc.Status || mc.NeededScope != tc.NeededScope {
			add("conversation %s: model %s/%s archived=%v status=%s, truth %s/%s archived=%v status=%s",
				tc.ID, mc.Type, mc.Name, mc.IsArchived, mc.Status, tc.Type, tc.Name, tc.IsArchived, tc.Status)
		}
		readable[tc.ID] = tc.Status == rm.StatusOK
	}

	modelMsg := map[msgKey]export.MessageLine{}
	for _, m := range model.Messages {
		modelMsg[msgKey{m.Channel, m.TS}] = m
	}
	truthMsg := map[msgKey]bool{}
	for _, tm := range truth.Messages {
		if !readable[tm.Channel] {
			continue
		}
		k := msgKey{tm.Channel, tm.TS}
		truthMsg[k] = true
		mm, ok := modelMsg[k]
		if !ok && since != "" && tm.TS.Before(since) {
			continue // older than the window and not tracked
		}
		r.Messages++
		if len(tm.Replies) > 0 {
			r.Threads++
		}
		if !ok {
			add("message %s/%s: missing from the read model", tm.Channel, tm.TS)
			continue
		}
		if mm.MissingSince != nil {
			add("message %s/%s: marked missing since %s but present in Slack", tm.Channel, tm.TS, mm.MissingSince)
		}
		want := comparable(tm)
		want.ReplyWatermark = tm.LatestReply
		if tm.Deleted && mm.Deleted {
			// A tombstone carries no content: the model keeps what it last read
			// (nothing, if the message was deleted before any poll saw it).
			want = withContentOf(want, mm)
		}
		if d := cmp.Diff(want, comparable(mm)); d != "" {
			add("message %s/%s differs (-truth +model):\n%s", tm.Channel, tm.TS, d)
			if mm.LastPolledAt == nil || mm.ReplyWatermark != mm.LatestReply {
				r.Pending++
			}
		}
	}
	for _, mm := range model.Messages {
		k := msgKey{mm.Channel, mm.TS}
		if !readable[mm.Channel] || truthMsg[k] {
			continue
		}
		if mm.MissingSince == nil {
			add("message %s/%s: in the read model (deleted=%v) but not in Slack, and not marked missing", mm.Channel, mm.TS, mm.Deleted)
		}
	}

	truthUser := map[string]export.UserLine{}
	for _, u := range truth.Users {
		truthUser[u.ID] = u
	}
	referenced := referencedUsers(model.Messages)
	for _, mu := range model.Users {
		tu, ok := truthUser[mu.ID]
		if !ok {
			// The truth lists the users its messages reference; the store keeps every
			// user it looked up, also one whose only message or reaction has since
			// gone. A user no stored message references is not compared; one that is
			// referenced must be Slack's (a store holding another team's data is not).
			if mu.LookupError == "" && referenced[mu.ID] {
				add("user %s: in the read model but unknown to Slack", mu.ID)
			}
			continue
		}
		r.Users++
		if mu.DisplayName != tu.DisplayName || mu.RealName != tu.RealName || mu.Deleted != tu.Deleted || mu.Label != tu.Label {
			add("user %s: model %q/%q deleted=%v, truth %q/%q deleted=%v", mu.ID, mu.DisplayName, mu.RealName, mu.Deleted, tu.DisplayName, tu.RealName, tu.Deleted)
		}
	}
	slices.Sort(r.Differences)
	return r
}

// referencedUsers is the set of user IDs msgs reference: authors, reply authors and
// reaction users of the messages Slack still shows.
func referencedUsers(msgs []export.MessageLine) map[string]bool {
	seen := map[string]bool{}
	reactions := func(rs []rm.Reaction) {
		for _, r := range rs {
			for _, u := range r.Users {
				seen[u] = true
			}
		}
	}
	for _, m := range msgs {
		// A message gone from Slack (kept as deleted or missing) references no one
		// the truth lists: Slack no longer shows it.
		if !m.Deleted && m.MissingSince == nil {
			seen[m.User] = true
			reactions(m.Reactions)
		}
		for _, r := range m.Replies {
			seen[r.User] = true
			reactions(r.Reactions)
		}
	}
	return seen
}
