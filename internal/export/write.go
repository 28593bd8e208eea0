package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// MessageLineOf renders the stored timeline message m with its thread.
func MessageLineOf(tx rm.Tx, m *rm.Message) (MessageLine, error) {
	var replies []rm.Message
	if !m.IsReply() {
		var err error
		if replies, err = tx.Replies(m.Channel, m.TS); err != nil {
			return MessageLine{}, err
		}
	}
	l := NewMessageLine(m, replies, rm.TxLabeler(tx))
	l.TeamID = TeamOf(tx)
	return l, nil
}

// TeamOf is the store's workspace, auth.test's team_id, for the lines' team_id; ""
// before the store knows it (nothing read from Slack yet).
func TeamOf(tx rm.Tx) string {
	id, ok, err := tx.Identity()
	if err != nil || !ok {
		return ""
	}
	return id.TeamID
}

// Write writes the whole read model as JSON Lines (README, "Commands" (export)): conversations by
// id (configured ones not stored yet as status pending), then timeline messages by
// channel id and ts ascending with their replies, then users by id. It streams: memory
// does not grow with the store.
func Write(tx rm.Tx, w io.Writer, configured []string) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)

	var ids []string
	stored := map[string]bool{}
	err := tx.Conversations(func(c rm.Conversation) error {
		stored[c.ID] = true
		ids = append(ids, c.ID)
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range configured {
		if !stored[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	team := TeamOf(tx)
	for _, id := range ids {
		c, ok, err := tx.Conversation(id)
		if err != nil {
			return err
		}
		if !ok {
			c = rm.Conversation{ID: id, Status: rm.StatusPending}
		}
		cl := NewConversationLine(&c)
		cl.TeamID = team
		if err := enc.Encode(cl); err != nil {
			return err
		}
	}
	// Each user's label is read once per export, not once per message that names it.
	label := memoLabeler(rm.TxLabeler(tx))
	var line []byte
	for _, id := range ids {
		err := tx.Timeline(id, "", "", func(m rm.Message) error {
			var replies []rm.Message
			if !m.IsReply() {
				var err error
				if replies, err = tx.Replies(m.Channel, m.TS); err != nil {
					return err
				}
			}
			l := NewMessageLine(&m, replies, label)
			l.TeamID = team
			var err error
			if line, err = encodeMessageLine(line[:0], &l); err != nil {
				return err
			}
			_, err = bw.Write(line)
			return err
		})
		if err != nil {
			return err
		}
	}
	err = tx.Users(func(u rm.User) error {
		if rm.IsBotID(u.ID) {
			return nil // looked up by an older version; a bot ID is not a user
		}
		ul := NewUserLine(&u)
		ul.TeamID = team
		return enc.Encode(ul)
	})
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if bad := tx.Undecodable(); len(bad) > 0 {
		return &UndecodableError{Records: bad}
	}
	return nil
}

// memoLabeler returns label remembering each answer: an export asks for the same few
// users' labels once per message.
func memoLabeler(label rm.Labeler) rm.Labeler {
	seen := map[string]string{}
	return func(id string) string {
		l, ok := seen[id]
		if !ok {
			l = label(id)
			seen[id] = l
		}
		return l
	}
}

// UndecodableError reports the stored records an export skipped because they could
// not be decoded (Tx.Undecodable); everything else was exported.
type UndecodableError struct {
	Records []string
}

func (e *UndecodableError) Error() string {
	return fmt.Sprintf("%d undecodable stored record(s) skipped, everything else exported: %s "+
		"(a message is read again from Slack by the daemon's next read of it; else restore a backup)",
		len(e.Records), strings.Join(e.Records, "; "))
}
