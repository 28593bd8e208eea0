package boltstore

import "github.com/slackpoll/slackpoll/internal/readmodel"

// Conversation returns the stored conversation id (bucket conv).
func (t *tx) Conversation(id string) (readmodel.Conversation, bool, error) {
	var c readmodel.Conversation
	if err := checkKey("conversation ID", id); err != nil {
		return c, false, err
	}
	ok, err := t.getJSON(bConv, []byte(id), &c)
	return c, ok, err
}

// Conversations calls fn for every stored conversation, by ID ascending.
func (t *tx) Conversations(fn func(readmodel.Conversation) error) error {
	return forEachJSON(t, bConv, fn)
}

// PutConversation replaces the stored conversation c.ID.
func (t *tx) PutConversation(c readmodel.Conversation) error {
	if err := checkKey("conversation ID", c.ID); err != nil {
		return err
	}
	return t.putJSON(bConv, []byte(c.ID), c)
}
