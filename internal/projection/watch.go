package projection

import (
	"errors"
	"io"
	"slices"
	"sync"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Touched is what one committed write transaction changed of what the projection
// shows: the message records put or deleted, the users put, whether any
// conversation or the identity (the team) was put, and whether the change feed grew.
type Touched struct {
	Messages      []rm.Ref
	Users         []string
	Conversations bool
	Identity      bool
	Feed          bool
}

func (t *Touched) empty() bool {
	return len(t.Messages) == 0 && len(t.Users) == 0 && !t.Conversations && !t.Identity && !t.Feed
}

// Watched is a readmodel.Store that reports, after each committed Update, the keys
// the transaction wrote (Touched) to the projectors subscribed to it. It is the
// writer's signal for what the change feed does not announce: read times
// (last_polled_at moves on every read, with no change row), history first read below
// a conversation's baseline, users' and conversations' other fields, record keys and
// the tracked set. Every component of the daemon that writes the store gets the same
// Watched, so no write escapes it; a write made while no Watched was there (another
// process, or one that died between its bbolt commit and the projector's SQL
// commit) is found by the sync every projector runs when it starts.
type Watched struct {
	rm.Store
	mu   sync.Mutex
	subs []func(Touched)
}

// Watch wraps s. Reads pass through unchanged.
func Watch(s rm.Store) *Watched { return &Watched{Store: s} }

// Subscribe registers fn to be called after every committed Update that touched
// something, outside the transaction, in commit order (Update calls are serialized by
// the store). fn must not block: it is called on the writer's goroutine.
func (w *Watched) Subscribe(fn func(Touched)) (cancel func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs = append(w.subs, fn)
	i := len(w.subs) - 1
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.subs[i] = nil
	}
}

// Update runs fn through a recording transaction and, once the store committed it,
// reports what it touched.
func (w *Watched) Update(fn func(rm.Tx) error) error {
	var rec *recordingTx
	err := w.Store.Update(func(tx rm.Tx) error {
		rec = &recordingTx{Tx: tx, users: map[string]bool{}, msgs: map[rm.Ref]bool{}}
		return fn(rec)
	})
	if err != nil || rec == nil {
		return err
	}
	t := rec.touched()
	if t.empty() {
		return nil
	}
	w.mu.Lock()
	subs := slices.Clone(w.subs)
	w.mu.Unlock()
	for _, fn := range subs {
		if fn != nil {
			fn(t)
		}
	}
	return nil
}

// recordingTx notes the keys written through it. Every Tx method that writes
// something the projection shows is overridden here; TestRecordingTxCoversEveryWrite
// makes a new write method of readmodel.Tx decide which it is.
type recordingTx struct {
	rm.Tx
	msgs          map[rm.Ref]bool
	order         []rm.Ref
	users         map[string]bool
	userOrder     []string
	conversations bool
	identity      bool
	feed          bool
}

func (r *recordingTx) msg(ref rm.Ref) {
	if !r.msgs[ref] {
		r.msgs[ref] = true
		r.order = append(r.order, ref)
	}
}

func (r *recordingTx) PutMessage(m rm.Message) error {
	if err := r.Tx.PutMessage(m); err != nil {
		return err
	}
	r.msg(rm.Ref{Channel: m.Channel, TS: m.TS})
	return nil
}

func (r *recordingTx) DeleteMessage(channel string, ts rm.TS) error {
	if err := r.Tx.DeleteMessage(channel, ts); err != nil {
		return err
	}
	r.msg(rm.Ref{Channel: channel, TS: ts})
	return nil
}

func (r *recordingTx) PutUser(u rm.User) error {
	if err := r.Tx.PutUser(u); err != nil {
		return err
	}
	if !r.users[u.ID] {
		r.users[u.ID] = true
		r.userOrder = append(r.userOrder, u.ID)
	}
	return nil
}

func (r *recordingTx) PutConversation(c rm.Conversation) error {
	if err := r.Tx.PutConversation(c); err != nil {
		return err
	}
	r.conversations = true
	return nil
}

func (r *recordingTx) PutIdentity(id rm.Identity) error {
	if err := r.Tx.PutIdentity(id); err != nil {
		return err
	}
	r.identity = true
	return nil
}

// PutWatched and DeleteWatched change a message's watched column.
func (r *recordingTx) PutWatched(ref rm.Ref) error {
	if err := r.Tx.PutWatched(ref); err != nil {
		return err
	}
	r.msg(ref)
	return nil
}

func (r *recordingTx) DeleteWatched(ref rm.Ref) error {
	if err := r.Tx.DeleteWatched(ref); err != nil {
		return err
	}
	r.msg(ref)
	return nil
}

func (r *recordingTx) AppendChange(c *rm.Change) error {
	if err := r.Tx.AppendChange(c); err != nil {
		return err
	}
	r.feed = true
	return nil
}

func (r *recordingTx) touched() Touched {
	return Touched{Messages: r.order, Users: r.userOrder, Conversations: r.conversations, Identity: r.identity, Feed: r.feed}
}

// Backup copies the store when it can (boltstore.Store.Backup): the HTTP API's
// GET /v1/backup reaches it through the Watched it is given.
func (w *Watched) Backup(out io.Writer) (int64, error) {
	b, ok := w.Store.(interface {
		Backup(io.Writer) (int64, error)
	})
	if !ok {
		return 0, errors.New("this store cannot be backed up")
	}
	return b.Backup(out)
}
