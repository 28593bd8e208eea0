package poller

import (
	"errors"
	"slices"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// runUsers is the users.info stream: it resolves the users that messages written by
// this or an earlier tick name, as the other streams write them, so that a label
// never waits behind a history call; with none pending it waits for the other streams,
// and stops when none is left that could name more.
func (t *tick) runUsers() error {
	for {
		if !t.waitForWork(t.usersPendingLocked) {
			return nil
		}
		if err := t.resolveUsers(); err != nil {
			if errors.Is(err, errStreamStop) {
				return nil
			}
			return err
		}
	}
}

// usersPendingLocked reports whether a user is pending and not failed this tick;
// called with mu held.
func (t *tick) usersPendingLocked() bool {
	for id := range t.p.pendingUsers {
		if !t.failedUsers[id] {
			return true
		}
	}
	return false
}

// resolveUsers looks up, with users.info, the pending users that are not cached or
// whose cache entry is older than UserCacheTTL. A failed lookup keeps the stale cached
// value and is retried on a later tick; Slack's refusals (user_not_found) are cached
// answers.
func (t *tick) resolveUsers() error {
	t.mu.Lock()
	ids := make([]string, 0, len(t.p.pendingUsers))
	for id := range t.p.pendingUsers {
		if !t.failedUsers[id] {
			ids = append(ids, id)
		}
	}
	t.mu.Unlock()
	slices.Sort(ids)
	now := t.now()
	var due []string
	err := t.p.store.View(func(tx rm.Tx) error {
		for _, id := range ids {
			u, ok, err := tx.User(id)
			if err != nil {
				return err
			}
			if ok && now.Sub(u.FetchedAt) < t.p.cfg.UserCacheTTL && !u.FetchedAt.After(now) {
				t.mu.Lock()
				delete(t.p.pendingUsers, id)
				t.mu.Unlock()
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
		err := t.do(t.users, func() (err error) {
			u, err = t.p.src.UserInfo(t.ctx, id)
			return err
		})
		if err != nil {
			if ends(err) {
				return err
			}
			t.skip("users.info %s: %v (keeping the cached label)", id, err)
			t.mu.Lock()
			t.failedUsers[id] = true
			t.mu.Unlock()
			continue
		}
		u.ID = id
		u.FetchedAt = t.now()
		if err := t.p.w.PutUser(u); err != nil {
			return err
		}
		t.mu.Lock()
		delete(t.p.pendingUsers, id)
		t.sum.UsersResolved++
		t.mu.Unlock()
	}
	return nil
}
