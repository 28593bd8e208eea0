package projection

import (
	"context"
	"fmt"
	"slices"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// syncChunk is how many timeline messages (with their replies) one store read of a
// sync holds: a sync reads the store in many short read transactions, never one as
// long as the whole store (bbolt cannot reuse the pages a long reader holds).
const syncChunk = 2000

// Sync makes the target equal to the store for the store's team, in one SQL
// transaction: readers of the target see the old rows until it commits. With rebuild
// set it first drops every row of the team; otherwise it compares and writes only what
// differs. The cursor becomes the feed's last seq as of its start: what commits after
// that start is applied by the batches after it (a running projector's Watched
// subscription has it pending; changes after the cursor name it too). Progress is
// logged every ProgressEvery. It fails with ErrNoTeam when the store has no team.
func (p *Projector) Sync(ctx context.Context, rebuild bool) (err error) {
	if p.team == "" {
		team, err := p.readTeam()
		if err != nil {
			return err
		}
		if team == "" {
			return ErrNoTeam
		}
		p.mu.Lock()
		p.team = team
		p.mu.Unlock()
	}
	start := p.o.Now()
	var (
		last     uint64
		lastAt   *time.Time
		convRows []conversationRow
		userRows []userRow
		channels []string
		total    int
	)
	err = p.o.Store.View(func(tx rm.Tx) error {
		var err error
		if _, last, err = tx.ChangeBounds(); err != nil {
			return err
		}
		if last > 0 {
			_ = tx.Changes(last-1, func(c rm.Change) error {
				at := c.ObservedAt
				lastAt = &at
				return rm.ErrStopIteration
			})
		}
		r, err := newReader(tx)
		if err != nil {
			return err
		}
		for id, c := range r.convs {
			convRows = append(convRows, conversationRowOf(c))
			channels = append(channels, id)
			n, err := tx.Counts(id)
			if err != nil {
				return err
			}
			total += n.Messages
		}
		slices.Sort(channels)
		return tx.Users(func(u rm.User) error {
			if !rm.IsBotID(u.ID) {
				userRows = append(userRows, userRowOf(&u))
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("reading the store: %w", err)
	}
	_, known, err := p.o.Target.loadState(ctx, p.team)
	if err != nil {
		return err
	}
	state, what := StateSyncing, "syncing the projection with the store"
	switch {
	case rebuild:
		state, what = StateRebuilding, "rebuilding the projection from the store"
	case !known:
		state, what = StateRebuilding, "building the projection from the store (new or dropped)"
		rebuild = true
	}
	p.mu.Lock()
	p.st.State = state
	p.st.Sync = &SyncProgress{Rebuild: rebuild, Started: start.UTC(), Total: total}
	p.mu.Unlock()
	p.o.Log.Info("projection: "+what, "target", p.o.Target.Kind(), "db", p.o.Target.Name(), "team", p.team, "messages", total, "cursor", last)

	b, err := p.o.Target.begin(ctx, p.team, int64(last), start)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			b.rollback()
		}
	}()
	if rebuild {
		if err := b.dropTeam(ctx); err != nil {
			return err
		}
	}
	if _, _, err := b.applyConversations(ctx, convRows); err != nil {
		return err
	}
	if _, err := b.applyUsers(ctx, userRows, nil, true); err != nil {
		return err
	}
	done, lastLog := 0, start
	progress := func(n int) {
		done += n
		p.mu.Lock()
		if p.st.Sync != nil {
			p.st.Sync.Messages = done
		}
		p.mu.Unlock()
		if now := p.o.Now(); now.Sub(lastLog) >= p.o.ProgressEvery {
			lastLog = now
			pct := 100.0
			if total > 0 {
				pct = min(100, 100*float64(done)/float64(total))
			}
			p.o.Log.Info("projection: sync in progress", "target", p.o.Target.Kind(), "messages", done, "of", total,
				"percent", fmt.Sprintf("%.0f", pct), "elapsed", now.Sub(start).Round(time.Second))
		}
	}
	for _, ch := range channels {
		if err := p.syncChannel(ctx, b, ch, rebuild, progress); err != nil {
			return err
		}
	}
	if !rebuild {
		held, err := b.storedChannels(ctx)
		if err != nil {
			return err
		}
		for _, ch := range held {
			if _, ok := slices.BinarySearch(channels, ch); !ok {
				if err := p.pruneChannel(ctx, b, ch); err != nil {
					return err
				}
			}
		}
	}
	if err := b.saveState(ctx, lastAt, true); err != nil {
		return err
	}
	if err := b.commit(); err != nil {
		return err
	}
	if err := p.o.Target.analyze(ctx); err != nil {
		p.o.Log.Warn("projection: updating the planner's statistics failed", "target", p.o.Target.Kind(), "err", err)
	}
	p.mu.Lock()
	p.cursor, p.synced = last, true
	p.mu.Unlock()
	p.setFeed(last, time.Time{})
	batch := Batch{Target: p.o.Target.Kind(), Sync: true, Rebuild: rebuild, Cursor: last, Keys: done, Counts: b.stats, Took: p.o.Now().Sub(start)}
	p.applied(batch, lastAt)
	p.o.Log.Info("projection: synced with the store", "target", p.o.Target.Kind(), "messages", done,
		"inserted", b.stats.Inserted, "updated", b.stats.Updated, "touched", b.stats.Touched, "deleted", b.stats.Deleted,
		"cursor", last, "took", batch.Took.Round(time.Millisecond))
	if p.o.OnBatch != nil {
		p.o.OnBatch(batch)
	}
	return nil
}

// dropTeam deletes every row of the batch's team.
func (b *batch) dropTeam(ctx context.Context) error {
	if b.t.kind == KindSQLite {
		if err := b.exec(ctx, "DELETE FROM messages_fts WHERE rowid IN (SELECT id FROM messages WHERE team_id = ?)", b.team); err != nil {
			return err
		}
	}
	for _, table := range []string{"reactions", "reaction_counts", "mentions", "messages", "users", "conversations", "projection_state"} {
		if err := b.exec(ctx, "DELETE FROM "+table+" WHERE team_id = ?", b.team); err != nil {
			return err
		}
	}
	return nil
}

// syncChannel writes one conversation's messages, syncChunk timeline messages (and
// their replies) at a time, each chunk from its own store read; then, unless the
// team's rows were dropped first, it deletes the rows the store no longer has.
func (p *Projector) syncChannel(ctx context.Context, b *batch, ch string, rebuilt bool, progress func(int)) error {
	after := rm.TS("")
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var (
			keys []rm.Ref
			rows = map[rm.Ref]*messageRow{}
			n    int
			more bool
		)
		err := p.o.Store.View(func(tx rm.Tx) error {
			r, err := newReader(tx)
			if err != nil {
				return err
			}
			add := func(m *rm.Message) error {
				row, _, err := r.row(m)
				if err != nil {
					return err
				}
				ref := rm.Ref{Channel: m.Channel, TS: m.TS}
				keys = append(keys, ref)
				rows[ref] = &row
				return nil
			}
			return walkChannel(tx, ch, after, func(m *rm.Message, timeline bool) error {
				if timeline {
					if n == syncChunk {
						more = true
						return rm.ErrStopIteration
					}
					n++
					after = m.TS
				}
				return add(m)
			})
		})
		if err != nil {
			return fmt.Errorf("reading the store: %w", err)
		}
		have := map[rm.Ref]stored{}
		if !rebuilt {
			if have, err = b.storedByRefs(ctx, keys); err != nil {
				return err
			}
		}
		if err := b.applyMessages(ctx, keys, rows, have); err != nil {
			return err
		}
		progress(len(keys))
		if !more {
			break
		}
	}
	if rebuilt {
		return nil
	}
	return p.pruneRows(ctx, b, ch, true)
}

// pruneChannel deletes every row of a conversation the store does not hold.
func (p *Projector) pruneChannel(ctx context.Context, b *batch, ch string) error {
	return p.pruneRows(ctx, b, ch, false)
}

// pruneRows deletes the rows of ch that the store does not show (checkStore), or
// all of them: syncChunk rows at a time, in ts order.
func (p *Projector) pruneRows(ctx context.Context, b *batch, ch string, checkStore bool) error {
	after := ""
	for {
		rs, err := b.query(ctx, "SELECT ts FROM messages WHERE team_id = ? AND channel = ? AND ts > ? ORDER BY ts LIMIT ?",
			b.team, ch, after, syncChunk)
		if err != nil {
			return err
		}
		var refs []rm.Ref
		for rs.Next() {
			var ts string
			if err := rs.Scan(&ts); err != nil {
				_ = rs.Close()
				return err
			}
			refs = append(refs, rm.Ref{Channel: ch, TS: rm.TS(ts)})
			after = ts
		}
		_ = rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
		if len(refs) == 0 {
			return nil
		}
		gone := refs
		if checkStore {
			gone = nil
			err := p.o.Store.View(func(tx rm.Tx) error {
				r, err := newReader(tx)
				if err != nil {
					return err
				}
				for _, ref := range refs {
					if _, ok, err := r.message(ref); err != nil {
						return err
					} else if !ok {
						gone = append(gone, ref)
					}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("reading the store: %w", err)
			}
		}
		if len(gone) > 0 {
			have, err := b.storedByRefs(ctx, gone)
			if err != nil {
				return err
			}
			if err := b.applyMessages(ctx, gone, nil, have); err != nil {
				return err
			}
		}
		if len(refs) < syncChunk {
			return nil
		}
	}
}
