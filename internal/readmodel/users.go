package readmodel

import (
	"slices"
)

// resolveUsers looks up, with users.info, the users that messages written by this or
// an earlier tick refer to and that are not cached or whose cache entry is older than
// UserCacheTTL, up to users_info_calls. A failed lookup keeps the stale cached value
// and is retried on a later tick; Slack's refusals (user_not_found) are cached answers.
func (t *tick) resolveUsers() error {
	ids := make([]string, 0, len(t.p.pendingUsers))
	for id := range t.p.pendingUsers {
		if !t.failedUsers[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	now := t.now()
	var due []string
	err := t.p.store.View(func(tx Tx) error {
		for _, id := range ids {
			u, ok, err := tx.User(id)
			if err != nil {
				return err
			}
			if ok && now.Sub(u.FetchedAt) < t.p.cfg.UserCacheTTL {
				delete(t.p.pendingUsers, id)
				continue
			}
			due = append(due, id)
		}
		return nil
	})
	if err != nil {
		return storeErr(err)
	}
	for _, id := range due {
		if t.pastDeadline() {
			return errStopTick
		}
		if !t.take(&t.left.UsersInfoCalls, "users_info_calls") {
			return nil
		}
		t.call(MethodUsersInfo)
		u, err := t.p.src.UserInfo(t.ctx, id)
		if err != nil {
			if ferr := t.fatal(err); ferr != nil {
				return ferr
			}
			t.skip("users.info %s: %v (keeping the cached label)", id, err)
			t.failedUsers[id] = true
			continue
		}
		u.ID = id
		u.FetchedAt = t.now()
		if err := t.p.store.Update(func(tx Tx) error { return tx.PutUser(u) }); err != nil {
			return storeErr(err)
		}
		delete(t.p.pendingUsers, id)
		t.sum.UsersResolved++
	}
	return nil
}
