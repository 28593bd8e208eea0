package converge

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	gocmp "github.com/google/go-cmp/cmp"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// FeedMessage is what the change feed says about one message: the fields a consumer
// can rebuild from the events alone.
type FeedMessage struct {
	Text      string
	Edited    *rm.Edited
	Reactions []rm.Reaction
	// ThreadTS is the thread a reply belongs to; "" for a timeline message.
	ThreadTS rm.TS
	Deleted  bool
	Missing  bool
}

// FeedModel is a consumer's model of the messages, keyed by (channel, ts).
type FeedModel map[rm.Ref]*FeedMessage

// Apply applies one change as a consumer of the feed would. It fails on a change that
// the model cannot explain (an edit of a message it never heard of): the feed missed
// an event.
func (fm FeedModel) Apply(c *rm.Change) error {
	ref := rm.Ref{Channel: c.Channel, TS: c.TS}
	m := fm[ref]
	switch c.Kind {
	case rm.ChangeUserRenamed, rm.ChangeConversationStatus:
		return nil
	case rm.ChangeMessagePosted, rm.ChangeReplyAdded:
		if c.After == nil || c.After.Text == nil {
			return fmt.Errorf("seq %d %s without the message", c.Seq, c.Kind)
		}
		n := &FeedMessage{Text: *c.After.Text, Edited: c.After.Edited, Reactions: c.After.Reactions, Deleted: c.After.Deleted}
		if c.Kind == rm.ChangeReplyAdded {
			n.ThreadTS = c.ThreadTS
		}
		fm[ref] = n
		return nil
	}
	if m == nil {
		return fmt.Errorf("seq %d %s of %s/%s, a message no event introduced", c.Seq, c.Kind, c.Channel, c.TS)
	}
	switch c.Kind {
	case rm.ChangeMessageEdited:
		if c.After == nil || c.After.Text == nil {
			return fmt.Errorf("seq %d %s without the text", c.Seq, c.Kind)
		}
		m.Text, m.Edited = *c.After.Text, c.After.Edited
	case rm.ChangeMessageDeleted:
		m.Deleted = true
	case rm.ChangeMessageMissing:
		m.Missing = true
	case rm.ChangeMessageReappeared:
		m.Missing, m.Deleted = false, c.After != nil && c.After.Deleted
	case rm.ChangeReplyRemoved:
		if c.Record == "" {
			delete(fm, ref)
			return nil
		}
		// Kept for its record key: out of its thread, deleted and missing.
		m.ThreadTS, m.Deleted, m.Missing = "", true, true
	case rm.ChangeReactionAdded:
		i := reactionIndex(m, c.Reaction)
		if i < 0 {
			m.Reactions = append(m.Reactions, rm.Reaction{Name: c.Reaction})
			i = len(m.Reactions) - 1
		}
		r := &m.Reactions[i]
		r.Count++
		r.Users = append(slices.Clone(r.Users), c.User)
	case rm.ChangeReactionRemoved:
		i := reactionIndex(m, c.Reaction)
		if i < 0 {
			return fmt.Errorf("seq %d: %s of %q by %s on %s/%s, which the model does not hold", c.Seq, c.Kind, c.Reaction, c.User, c.Channel, c.TS)
		}
		r := &m.Reactions[i]
		r.Count--
		r.Users = slices.DeleteFunc(slices.Clone(r.Users), func(u string) bool { return u == c.User })
		if r.Count <= 0 {
			m.Reactions = slices.Delete(slices.Clone(m.Reactions), i, i+1)
		}
	case rm.ChangeReactionCountChanged:
		if c.After == nil || c.After.Count == nil {
			return fmt.Errorf("seq %d %s without the count", c.Seq, c.Kind)
		}
		i := reactionIndex(m, c.Reaction)
		switch {
		case *c.After.Count <= 0 && i >= 0:
			m.Reactions = slices.Delete(slices.Clone(m.Reactions), i, i+1)
		case *c.After.Count <= 0:
		case i < 0:
			m.Reactions = append(m.Reactions, rm.Reaction{Name: c.Reaction, Count: *c.After.Count, Users: c.After.Users})
		default:
			m.Reactions[i] = rm.Reaction{Name: c.Reaction, Count: *c.After.Count, Users: c.After.Users}
		}
	default:
		return fmt.Errorf("seq %d: unknown kind %q", c.Seq, c.Kind)
	}
	return nil
}

func reactionIndex(m *FeedMessage, name string) int {
	return slices.IndexFunc(m.Reactions, func(r rm.Reaction) bool { return r.Name == name })
}

// StoreFeedModel is the FeedModel of what a store holds: every message read at least
// once (never-read placeholders have no content to report), replies included.
func StoreFeedModel(s rm.Store) (FeedModel, error) {
	fm := FeedModel{}
	add := func(m rm.Message) {
		if m.LastPolledAt == nil {
			return
		}
		f := &FeedMessage{Text: m.Text, Edited: m.Edited, Reactions: m.Reactions, Deleted: m.Deleted, Missing: m.MissingSince != nil}
		if m.IsReply() {
			f.ThreadTS = m.ThreadTS
		}
		fm[rm.Ref{Channel: m.Channel, TS: m.TS}] = f
	}
	err := s.View(func(tx rm.Tx) error {
		return tx.Conversations(func(c rm.Conversation) error {
			return tx.Timeline(c.ID, "", "", func(m rm.Message) error {
				add(m)
				replies, err := tx.Replies(c.ID, m.TS)
				for _, r := range replies {
					if r.Subtype != rm.SubtypeThreadBroadcast { // in the timeline too
						add(r)
					}
				}
				return err
			})
		})
	})
	return fm, err
}

// DiffFeed lists where a model rebuilt from the feed differs from the store's, one
// readable line per message, in (channel, ts) order. Reactions are compared by name
// with their users as sets: the feed says who reacted, not in which order Slack
// lists them.
func DiffFeed(replayed, stored FeedModel) []string {
	refs := slices.Collect(maps.Keys(stored))
	for r := range replayed {
		if stored[r] == nil {
			refs = append(refs, r)
		}
	}
	slices.SortFunc(refs, func(a, b rm.Ref) int {
		return cmp.Or(cmp.Compare(a.Channel, b.Channel), a.TS.Compare(b.TS))
	})
	var out []string
	for _, ref := range refs {
		got, want := replayed[ref], stored[ref]
		switch {
		case got == nil:
			out = append(out, fmt.Sprintf("%s/%s: in the store, no event introduced it", ref.Channel, ref.TS))
		case want == nil:
			out = append(out, fmt.Sprintf("%s/%s: the feed has it, the store does not", ref.Channel, ref.TS))
		default:
			if d := gocmp.Diff(normalFeed(want), normalFeed(got)); d != "" {
				out = append(out, fmt.Sprintf("%s/%s (-store +feed):\n%s", ref.Channel, ref.TS, d))
			}
		}
	}
	return out
}

func normalFeed(m *FeedMessage) FeedMessage {
	n := *m
	n.Reactions = nil
	for _, r := range m.Reactions {
		r.Users = slices.Sorted(slices.Values(r.Users))
		if len(r.Users) == 0 {
			r.Users = nil
		}
		n.Reactions = append(n.Reactions, r)
	}
	slices.SortFunc(n.Reactions, func(a, b rm.Reaction) int { return cmp.Compare(a.Name, b.Name) })
	return n
}
