package poller

import (
	"context"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// usersStream is the users.info stream: it resolves the users that messages written
// by this or an earlier tick name, as the other streams write them, so that a label
// never waits behind a history call; with none pending it waits for the other
// streams, and stops when none is left that could name more.
type usersStream struct {
	t *tick
	g gate
}

func newUsersStream(t *tick, cap int) *usersStream {
	return &usersStream{t: t, g: gate{method: rm.MethodUsersInfo, capName: "users_info_calls", left: cap}}
}

func (us *usersStream) gate() *gate           { return &us.g }
func (us *usersStream) enabled() bool         { return true }
func (us *usersStream) tally(*rotationSample) {}

func (us *usersStream) run() error {
	for {
		if !us.t.work.idle.wait(us.t.work.usersPendingLocked) {
			return nil
		}
		if err := us.resolve(); err != nil {
			return err
		}
	}
}

// resolve looks up, with users.info, the pending users that are not cached or whose
// cache entry is older than UserCacheTTL. A failed lookup keeps the stale cached value
// and is retried on a later tick; Slack's refusals (user_not_found) are cached
// answers.
func (us *usersStream) resolve() error {
	t := us.t
	ids := t.work.pendingUsers()
	now := t.now()
	var due []string
	err := t.p.store.View(func(tx rm.Tx) error {
		for _, id := range ids {
			u, ok, err := tx.User(id)
			if err != nil {
				return err
			}
			if ok && now.Sub(u.FetchedAt) < t.p.cfg.UserCacheTTL && !u.FetchedAt.After(now) {
				t.work.userDone(id, true)
				continue
			}
			due = append(due, id)
		}
		return nil
	})
	if err != nil {
		return rm.StoreErr(err)
	}
	for _, id := range due {
		var u rm.User
		o, err := t.do(&us.g, call{what: "users.info " + id, note: " (keeping the cached label)"}, func(ctx context.Context) (err error) {
			u, err = t.p.src.UserInfo(ctx, id)
			return err
		})
		if o != done {
			if err := stepErr(o, err); err != nil {
				return err
			}
			t.work.userDone(id, false) // skipped: reported
			continue
		}
		u.ID = id
		u.FetchedAt = t.now()
		if err := t.p.w.PutUser(u); err != nil {
			return err
		}
		t.work.userDone(id, true)
		t.report.add(func(s *rm.TickSummary) { s.UsersResolved++ })
	}
	return nil
}
