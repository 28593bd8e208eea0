package projection

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Options configure a Projector. Store and Target are required.
type Options struct {
	// Store is the read model, watched: the projector subscribes to what each
	// commit touched. A Store that is not a *Watched (a read-only store, as the
	// offline `projection rebuild` opens) is only synced.
	Store rm.Store
	// Target is the database written to.
	Target *Target
	// Log gets the sync's progress, errors and a line per rebuild; nil discards.
	Log *slog.Logger
	// Now is the clock of changed_at, lag and status; nil is time.Now.
	Now func() time.Time
	// BatchChanges bounds the feed changes one transaction applies (default 1000);
	// BatchKeys the messages it reads (default 2000).
	BatchChanges, BatchKeys int
	// Poll is how often an idle projector looks at the feed's bounds anyway, to
	// keep its lag current (default 5s).
	Poll time.Duration
	// ProgressEvery is how often a sync logs its progress (default 10s).
	ProgressEvery time.Duration
	// Gather is the least time between two batches (default 100ms): commits that
	// come faster are applied together, one SQL transaction for many bbolt ones.
	Gather time.Duration
	// OnBatch, if set, is called after each committed transaction: the sync's (Sync
	// set) and each batch's.
	OnBatch func(Batch)
}

// Batch describes one committed transaction of the projector.
type Batch struct {
	Target string
	// Sync is set for a sync (or rebuild) from a read of the whole store.
	Sync    bool
	Rebuild bool
	// Cursor is the feed seq the projection reached; Changes the feed changes and
	// Keys the messages the transaction read.
	Cursor        uint64
	Changes, Keys int
	Counts
	Took time.Duration
}

// Projector keeps one Target equal to the store: at start (and when asked to
// rebuild, or when it fell behind the feed's retention) it syncs the target from a
// read of the whole store; then it applies, in batches, each in one SQL
// transaction with the cursor, the feed's changes after the cursor and the keys the
// store's commits touched (Watched). Rows are written from the store's current state
// of each key, never from a change's payload, so a change applied twice has one
// effect, and what the feed does not announce (read times, history read below the
// baseline, users, record keys) is projected too. See docs/sql.md.
type Projector struct {
	o Options

	mu      sync.Mutex
	pending pending
	wake    chan struct{}
	rebuild bool
	st      Status
	// team is the workspace the store belongs to (Identity.TeamID), "" until known.
	team string
	// cursor is the feed seq applied through; synced is set once this process
	// synced the target (or found it synced and current).
	cursor uint64
	synced bool
	// firstPending is when the first change after the cursor was observed (zero
	// when the cursor is at the feed's last seq).
	firstPending time.Time
	// busy is set while a batch that took the pending keys runs.
	busy bool
}

// pending is what commits touched since the last batch took it.
type pending struct {
	msgs  map[rm.Ref]bool
	order []rm.Ref
	users map[string]bool
	// threads are parents whose replies are to be read (a parent new to the
	// projection).
	threads map[rm.Ref]bool
	// channels are conversations new to the projection, whose messages (written
	// before the conversation) are to be read.
	channels map[string]bool
	convs    bool
	ident    bool
	feed     bool
	since    time.Time
}

func (p *pending) empty() bool {
	return len(p.order) == 0 && len(p.users) == 0 && len(p.threads) == 0 && len(p.channels) == 0 && !p.convs && !p.ident && !p.feed
}

func (p *pending) addChannel(ch string) {
	if p.channels == nil {
		p.channels = map[string]bool{}
	}
	p.channels[ch] = true
}

func (p *pending) addThread(ref rm.Ref) {
	if p.threads == nil {
		p.threads = map[rm.Ref]bool{}
	}
	p.threads[ref] = true
}

func (p *pending) addMsg(ref rm.Ref) {
	if p.msgs == nil {
		p.msgs = map[rm.Ref]bool{}
	}
	if !p.msgs[ref] {
		p.msgs[ref] = true
		p.order = append(p.order, ref)
	}
}

func (p *pending) addUser(id string) {
	if p.users == nil {
		p.users = map[string]bool{}
	}
	p.users[id] = true
}

// merge adds o to p (a batch that failed gives its keys back).
func (p *pending) merge(o pending, now time.Time) {
	for _, r := range o.order {
		p.addMsg(r)
	}
	for id := range o.users {
		p.addUser(id)
	}
	for r := range o.threads {
		p.addThread(r)
	}
	for ch := range o.channels {
		p.addChannel(ch)
	}
	p.convs, p.ident, p.feed = p.convs || o.convs, p.ident || o.ident, p.feed || o.feed
	if p.since.IsZero() || (!o.since.IsZero() && o.since.Before(p.since)) {
		p.since = o.since
	}
	if p.since.IsZero() && !p.empty() {
		p.since = now
	}
}

// New returns a projector; Run runs it.
func New(o Options) *Projector {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BatchChanges <= 0 {
		o.BatchChanges = 1000
	}
	if o.BatchKeys <= 0 {
		o.BatchKeys = 2000
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 10 * time.Second
	}
	if o.Gather <= 0 {
		o.Gather = 100 * time.Millisecond
	}
	p := &Projector{o: o, wake: make(chan struct{}, 1)}
	p.st = Status{Target: o.Target.Kind(), Name: o.Target.Name(), State: StateStarting}
	return p
}

// touched is the Watched subscription: it runs on the writer's goroutine, so it
// only notes the keys and wakes the loop.
func (p *Projector) touched(t Touched) {
	p.mu.Lock()
	if p.pending.empty() {
		p.pending.since = p.o.Now()
	}
	for _, r := range t.Messages {
		p.pending.addMsg(r)
	}
	for _, id := range t.Users {
		p.pending.addUser(id)
	}
	p.pending.convs = p.pending.convs || t.Conversations
	p.pending.ident = p.pending.ident || t.Identity
	p.pending.feed = p.pending.feed || t.Feed
	p.mu.Unlock()
	p.poke()
}

func (p *Projector) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// RequestRebuild makes the running projector drop the team's rows and sync them
// again from the store, in one transaction (readers see the old rows until it
// commits).
func (p *Projector) RequestRebuild() {
	p.mu.Lock()
	p.rebuild = true
	p.mu.Unlock()
	p.poke()
}

// Run syncs the target, then keeps it current until ctx ends. Errors of the store or
// the database are logged, shown in Status and retried with a backoff (1 s doubling
// to 1 min); only ctx ends Run, with nil.
func (p *Projector) Run(ctx context.Context) error {
	if w, ok := p.o.Store.(*Watched); ok {
		defer w.Subscribe(p.touched)()
	}
	backoff := time.Second
	for ctx.Err() == nil {
		idle, err := p.step(ctx)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			p.setError(err)
			p.o.Log.Error("projection: failed; retrying", "target", p.o.Target.Kind(), "db", p.o.Target.Name(), "err", err, "retry_in", backoff)
			p.sleep(ctx, backoff)
			backoff = min(2*backoff, time.Minute)
			continue
		}
		backoff = time.Second
		if idle {
			p.sleep(ctx, p.o.Poll)
			continue
		}
		if p.backlog() {
			continue // a full batch: more is waiting already
		}
		// Let the next commits gather into the next batch.
		t := time.NewTimer(p.o.Gather)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}

// sleep waits for d, a commit's poke, or ctx.
func (p *Projector) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-p.wake:
	case <-t.C:
	}
}

// step does the next piece of work: learn the team, sync, or apply one batch. idle
// is true when there was nothing to do.
func (p *Projector) step(ctx context.Context) (idle bool, err error) {
	p.mu.Lock()
	identChanged := p.pending.ident
	p.pending.ident = false
	rebuild := p.rebuild
	p.mu.Unlock()
	if p.team == "" || identChanged {
		team, err := p.readTeam()
		if err != nil {
			return false, err
		}
		if team == "" {
			p.setState(StateWaiting, "")
			return true, nil
		}
		if team != p.team {
			p.mu.Lock()
			p.team, p.synced = team, false
			p.mu.Unlock()
		}
	}
	if !p.synced || rebuild {
		// Busy from the moment the request is taken, so that Idle cannot see the
		// projector current between the request and the sync.
		p.mu.Lock()
		p.rebuild, p.busy = false, true
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.busy = false
			p.mu.Unlock()
		}()
		return false, p.Sync(ctx, rebuild)
	}
	return p.applyBatch(ctx)
}

func (p *Projector) readTeam() (string, error) {
	var team string
	err := p.o.Store.View(func(tx rm.Tx) error {
		id, ok, err := tx.Identity()
		if ok {
			team = id.TeamID
		}
		return err
	})
	return team, err
}

// backlog reports whether the last batch was full: more keys are pending than a
// batch takes, or the feed holds more changes after the cursor.
func (p *Projector) backlog() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pending.order) >= p.o.BatchKeys || p.st.LastSeq > p.cursor
}

// applyBatch applies the feed's changes after the cursor (at most BatchChanges) and
// the pending keys (at most BatchKeys) in one SQL transaction with the new cursor.
func (p *Projector) applyBatch(ctx context.Context) (idle bool, err error) {
	start := p.o.Now()
	defer func() {
		p.mu.Lock()
		p.busy = false
		p.mu.Unlock()
	}()
	p.mu.Lock()
	take := p.pending
	p.pending = pending{}
	p.busy = true
	if len(take.order) > p.o.BatchKeys {
		rest := take.order[p.o.BatchKeys:]
		take.order = take.order[:p.o.BatchKeys]
		for _, r := range rest {
			p.pending.addMsg(r)
			delete(take.msgs, r)
		}
		p.pending.since = take.since
	}
	p.mu.Unlock()
	giveBack := func() {
		p.mu.Lock()
		p.pending.merge(take, p.o.Now())
		p.mu.Unlock()
	}

	var (
		oldest, last uint64
		cursorAt     *time.Time
		cursor       = p.cursor
		keys         = append([]rm.Ref(nil), take.order...)
		inBatch      = map[rm.Ref]bool{}
		users        = map[string]bool{}
		convs        = take.convs
		rows         = map[rm.Ref]*messageRow{}
		userRows     []userRow
		absentUsers  []string
		convRows     []conversationRow
		nChanges     int
		behind       bool
		firstPending time.Time
	)
	for _, k := range keys {
		inBatch[k] = true
	}
	for id := range take.users {
		users[id] = true
	}
	err = p.o.Store.View(func(tx rm.Tx) error {
		var err error
		if oldest, last, err = tx.ChangeBounds(); err != nil {
			return err
		}
		if cursor > last {
			// The feed restarted below the cursor (a store restored from a backup):
			// the projection cannot tell what it applied; sync it whole.
			behind = true
			return nil
		}
		if cursor < last && oldest > cursor+1 {
			behind = true // changes the projection never applied were pruned
			return nil
		}
		err = tx.Changes(cursor, func(c rm.Change) error {
			if nChanges == p.o.BatchChanges {
				return rm.ErrStopIteration
			}
			nChanges++
			cursor = c.Seq
			at := c.ObservedAt
			cursorAt = &at
			switch {
			case c.Kind == rm.ChangeUserRenamed:
				users[c.User] = true
			case c.Kind == rm.ChangeConversationStatus:
				convs = true
			case c.Channel != "" && c.TS != "":
				ref := rm.Ref{Channel: c.Channel, TS: c.TS}
				if !inBatch[ref] {
					inBatch[ref] = true
					keys = append(keys, ref)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if cursor < last {
			// What is left of the feed: the lag's age is its first change's.
			_ = tx.Changes(cursor, func(c rm.Change) error {
				firstPending = c.ObservedAt
				return rm.ErrStopIteration
			})
		}
		for ch := range take.channels {
			err := walkChannel(tx, ch, "", func(m *rm.Message, _ bool) error {
				if ref := (rm.Ref{Channel: ch, TS: m.TS}); !inBatch[ref] {
					inBatch[ref] = true
					keys = append(keys, ref)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		for parent := range take.threads {
			replies, err := tx.Replies(parent.Channel, parent.TS)
			if err != nil {
				return err
			}
			for _, m := range replies {
				ref := rm.Ref{Channel: m.Channel, TS: m.TS}
				if !inBatch[ref] {
					inBatch[ref] = true
					keys = append(keys, ref)
				}
			}
		}
		if len(keys) == 0 && len(users) == 0 && !convs {
			return nil
		}
		r, err := newReader(tx)
		if err != nil {
			return err
		}
		for _, k := range keys {
			row, ok, err := r.message(k)
			if err != nil {
				return err
			}
			if ok {
				rows[k] = &row
			}
		}
		for id := range users {
			if u := r.user(id); u != nil && !rm.IsBotID(id) {
				userRows = append(userRows, userRowOf(u))
			} else {
				absentUsers = append(absentUsers, id)
			}
		}
		if convs {
			for _, c := range r.convs {
				convRows = append(convRows, conversationRowOf(c))
			}
		}
		return nil
	})
	if err != nil {
		giveBack()
		return false, fmt.Errorf("reading the store: %w", err)
	}
	if behind {
		giveBack()
		p.o.Log.Warn("projection: the change feed no longer holds the changes after the projection's cursor (behind changes.retention, or the store was restored): syncing from the store",
			"target", p.o.Target.Kind(), "cursor", p.cursor, "oldest", oldest, "last", last)
		p.mu.Lock()
		p.synced = false
		p.mu.Unlock()
		return false, nil
	}
	p.setFeed(last, firstPending)
	if len(keys) == 0 && len(users) == 0 && !convs && cursor == p.cursor {
		p.setState(StateCurrent, "")
		return true, nil
	}
	p.o.Log.Debug("projection: applying a batch", "target", p.o.Target.Kind(), "changes", nChanges, "messages", len(keys), "cursor", cursor)
	b, err := p.o.Target.begin(ctx, p.team, int64(cursor), p.o.Now())
	if err != nil {
		giveBack()
		return false, err
	}
	requeue, threads, channels, err := p.applyRows(ctx, b, keys, rows, userRows, absentUsers, convRows, convs)
	if err == nil {
		if cursorAt == nil {
			cursorAt = p.st.CursorAt
		}
		err = b.saveState(ctx, cursorAt, false)
	}
	if err == nil {
		err = b.commit()
	}
	if err != nil {
		b.rollback()
		giveBack()
		return false, err
	}
	p.mu.Lock()
	p.cursor = cursor
	for _, r := range requeue {
		p.pending.addMsg(r)
	}
	for _, r := range threads {
		p.pending.addThread(r)
	}
	for _, ch := range channels {
		p.pending.addChannel(ch)
	}
	if !p.pending.empty() && p.pending.since.IsZero() {
		p.pending.since = p.o.Now()
	}
	p.mu.Unlock()
	batch := Batch{Target: p.o.Target.Kind(), Cursor: cursor, Changes: nChanges, Keys: len(keys), Counts: b.stats, Took: p.o.Now().Sub(start)}
	p.applied(batch, cursorAt)
	p.o.Log.Debug("projection: applied a batch", "target", p.o.Target.Kind(), "cursor", cursor, "inserted", b.stats.Inserted,
		"updated", b.stats.Updated, "touched", b.stats.Touched, "deleted", b.stats.Deleted, "took", batch.Took)
	if p.o.OnBatch != nil {
		p.o.OnBatch(batch)
	}
	return false, nil
}

// applyRows writes one batch's rows and returns the messages to read again.
func (p *Projector) applyRows(ctx context.Context, b *batch, keys []rm.Ref, rows map[rm.Ref]*messageRow,
	userRows []userRow, absentUsers []string, convRows []conversationRow, convs bool) (requeue, threads []rm.Ref, channels []string, err error) {
	if convs {
		renamed, added, err := b.applyConversations(ctx, convRows)
		if err != nil {
			return nil, nil, nil, err
		}
		channels = added
		refs, err := b.showing(ctx, MentionChannel, renamed)
		if err != nil {
			return nil, nil, nil, err
		}
		requeue = append(requeue, refs...)
	}
	relabeled, err := b.applyUsers(ctx, userRows, absentUsers, false)
	if err != nil {
		return nil, nil, nil, err
	}
	refs, err := b.showing(ctx, MentionUser, relabeled)
	if err != nil {
		return nil, nil, nil, err
	}
	requeue = append(requeue, refs...)
	have, err := b.storedByRefs(ctx, keys)
	if err != nil {
		return nil, nil, nil, err
	}
	// A thread parent new to the projection brings in its replies, which were left
	// out while it was missing (reader.message); one that leaves it takes them out.
	for _, k := range keys {
		row := rows[k]
		_, had := have[k]
		switch {
		case row != nil && !had && !row.IsReply && (row.ReplyCount > 0 || row.LatestReply != ""):
			threads = append(threads, k)
		case row == nil && had:
			replies, err := b.replies(ctx, k)
			if err != nil {
				return nil, nil, nil, err
			}
			requeue = append(requeue, replies...)
		}
	}
	return requeue, threads, channels, b.applyMessages(ctx, keys, rows, have)
}

// ErrNoTeam is returned by Sync for a store that has no team yet: no auth.test
// answer has been stored.
var ErrNoTeam = errors.New("the store has no team yet (run slackpoll once, or run, first)")
