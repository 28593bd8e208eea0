package readmodel

// Labeler returns the label of a user ID, or "" when the user is not known yet.
type Labeler func(userID string) string

// UserLabel returns the label of a message's author: the user's label (the raw ID when
// not looked up yet), or for a message without a user the bot's name, else its bot_id.
func UserLabel(m *Message, label Labeler) string {
	if m.User != "" {
		if label != nil {
			if l := label(m.User); l != "" {
				return l
			}
		}
		return m.User
	}
	if m.BotName != "" {
		return m.BotName
	}
	if m.BotID != "" {
		return m.BotID
	}
	// Never empty: a reader needs something to show. A thread parent first seen as
	// a tombstone has no known author.
	if m.Deleted {
		return DeletedAuthor
	}
	return UnknownAuthor
}

// Labels of a message whose author is not known: deleted before it was first read
// (a thread parent first seen as a tombstone), or without user, bot name or bot_id.
const (
	DeletedAuthor = "(deleted)"
	UnknownAuthor = "(unknown)"
)

// TxLabeler returns a Labeler reading the users cache of tx: a user's label, or "" when
// the user has not been looked up.
func TxLabeler(tx Tx) Labeler {
	return func(id string) string {
		u, ok, err := tx.User(id)
		if err != nil || !ok {
			return ""
		}
		return u.Label()
	}
}
