package readmodel

import (
	"errors"
	"fmt"
)

// ErrNotWaiting is Retry's error for a conversation that does not wait for a retry
// (not stored, or in no error status).
var ErrNotWaiting = errors.New("not waiting for a retry")

// Retry makes the conversations that wait after a per-conversation error
// (missing_scope, not_in_channel, channel_not_found, error) due at the next tick,
// with their conversations.info read again: after the operator fixed the cause (a
// scope added and the app reinstalled, the bot invited), not an hour later. With no
// ids, every conversation in an error status; an id named that waits for nothing is
// ErrNotWaiting. It returns the ids made due.
func Retry(s Store, ids []string) ([]string, error) {
	var due []string
	err := (&Writer{store: s}).update(func(tx Tx) error {
		want := map[string]bool{}
		for _, id := range ids {
			want[id] = true
		}
		var waiting []Conversation
		if err := tx.Conversations(func(c Conversation) error {
			if (len(ids) == 0 || want[c.ID]) && c.RetryAt != nil {
				waiting = append(waiting, c)
			}
			return nil
		}); err != nil {
			return err
		}
		found := map[string]bool{}
		for _, c := range waiting {
			c.RetryAt, c.InfoReadAt = nil, nil
			if err := tx.PutConversation(c); err != nil {
				return err
			}
			found[c.ID] = true
			due = append(due, c.ID)
		}
		for _, id := range ids {
			if !found[id] {
				return fmt.Errorf("%w: %s (see slackpoll status)", ErrNotWaiting, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return due, nil
}
