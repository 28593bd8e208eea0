package readmodel

import "time"

// isOwn reports whether m was posted by this app: bot_id equal to the own bot_id from
// auth.test; subtype bot_message only when the token has no bot_id (classic tokens).
func isOwn(m *Message, id *Identity) bool {
	if id == nil {
		return false
	}
	if id.BotID != "" {
		return m.BotID != "" && m.BotID == id.BotID
	}
	return m.Subtype == SubtypeBotMessage
}

// merge returns the record to store for a message just read (its Slack state is
// replaced whole: README, "Replace on read"), carrying over only what polling owns: the
// reply watermark, the record key. A tombstone is a placeholder, not the message
// (absence is not erasure): the stored message is marked deleted and keeps its last
// known content, taking only reply_count and latest_reply from the tombstone. A parent
// first seen as a tombstone has no known content, and the tombstone's is not the
// message's: it stays empty (its label says deleted, UserLabel).
func merge(old *Message, read Message, id *Identity, now time.Time) Message {
	m := read
	if read.Subtype == SubtypeTombstone {
		if old != nil {
			m = *old
		} else {
			m = Message{Channel: read.Channel, TS: read.TS}
		}
		m.ThreadTS = read.ThreadTS
		m.ReplyCount, m.LatestReply = read.ReplyCount, read.LatestReply
		m.Deleted = true
	} else {
		m.OwnPost = isOwn(&m, id)
	}
	if old != nil {
		m.ReplyWatermark = old.ReplyWatermark
		m.ThreadSyncedAt, m.ThreadGone = old.ThreadSyncedAt, old.ThreadGone
		m.Record = old.Record
	}
	m.MissingSince = nil
	m.LastPolledAt = &now
	return m
}

// applyRead writes one message read from Slack and returns the stored result.
func applyRead(tx Tx, read Message, id *Identity, now time.Time) (Message, error) {
	old, ok, err := tx.Message(read.Channel, read.TS)
	if err != nil {
		return Message{}, err
	}
	var prev *Message
	if ok {
		prev = &old
	}
	m := merge(prev, read, id, now)
	return m, tx.PutMessage(m)
}

// NeedsThreadSync is the thread sync test: latest_reply differs (!=, not >) from the
// stored watermark. Deleting the newest reply moves latest_reply backwards.
func (m *Message) NeedsThreadSync() bool { return m.LatestReply != m.ReplyWatermark }

// UserIDs returns the user IDs a message refers to: its author, the edit's author and
// the reaction users, for users.info resolution. Bot IDs (B…, as edited.user of an
// app's message can be) are not users: users.info cannot resolve them.
func (m *Message) UserIDs() []string {
	ids := make([]string, 0, 2)
	if m.User != "" && !IsBotID(m.User) {
		ids = append(ids, m.User)
	}
	if m.Edited != nil && m.Edited.User != "" && !IsBotID(m.Edited.User) {
		ids = append(ids, m.Edited.User)
	}
	for _, r := range m.Reactions {
		for _, u := range r.Users {
			if !IsBotID(u) {
				ids = append(ids, u)
			}
		}
	}
	return ids
}

// IsBotID reports whether id is a Slack bot ID (B…), not a user ID (U… or W…).
func IsBotID(id string) bool { return len(id) > 1 && id[0] == 'B' }

// unverifiedReplies reports whether m has stored replies that no whole-thread read
// vouches for: thread_broadcast replies come with history pages, before (or without)
// any read of their thread. When Slack then says m is no parent at all (its last
// reply was deleted), or its thread was never read whole, only a thread read can
// remove what is gone: latest_reply may be back to a watermark it equals.
func unverifiedReplies(tx Tx, m *Message) (bool, error) {
	if m.IsReply() || m.NeedsThreadSync() || (m.IsParent() && m.ThreadSyncedAt != nil) {
		return false, nil
	}
	replies, err := tx.Replies(m.Channel, m.TS)
	return len(replies) > 0, err
}

// trackParent tracks, as never read, the parent of a reply the store holds without
// it — a thread_broadcast read from history whose parent is older than the window.
// Replies leave the tail (their parent's thread reads refresh them), so without its
// parent such a reply would never be read again.
func trackParent(tx Tx, m *Message) error {
	if !m.IsReply() {
		return nil
	}
	_, _, err := trackIfAbsent(tx, m.Channel, m.ThreadTS)
	return err
}

// trackIfAbsent returns the stored message (ch, ts) and true or, when the store does
// not hold it, tracks it as never read — a placeholder with no content, which the
// tail reads first — and returns false.
func trackIfAbsent(tx Tx, ch string, ts TS) (Message, bool, error) {
	m, ok, err := tx.Message(ch, ts)
	if err != nil || ok {
		return m, ok, err
	}
	return Message{}, false, tx.PutMessage(Message{Channel: ch, TS: ts})
}
