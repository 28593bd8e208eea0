package readmodel

import (
	"slices"
	"time"
)

// feedTx is the Tx the writer's transactions write through: every message, user and
// conversation put is compared with what it replaces, and the differences are
// appended to the change feed — and to the outbox of each subscription they match —
// in the same transaction. So a change is recorded exactly when the model changes,
// whichever read (bulk window, tail range, thread, locate, reactions.get) showed it,
// and a re-read that changes nothing records nothing: the second read of the same
// fact finds it already stored.
type feedTx struct {
	Tx
	cfg *FeedConfig
	now time.Time
	// id is the cached identity (own reactions), loaded on first use.
	id       *Identity
	idLoaded bool
	// convs caches the conversations whose baseline a message was checked against.
	convs map[string]Conversation
	// pending are the changes found so far, appended by flush at the end of the
	// transaction; last is the seq of the last one appended, 0 for none.
	pending []Change
	last    uint64
	// seen is the last message read or written through f: the writer reads a
	// message, then puts it, and the comparison needs what it replaces — one decode,
	// not two. A put or delete of the same key replaces it.
	seen struct {
		ok, had bool
		key     Ref
		m       Message
	}
}

// Message reads through the transaction and remembers the answer for PutMessage.
func (f *feedTx) Message(channel string, ts TS) (Message, bool, error) {
	m, had, err := f.Tx.Message(channel, ts)
	f.seen.ok, f.seen.had, f.seen.key, f.seen.m = err == nil, had, Ref{channel, ts}, m
	return m, had, err
}

// stored returns the stored message (channel, ts), from seen when it holds it.
func (f *feedTx) stored(channel string, ts TS) (Message, bool, error) {
	if f.seen.ok && f.seen.key == (Ref{channel, ts}) {
		return f.seen.m, f.seen.had, nil
	}
	return f.Tx.Message(channel, ts)
}

func newFeedTx(tx Tx, cfg *FeedConfig, now time.Time) *feedTx {
	return &feedTx{Tx: tx, cfg: cfg, now: now.UTC()}
}

// PutMessage stores m and records how it differs from the stored message.
func (f *feedTx) PutMessage(m Message) error {
	old, had, err := f.stored(m.Channel, m.TS)
	if err != nil {
		return err
	}
	f.seen.ok = false
	if err := f.Tx.PutMessage(m); err != nil {
		return err
	}
	f.seen.ok, f.seen.had, f.seen.key, f.seen.m = true, true, Ref{m.Channel, m.TS}, m
	var prev *Message
	if had && old.LastPolledAt != nil {
		prev = &old
	}
	return f.messageChanges(prev, &m)
}

// DeleteMessage removes a message; a reply that was read is recorded as removed from
// its thread.
func (f *feedTx) DeleteMessage(channel string, ts TS) error {
	old, had, err := f.stored(channel, ts)
	if err != nil {
		return err
	}
	f.seen.ok = false
	if err := f.Tx.DeleteMessage(channel, ts); err != nil {
		return err
	}
	if !had || old.LastPolledAt == nil {
		return nil
	}
	kind := ChangeMessageDeleted
	if old.IsReply() {
		kind = ChangeReplyRemoved
	}
	c := f.messageEvent(kind, &old)
	c.Before = messageValue(&old, false)
	return f.emit(c)
}

// PutConversation stores c and records a change of status after the first one.
func (f *feedTx) PutConversation(c Conversation) error {
	old, had, err := f.Conversation(c.ID)
	if err != nil {
		return err
	}
	if err := f.Tx.PutConversation(c); err != nil {
		return err
	}
	if f.convs != nil {
		f.convs[c.ID] = c
	}
	if !had || old.Status == c.Status || old.Status == StatusPending || c.Status == StatusPending {
		return nil
	}
	return f.emit(Change{
		Kind: ChangeConversationStatus, Channel: c.ID,
		Before: &ChangeValue{Status: old.Status}, After: &ChangeValue{Status: c.Status},
	})
}

// PutUser stores u and records a new label. A failed lookup is not a rename, nor is
// the first successful one after it.
func (f *feedTx) PutUser(u User) error {
	old, had, err := f.User(u.ID)
	if err != nil {
		return err
	}
	if err := f.Tx.PutUser(u); err != nil {
		return err
	}
	if !had || old.LookupError != "" || u.LookupError != "" || old.Label() == u.Label() {
		return nil
	}
	return f.emit(Change{
		Kind: ChangeUserRenamed, User: u.ID,
		Before: &ChangeValue{Label: old.Label()}, After: &ChangeValue{Label: u.Label()},
	})
}

// messageChanges records what writing m over old (nil: not held, or only as a
// never-read placeholder) changed.
func (f *feedTx) messageChanges(old, m *Message) error {
	if m.LastPolledAt == nil {
		return nil // a placeholder: nothing read yet
	}
	if old == nil {
		return f.firstSeen(m)
	}
	if old.IsReply() && m.ThreadTS != old.ThreadTS {
		// Dropped from its thread but kept for its record key (deleted, missing):
		// one event says it all.
		c := f.messageEvent(ChangeReplyRemoved, old)
		c.Record = m.Record
		c.Before = messageValue(old, false)
		return f.emit(c)
	}
	if m.IsReply() && m.ThreadTS != old.ThreadTS {
		// Back in a thread (a record-keyed reply dropped once, read again): the
		// event carries the whole message, as for a reply first seen.
		c := f.messageEvent(ChangeReplyAdded, m)
		c.After = messageValue(m, true)
		return f.emit(c)
	}
	var out []Change
	reappeared := false
	switch {
	case !old.Deleted && m.Deleted:
		c := f.messageEvent(ChangeMessageDeleted, m)
		c.Before = messageValue(old, false)
		out = append(out, c)
	case old.Deleted && !m.Deleted:
		reappeared = true
	}
	switch {
	case old.MissingSince == nil && m.MissingSince != nil:
		out = append(out, f.messageEvent(ChangeMessageMissing, m))
	case old.MissingSince != nil && m.MissingSince == nil:
		reappeared = true
	}
	if reappeared {
		c := f.messageEvent(ChangeMessageReappeared, m)
		c.After = &ChangeValue{Deleted: m.Deleted}
		out = append(out, c)
	}
	if !m.Deleted && (old.Text != m.Text || !sameEdited(old.Edited, m.Edited)) {
		c := f.messageEvent(ChangeMessageEdited, m)
		c.Before, c.After = editValue(old), editValue(m)
		out = append(out, c)
	}
	out = f.reactionChanges(out, m, old.Reactions, m.Reactions)
	for _, c := range out {
		if err := f.emit(c); err != nil {
			return err
		}
	}
	return nil
}

// firstSeen records a message read for the first time: posted (or a reply added)
// when it is newer than its conversation's baseline, or backfill is on.
func (f *feedTx) firstSeen(m *Message) error {
	isNew, err := f.newerThanBaseline(m)
	if err != nil || !isNew && !f.cfg.Backfill {
		return err
	}
	kind := ChangeMessagePosted
	if m.IsReply() {
		kind = ChangeReplyAdded
	}
	c := f.messageEvent(kind, m)
	c.After = messageValue(m, true)
	if err := f.emit(c); err != nil {
		return err
	}
	if m.Deleted {
		if err := f.emit(f.messageEvent(ChangeMessageDeleted, m)); err != nil {
			return err
		}
	}
	if m.MissingSince != nil {
		// A tracked ts first "read" by a complete read that did not return it.
		return f.emit(f.messageEvent(ChangeMessageMissing, m))
	}
	return nil
}

// newerThanBaseline reports whether m was posted after its conversation's baseline:
// the conversation's first complete bulk window walk. Before it, every message read
// is the history being filled in, not news. The test is on ts, Slack's clock.
func (f *feedTx) newerThanBaseline(m *Message) (bool, error) {
	if f.convs == nil {
		f.convs = map[string]Conversation{}
	}
	c, ok := f.convs[m.Channel]
	if !ok {
		var err error
		if c, _, err = f.Conversation(m.Channel); err != nil {
			return false, err
		}
		f.convs[m.Channel] = c
	}
	return c.Baselined && c.FeedFrom.Before(m.TS), nil
}

// reactionChanges appends the reaction facts that changed from old to cur: per
// (reaction, user) while both users lists are complete, else the reaction's new
// count and users. Its cost is linear in the reactions and users of both: a message
// can carry thousands, and this runs inside the writer's transaction.
func (f *feedTx) reactionChanges(out []Change, m *Message, old, cur []Reaction) []Change {
	oldByName := make(map[string]*Reaction, len(old))
	for i := range old {
		if _, dup := oldByName[old[i].Name]; !dup {
			oldByName[old[i].Name] = &old[i]
		}
	}
	curByName := make(map[string]*Reaction, len(cur))
	for i := range cur {
		if _, dup := curByName[cur[i].Name]; !dup {
			curByName[cur[i].Name] = &cur[i]
		}
	}
	names := make([]string, 0, len(cur)+len(old))
	for _, r := range cur {
		names = append(names, r.Name)
	}
	for _, r := range old {
		if _, ok := curByName[r.Name]; !ok {
			names = append(names, r.Name)
		}
	}
	done := make(map[string]bool, len(names))
	for _, name := range names {
		if done[name] {
			continue
		}
		done[name] = true
		o, n := reactionOf(oldByName, name), reactionOf(curByName, name)
		if complete(o) && complete(n) {
			had, has := userSet(o.Users), userSet(n.Users)
			for _, u := range n.Users {
				if !had[u] {
					out = append(out, f.reactionEvent(ChangeReactionAdded, m, name, u))
					had[u] = true // listed twice: one fact
				}
			}
			for _, u := range o.Users {
				if !has[u] {
					out = append(out, f.reactionEvent(ChangeReactionRemoved, m, name, u))
					has[u] = true
				}
			}
			continue
		}
		if o.Count != n.Count || !slices.Equal(o.Users, n.Users) {
			c := f.messageEvent(ChangeReactionCountChanged, m)
			// Who reacted is unknown, so not known to be the app: own describes the
			// reaction, not the post (an own: false filter wants others' reactions
			// to the app's posts).
			c.Reaction, c.Own = name, false
			c.Before = countValue(o)
			c.After = countValue(n)
			out = append(out, c)
		}
	}
	return out
}

func reactionOf(byName map[string]*Reaction, name string) Reaction {
	if r, ok := byName[name]; ok {
		return *r
	}
	return Reaction{Name: name}
}

func userSet(users []string) map[string]bool {
	s := make(map[string]bool, len(users))
	for _, u := range users {
		s[u] = true
	}
	return s
}

// complete reports whether Slack listed every user of r (it truncates long lists).
func complete(r Reaction) bool { return len(r.Users) >= r.Count }

func (f *feedTx) reactionEvent(kind string, m *Message, name, user string) Change {
	c := f.messageEvent(kind, m)
	c.Reaction, c.User = name, user
	c.Own = false
	if id := f.identity(); id != nil && id.UserID != "" {
		c.Own = user == id.UserID
	}
	return c
}

func (f *feedTx) identity() *Identity {
	if !f.idLoaded {
		f.idLoaded = true
		if id, ok, err := f.Identity(); err == nil && ok {
			f.id = &id
		}
	}
	return f.id
}

func (f *feedTx) messageEvent(kind string, m *Message) Change {
	return Change{Kind: kind, Channel: m.Channel, TS: m.TS, ThreadTS: m.ThreadTS, Record: m.Record, Own: m.OwnPost}
}

// emit stamps c and queues it for flush. A reply added to or removed from a thread
// carries its parent's record key as thread_record: "a reply to record 42's message"
// passes a filter on that record.
func (f *feedTx) emit(c Change) error {
	if (c.Kind == ChangeReplyAdded || c.Kind == ChangeReplyRemoved) && c.ThreadTS != "" && c.ThreadTS != c.TS {
		parent, ok, err := f.Tx.Message(c.Channel, c.ThreadTS) // not f.Message: seen stays the message being written
		if err != nil {
			return err
		}
		if ok {
			c.ThreadRecord = parent.Record
		}
	}
	c.Version, c.ID, c.ObservedAt = ChangeVersion, NewEventID(), f.now
	f.pending = append(f.pending, c)
	return nil
}

// flush appends the transaction's changes to the feed, and to the outbox of every
// subscription they match: message_posted first, so that a new thread parent read
// with its thread comes before its replies; otherwise in the order found.
func (f *feedTx) flush() error {
	slices.SortStableFunc(f.pending, func(a, b Change) int {
		switch ap, bp := a.Kind == ChangeMessagePosted, b.Kind == ChangeMessagePosted; {
		case ap && !bp:
			return -1
		case bp && !ap:
			return 1
		}
		return 0
	})
	added := make([]bool, len(f.cfg.Subscriptions))
	for i := range f.pending {
		c := &f.pending[i]
		if err := f.AppendChange(c); err != nil {
			return err
		}
		f.last = c.Seq
		for j := range f.cfg.Subscriptions {
			s := &f.cfg.Subscriptions[j]
			if !s.Filter.Match(c) {
				continue
			}
			row := OutboxRow{Webhook: s.Name, Seq: c.Seq, Change: *c, Enqueued: f.now}
			if err := f.PutOutbox(row); err != nil {
				return err
			}
			added[j] = true
		}
	}
	f.pending = f.pending[:0]
	// The outbox of a receiver that is down grows with every change: past its bound
	// the oldest rows go (the feed still holds them, for changes.retention).
	for j, s := range f.cfg.Subscriptions {
		if added[j] && s.MaxRows > 0 {
			if _, err := f.TrimOutbox(s.Name, s.MaxRows); err != nil {
				return err
			}
		}
	}
	return nil
}

// messageValue is a message's small value: author, subtype, text when short; with
// its reactions when withReactions, when they are small too.
func messageValue(m *Message, withReactions bool) *ChangeValue {
	v := &ChangeValue{User: m.User, BotID: m.BotID, Subtype: m.Subtype, Edited: m.Edited, Deleted: m.Deleted, Text: smallText(m.Text)}
	if withReactions {
		if reactionsSize(m.Reactions) <= MaxChangeReactions {
			v.Reactions = m.Reactions
		} else {
			v.ReactionsOmitted = true
		}
	}
	return v
}

// countValue is one reaction's count and users, as reaction_count_changed carries
// them; a users list too long to carry is left out (UsersOmitted).
func countValue(r Reaction) *ChangeValue {
	v := &ChangeValue{Count: &r.Count, Users: r.Users}
	if reactionsSize([]Reaction{r}) > MaxChangeReactions {
		v.Users, v.UsersOmitted = nil, true
	}
	return v
}

// reactionsSize is about the length of rs in a change's JSON, in bytes (it counts
// the names and users, and a fixed cost per item; JSON escapes may add more).
func reactionsSize(rs []Reaction) int {
	n := 0
	for _, r := range rs {
		n += len(r.Name) + 32
		for _, u := range r.Users {
			n += len(u) + 3
		}
		if n > MaxChangeReactions {
			return n
		}
	}
	return n
}

func editValue(m *Message) *ChangeValue {
	return &ChangeValue{Text: smallText(m.Text), Edited: m.Edited}
}

func smallText(s string) *string {
	if len(s) > MaxChangeText {
		return nil
	}
	return &s
}

func sameEdited(a, b *Edited) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
