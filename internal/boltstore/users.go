package boltstore

import "github.com/slackpoll/slackpoll/internal/readmodel"

// User returns the cached users.info answer for id (bucket users).
func (t *tx) User(id string) (readmodel.User, bool, error) {
	var u readmodel.User
	if err := checkKey("user ID", id); err != nil {
		return u, false, err
	}
	ok, err := t.getJSON(bUsers, []byte(id), &u)
	return u, ok, err
}

// Users calls fn for every cached user, by ID ascending.
func (t *tx) Users(fn func(readmodel.User) error) error {
	return forEachJSON(t, bUsers, fn)
}

// PutUser replaces the cached user u.ID.
func (t *tx) PutUser(u readmodel.User) error {
	if err := checkKey("user ID", u.ID); err != nil {
		return err
	}
	return t.putJSON(bUsers, []byte(u.ID), u)
}
