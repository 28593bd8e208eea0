package projection

import (
	"context"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Projector states (Status.State).
const (
	StateStarting = "starting"
	// StateWaiting: the store has no team yet (no auth.test answer stored).
	StateWaiting = "waiting"
	// StateSyncing and StateRebuilding: a sync from a read of the whole store is
	// running (Status.Sync says how far).
	StateSyncing    = "syncing"
	StateRebuilding = "rebuilding"
	// StateCurrent: the projection has applied every change and commit it knows.
	StateCurrent = "current"
	// StateApplying: batches are being applied.
	StateApplying = "applying"
	// StateError: the last attempt failed (Status.LastError); it is retried.
	StateError = "error"
)

// Status is a projector's progress, for status, GET /v1/status and /metrics.
// Times are UTC; durations in seconds.
type Status struct {
	// Target is sqlite or postgres; Name the file or host/database/schema.
	Target string `json:"target"`
	Name   string `json:"name"`
	State  string `json:"state"`
	TeamID string `json:"team_id"`
	// CursorSeq is the feed seq the projection has applied through, LastSeq the
	// feed's last; LagSeq their difference.
	CursorSeq uint64 `json:"cursor_seq"`
	LastSeq   uint64 `json:"last_seq"`
	LagSeq    uint64 `json:"lag_seq"`
	// LagSeconds is how long the oldest change or commit the projection has not
	// applied yet has waited (0 when none).
	LagSeconds float64 `json:"lag_seconds"`
	// PendingMessages are messages commits touched that wait for a batch.
	PendingMessages int `json:"pending_messages"`
	// CursorAt is when the change at the cursor was observed.
	CursorAt *time.Time `json:"cursor_at"`
	// SyncedAt is when the last sync from the whole store finished; Sync is the
	// running one's progress (nil when none runs).
	SyncedAt *time.Time    `json:"synced_at"`
	Sync     *SyncProgress `json:"sync"`
	// LastBatchAt is when the last transaction committed.
	LastBatchAt *time.Time `json:"last_batch_at"`
	LastError   string     `json:"last_error"`
	// Applied counts the rows written since the daemon started; Batches and Syncs
	// the transactions; Errors the failed attempts.
	Applied Counts `json:"applied"`
	Batches int    `json:"batches"`
	Syncs   int    `json:"syncs"`
	Errors  int    `json:"errors"`
	// ChangesApplied counts the feed changes applied since the daemon started.
	ChangesApplied int `json:"changes_applied"`
}

// SyncProgress is how far a running sync got.
type SyncProgress struct {
	Rebuild  bool      `json:"rebuild"`
	Started  time.Time `json:"started"`
	Messages int       `json:"messages"`
	Total    int       `json:"total"`
}

// Status returns a copy of the projector's progress.
func (p *Projector) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.st
	st.TeamID = p.team
	st.CursorSeq = p.cursor
	st.PendingMessages = len(p.pending.order)
	if st.LastSeq > st.CursorSeq {
		st.LagSeq = st.LastSeq - st.CursorSeq
	} else {
		st.LagSeq = 0
	}
	now := p.o.Now()
	var oldest time.Time
	if !p.pending.empty() {
		oldest = p.pending.since
	}
	if st.LagSeq > 0 && !p.firstPending.IsZero() && (oldest.IsZero() || p.firstPending.Before(oldest)) {
		oldest = p.firstPending
	}
	st.LagSeconds = 0
	if !oldest.IsZero() && now.After(oldest) {
		st.LagSeconds = now.Sub(oldest).Seconds()
	}
	if st.Sync != nil {
		s := *st.Sync
		st.Sync = &s
	}
	return st
}

// Idle reports whether the projector is current: synced, nothing pending, the feed
// applied to its last seq as last seen.
func (p *Projector) Idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st.State == StateCurrent && !p.busy && p.pending.empty() && p.cursor >= p.st.LastSeq && !p.rebuild
}

func (p *Projector) setState(state, lastErr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st.State = state
	if lastErr != "" {
		p.st.LastError = lastErr
	}
}

func (p *Projector) setError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st.State, p.st.LastError = StateError, err.Error()
	p.st.Sync = nil
	p.st.Errors++
}

// setFeed records the feed's last seq and when its first change the projection has
// not applied was observed.
func (p *Projector) setFeed(last uint64, firstPending time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st.LastSeq = last
	p.firstPending = firstPending
}

func (p *Projector) applied(b Batch, cursorAt *time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.o.Now().UTC()
	p.st.LastBatchAt = &now
	p.st.CursorAt = cursorAt
	p.st.Applied.add(b.Counts)
	p.st.ChangesApplied += b.Changes
	if b.Sync {
		p.st.Syncs++
		p.st.SyncedAt = &now
		p.st.Sync = nil
	} else {
		p.st.Batches++
	}
	p.st.State = StateApplying
	if p.pending.empty() && p.cursor >= p.st.LastSeq {
		p.st.State = StateCurrent
	}
	p.st.LastError = ""
}

// StateStopped is the state of a projection no daemon runs (status read from the
// files).
const StateStopped = "stopped"

// Offline reports the progress of a projection no daemon writes: its cursor against
// the store's feed (a store written since, by `track` or a daemon killed before its
// projector caught up, is synced by the next start).
func Offline(ctx context.Context, store rm.Store, t *Target) (Status, error) {
	st := Status{Target: t.kind, Name: t.name, State: StateStopped}
	var last uint64
	err := store.View(func(tx rm.Tx) error {
		id, ok, err := tx.Identity()
		if err != nil {
			return err
		}
		if ok {
			st.TeamID = id.TeamID
		}
		_, last, err = tx.ChangeBounds()
		return err
	})
	if err != nil || st.TeamID == "" {
		return st, err
	}
	s, ok, err := t.loadState(ctx, st.TeamID)
	if err != nil {
		return st, err
	}
	st.LastSeq = last
	if !ok {
		st.State = StateStopped + " (never synced: the daemon builds it when it starts)"
		return st, nil
	}
	st.CursorSeq = uint64(max(s.CursorSeq, 0))
	if last > st.CursorSeq {
		st.LagSeq = last - st.CursorSeq
	}
	st.CursorAt, st.SyncedAt = s.CursorAt, s.SyncedAt
	return st, nil
}
