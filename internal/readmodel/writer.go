package readmodel

import (
	"slices"
	"sync"
	"time"
)

// Writer is the one place the poller writes the model: every method is one store
// transaction that applies the replace-on-read rules to what a read returned, so a
// crash leaves each read applied whole or not at all. Each transaction writes through
// a feedTx, which appends what changed to the change feed in the same transaction.
// The streams of a tick call it concurrently; bbolt runs one write transaction at a
// time, and mu keeps the read-modify-write of each method whole for stores that do
// not. Every method's error is the store's, wrapped so that errors.Is(err, ErrStore).
type Writer struct {
	store Store
	mu    sync.Mutex
	// feed configures the change feed; now stamps its changes (the poller's clock).
	feed FeedConfig
	now  func() time.Time
	// onChanges, if set, is called with the last seq after a commit that appended
	// changes (outside the transaction: long polls and deliverers wake on it).
	onChanges func(last uint64)
}

// WriterOptions configure a Writer.
type WriterOptions struct {
	// Feed configures the change feed: backfill and the webhooks' subscriptions.
	Feed FeedConfig
	// Now stamps the changes the Writer records (default time.Now).
	Now func() time.Time
	// OnChanges, if set, is called with the last seq after each commit that appended
	// changes, outside the transaction.
	OnChanges func(last uint64)
}

// NewWriter returns the Writer of store.
func NewWriter(store Store, o WriterOptions) *Writer {
	return &Writer{store: store, feed: o.Feed, now: o.Now, onChanges: o.OnChanges}
}

func (w *Writer) update(fn func(Tx) error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last uint64
	err := w.store.Update(func(tx Tx) error {
		ftx := newFeedTx(tx, &w.feed, w.clock())
		if err := fn(ftx); err != nil {
			return err
		}
		err := ftx.flush()
		last = ftx.last
		return err
	})
	if err == nil && last > 0 && w.onChanges != nil {
		w.onChanges(last)
	}
	return StoreErr(err)
}

func (w *Writer) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
}

// newer reports whether a stored read time is newer than a read made at: after it,
// and not after the clock now. A stored time in the future was taken with the clock
// ahead (it has since been set back): no read of this process can be newer than the
// clock, so it is of unknown age, not newer; taken as newer, it turned away every
// read of the message until the clock caught up with it, for as long as the clock
// had been ahead.
func (w *Writer) newer(stored *time.Time, at time.Time) bool {
	return stored != nil && stored.After(at) && !stored.After(w.clock())
}

// WriteCounter is implemented by a Store that counts the message values it writes:
// MessagesWritten returns how many committed transactions have put since it opened —
// new messages and changed content, not a read that found a message as stored, which
// changes only its read times.
type WriteCounter interface {
	MessagesWritten() uint64
}

// MessagesWritten returns the store's count of message values written (see
// WriteCounter), 0 for a store that does not count them. The difference over a tick is
// the tick's messages_written.
func (w *Writer) MessagesWritten() uint64 {
	if c, ok := w.store.(WriteCounter); ok {
		return c.MessagesWritten()
	}
	return 0
}

// Applied is one message as stored after a read, with what the read implies next.
type Applied struct {
	Message
	// Unverified: stored replies no whole-thread read vouches for (see
	// unverifiedReplies): the thread must be read even if the watermark agrees.
	Unverified bool
	// Fresh: the store did not hold the message before (or only as a never-read
	// placeholder): a new message for the head's arrival rate.
	Fresh bool
}

// ApplyReads writes messages just read (each replaced whole: README, "Replace on
// read"), tracks the parent of a reply the store lacks, and reports each one written.
// started is when the call that read them started, and becomes their last_polled_at:
// the streams of a tick read concurrently, and a read that started before the stored
// copy's own read is older than it and is not applied (the newer read wins, whatever
// order the calls finish in: a slow answer must not put back what a later read
// replaced).
func (w *Writer) ApplyReads(msgs []Message, id *Identity, started time.Time) ([]Applied, error) {
	now := started
	var out []Applied
	err := w.update(func(tx Tx) error {
		out = out[:0]
		for _, read := range msgs {
			old, had, err := tx.Message(read.Channel, read.TS)
			if err != nil {
				return err
			}
			var prev *Message
			if had {
				prev = &old
				if w.newer(old.LastPolledAt, started) {
					continue // a newer read is stored
				}
			}
			m := merge(prev, read, id, now)
			if err := tx.PutMessage(m); err != nil {
				return err
			}
			if err := trackParent(tx, &m); err != nil {
				return err
			}
			u, err := unverifiedReplies(tx, &m)
			if err != nil {
				return err
			}
			out = append(out, Applied{Message: m, Unverified: u, Fresh: !had || old.LastPolledAt == nil})
		}
		return nil
	})
	return out, err
}

// TrackUnread stores a never-read placeholder for each ts the store does not hold, so
// the tail reads it (never read sorts first).
func (w *Writer) TrackUnread(ch string, tss []TS) error {
	if len(tss) == 0 {
		return nil
	}
	return w.update(func(tx Tx) error {
		for _, ts := range tss {
			if _, _, err := trackIfAbsent(tx, ch, ts); err != nil {
				return err
			}
		}
		return nil
	})
}

// MarkMissing applies absence-is-not-erasure (README, "Replace on read") after a
// complete read of the timeline range from oldest to latest (oldest excluded unless
// inclusive): stored timeline messages in it that the read did not return get
// missing_since (kept if already set); nothing else is changed or erased. touch also
// advances their last_polled_at: a range read re-reads them, and a message absent from
// it must not stay first in the rotation. Never-read placeholders are left alone and
// returned: a complete history read missing them may mean a thread reply, which only
// conversations.replies can tell (locate).
func (w *Writer) MarkMissing(ch string, oldest, latest TS, inclusive bool, seen map[TS]bool, touch bool, now time.Time) (placeholders []Ref, err error) {
	err = w.update(func(tx Tx) error {
		placeholders = placeholders[:0]
		var gone []Message
		err := tx.Timeline(ch, oldest, latest, func(m Message) error {
			if seen[m.TS] || (!inclusive && m.TS == oldest) {
				return nil
			}
			if m.LastPolledAt == nil && touch {
				placeholders = append(placeholders, Ref{ch, m.TS})
				return nil
			}
			if m.MissingSince == nil || touch {
				gone = append(gone, m)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, m := range gone {
			if m.MissingSince == nil {
				m.MissingSince = &now
			}
			if touch {
				m.LastPolledAt = &now
			}
			if err := tx.PutMessage(m); err != nil {
				return err
			}
		}
		return nil
	})
	return placeholders, err
}

// MarkGone records that a complete read covering ref did not return it: missing_since
// is set (kept if already set) and last_polled_at advances; the content stays.
func (w *Writer) MarkGone(ref Ref, now time.Time) error {
	return w.update(func(tx Tx) error {
		m, ok, err := tx.Message(ref.Channel, ref.TS)
		if err != nil || !ok {
			return err
		}
		if m.MissingSince == nil {
			m.MissingSince = &now
		}
		m.LastPolledAt = &now
		return tx.PutMessage(m)
	})
}

// WriteThread replaces a fully read thread in one transaction: stale replies deleted,
// every reply replaced whole, the parent refreshed from its own element, and the
// parent's reply watermark put last. It returns the messages written. now is when the
// thread's first page was asked for: a thread read whole since then is newer, and this
// read writes nothing.
func (w *Writer) WriteThread(parent Ref, latestReply TS, r *ThreadRead, id *Identity, now time.Time) ([]Message, error) {
	var written []Message
	err := w.update(func(tx Tx) error {
		written = written[:0]
		p, ok, err := tx.Message(parent.Channel, parent.TS)
		if err != nil {
			return err
		}
		// The streams read concurrently: a thread read whole since this one started is
		// newer; and a parent read since then that saw another latest_reply says this
		// thread read is older than what the store holds (the next read of the parent
		// queues the thread again).
		newerParent := ok && w.newer(p.LastPolledAt, now)
		switch {
		case ok && w.newer(p.ThreadSyncedAt, now):
			return nil
		case newerParent && r.Parent != nil && p.LatestReply != r.Parent.LatestReply:
			return nil
		}
		stored, err := tx.Replies(parent.Channel, parent.TS)
		if err != nil {
			return err
		}
		// An undecodable reply the store does not hold leaves the thread incomplete:
		// what was read is written, but the watermark stays where it was, so the
		// thread shows as not read whole and is read again.
		kept := 0
		for _, old := range stored {
			if r.kept[old.TS] {
				kept++
			}
			if _, ok := r.byTS[old.TS]; !ok && !r.kept[old.TS] {
				if err := dropReply(tx, old, now); err != nil {
					return err
				}
			}
		}
		incomplete := kept < len(r.kept)
		for _, read := range r.Replies {
			if read.ThreadTS == "" {
				read.ThreadTS = parent.TS // a reply always belongs to the thread it came from
			}
			old, had, err := tx.Message(read.Channel, read.TS)
			if err != nil {
				return err
			}
			if had && w.newer(old.LastPolledAt, now) {
				continue // read again since (reactions.get): the newer read stays
			}
			m, err := applyRead(tx, read, id, now)
			if err != nil {
				return err
			}
			written = append(written, m)
		}
		watermark := latestReply
		if r.Parent != nil {
			watermark = r.Parent.LatestReply
			if !newerParent {
				var prev *Message
				if ok {
					prev = &p
				}
				p = merge(prev, *r.Parent, id, now)
				written = append(written, p)
			}
		} else if !ok {
			p = Message{Channel: parent.Channel, TS: parent.TS, ThreadTS: parent.TS, LatestReply: latestReply}
		}
		if !incomplete {
			// An incomplete read keeps the thread's place at the front of the thread
			// rotation too, so it is read again on the next tick, not a rotation later.
			p.ReplyWatermark = watermark
			p.ThreadSyncedAt = &now
		}
		return tx.PutMessage(p)
	})
	return written, err
}

// ThreadGone applies thread_not_found, Slack's final answer that the thread is gone:
// the reply set becomes empty, the parent is marked deleted, and its watermark becomes
// its last read latest_reply so the thread is not asked for again.
func (w *Writer) ThreadGone(parent Ref, now time.Time) error {
	return w.update(func(tx Tx) error {
		stored, err := tx.Replies(parent.Channel, parent.TS)
		if err != nil {
			return err
		}
		for _, old := range stored {
			if err := dropReply(tx, old, now); err != nil {
				return err
			}
		}
		p, ok, err := tx.Message(parent.Channel, parent.TS)
		if err != nil || !ok {
			return err
		}
		p.Deleted = true
		p.ThreadGone = true
		p.ReplyWatermark = p.LatestReply
		return tx.PutMessage(p)
	})
}

// AdoptReply writes, in one transaction, what locate learned: the reply (as read, or
// the placeholder moved under threadTS) and its parent (as read, or a never-read
// placeholder when the store does not hold it). It returns the messages written and
// the parent when the store holds it read, with whether its thread must be read even
// if its watermark agrees (force).
func (w *Writer) AdoptReply(ref Ref, threadTS TS, self, parent *Message, id *Identity, now time.Time) (written []Message, thread *Message, force bool, err error) {
	err = w.update(func(tx Tx) error {
		written, thread, force = written[:0], nil, self == nil
		if self != nil {
			m, err := applyRead(tx, *self, id, now)
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
			m, err := applyRead(tx, *parent, id, now)
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
	return written, thread, force, err
}

// UpdateConversation applies fn to the stored conversation id in one transaction.
func (w *Writer) UpdateConversation(id string, fn func(*Conversation)) error {
	return w.update(func(tx Tx) error {
		c, ok, err := tx.Conversation(id)
		if err != nil {
			return err
		}
		if !ok {
			c = Conversation{ID: id, Status: StatusPending}
		}
		fn(&c)
		return tx.PutConversation(c)
	})
}

// EnsureConversations stores every configured conversation not stored yet and
// returns the configured and discovered ones.
func (w *Writer) EnsureConversations(configured []string) ([]Conversation, error) {
	var convs []Conversation
	err := w.update(func(tx Tx) error {
		convs = convs[:0]
		for _, id := range configured {
			if _, ok, err := tx.Conversation(id); err != nil {
				return err
			} else if !ok {
				if err := tx.PutConversation(Conversation{ID: id, Status: StatusPending}); err != nil {
					return err
				}
			}
		}
		return tx.Conversations(func(c Conversation) error {
			if c.Discovered || slices.Contains(configured, c.ID) {
				convs = append(convs, c)
			}
			return nil
		})
	})
	return convs, err
}

// PutDiscovered stores what users.conversations listed: new conversations as pending
// and discovered, every one's info refreshed.
func (w *Writer) PutDiscovered(found []ConversationInfo, now time.Time) error {
	return w.update(func(tx Tx) error {
		for _, info := range found {
			c, ok, err := tx.Conversation(info.ID)
			if err != nil {
				return err
			}
			if !ok {
				c = Conversation{ID: info.ID, Status: StatusPending, Discovered: true}
			}
			c.ApplyInfo(info, now)
			if err := tx.PutConversation(c); err != nil {
				return err
			}
		}
		return nil
	})
}

// Retire takes messages the tracking policy no longer rotates out of the rotation;
// they keep their content. A message that became watched meanwhile is left alone.
func (w *Writer) Retire(refs []Ref) error {
	return w.update(func(tx Tx) error {
		for _, ref := range refs {
			m, ok, err := tx.Message(ref.Channel, ref.TS)
			if err != nil {
				return err
			}
			watched, err := tx.IsWatched(ref)
			if err != nil {
				return err
			}
			if !ok || watched || m.Retired || m.IsReply() {
				continue
			}
			m.Retired = true
			if err := tx.PutMessage(m); err != nil {
				return err
			}
			c, ok, err := tx.Conversation(ref.Channel)
			if err != nil || !ok {
				return err
			}
			if c.RetiredTo.Before(ref.TS) {
				c.RetiredTo = ref.TS
				if err := tx.PutConversation(c); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Unretire brings the retired messages of ch newer than cutoff ("" for all) back into
// the rotation, after the horizon grew, and lowers RetiredTo to match.
func (w *Writer) Unretire(ch string, cutoff TS) (int, error) {
	n := 0
	err := w.update(func(tx Tx) error {
		n = 0
		c, ok, err := tx.Conversation(ch)
		if err != nil || !ok || c.RetiredTo == "" {
			return err
		}
		var back []Message
		err = tx.Timeline(ch, cutoff, c.RetiredTo, func(m Message) error {
			if m.Retired && (cutoff == "" || cutoff.Before(m.TS)) {
				back = append(back, m)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, m := range back {
			m.Retired = false
			if err := tx.PutMessage(m); err != nil {
				return err
			}
		}
		n = len(back)
		c.RetiredTo = cutoff
		return tx.PutConversation(c)
	})
	return n, err
}

func (w *Writer) PutUser(u User) error {
	return w.update(func(tx Tx) error { return tx.PutUser(u) })
}

func (w *Writer) PutIdentity(id Identity) error {
	return w.update(func(tx Tx) error { return tx.PutIdentity(id) })
}

func (w *Writer) PutLastTick(s TickSummary) error {
	return w.update(func(tx Tx) error { return tx.PutLastTick(s) })
}

// ThreadRead is a whole thread as conversations.replies returned it, page by page:
// NewThreadRead, then Add for each message and Keep for each undecodable reply of
// every page; Writer.WriteThread writes it once every page was read.
type ThreadRead struct {
	// Parent is the parent element, if any page carried it.
	Parent *Message
	// Replies are the replies, without the parent, in the order Slack sent them; a
	// reply repeated on a later page replaces its earlier copy.
	Replies []Message
	// kept are the replies that could not be decoded: their stored copies stay.
	kept map[TS]bool
	// byTS indexes Replies.
	byTS map[TS]int
}

// NewThreadRead returns an empty thread read.
func NewThreadRead() *ThreadRead {
	return &ThreadRead{kept: map[TS]bool{}, byTS: map[TS]int{}}
}

// Add adds a message of a page of the thread of parentTS. The parent is identified by
// its ts (ts == thread_ts), never by its place: Slack may send it first on every
// page, or only on the first.
func (r *ThreadRead) Add(parentTS TS, m Message) {
	if m.TS == parentTS {
		r.Parent = &m
		return
	}
	if i, dup := r.byTS[m.TS]; dup {
		r.Replies[i] = m
		return
	}
	r.byTS[m.TS] = len(r.Replies)
	r.Replies = append(r.Replies, m)
}

// Keep notes a reply of ts that could not be decoded: its stored copy stays as it is
// (unreadable is not absent).
func (r *ThreadRead) Keep(ts TS) { r.kept[ts] = true }

// Kept is the number of undecodable replies the read met.
func (r *ThreadRead) Kept() int { return len(r.kept) }

// dropReply removes a reply that a whole-thread read (or thread_not_found) says is
// gone. A reply someone tracked — it carries a record key, or track added it and it
// was never read — is kept instead, out of its thread, as deleted and missing since
// now: the record stays attached and tells what became of its message.
func dropReply(tx Tx, old Message, now time.Time) error {
	if old.Record == "" && old.LastPolledAt != nil {
		return tx.DeleteMessage(old.Channel, old.TS)
	}
	old.ThreadTS, old.Deleted, old.LastPolledAt = "", true, &now
	if old.MissingSince == nil {
		old.MissingSince = &now
	}
	return tx.PutMessage(old)
}
