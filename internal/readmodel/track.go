package readmodel

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrRecordConflict is returned by Track when the message already carries another
// record key, or the record key is attached to another message.
var ErrRecordConflict = errors.New("record key conflict")

// ErrNotPolled is returned by TrackPolled for a conversation slackpoll does not poll:
// a message tracked there would never be read.
var ErrNotPolled = errors.New("conversation not polled")

// ValidConversationID reports whether id has the shape of a Slack conversation ID: C
// (channel), G (private channel or group DM) or D (DM), then uppercase letters and
// digits ("C0123456789").
func ValidConversationID(id string) bool {
	if len(id) < 2 || !strings.ContainsRune("CGD", rune(id[0])) {
		return false
	}
	for i := 1; i < len(id); i++ {
		c := id[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// TrackPolled is Track for a user's request: it first checks that channel is one the
// daemon polls — configured, or found by discover: member — since a message tracked
// anywhere else would stay "never read" forever.
func TrackPolled(s Store, configured []string, channel string, ts TS, record string) error {
	if err := checkChannel(channel); err != nil {
		return err
	}
	polled := slices.Contains(configured, channel)
	if !polled {
		err := s.View(func(tx Tx) error {
			c, ok, err := tx.Conversation(channel)
			polled = ok && c.Discovered
			return err
		})
		if err != nil {
			return err
		}
	}
	if !polled {
		return fmt.Errorf("%w: %s is not among the conversations slackpoll polls: add it to conversations in the config (or set discover: member if the bot is in it)", ErrNotPolled, channel)
	}
	return Track(s, channel, ts, record)
}

func checkChannel(channel string) error {
	if !ValidConversationID(channel) {
		return fmt.Errorf("track: %q is not a Slack conversation ID (C…, G… or D… then uppercase letters and digits, as shown in the conversation's details in Slack)", channel)
	}
	return nil
}

// Track adds (channel, ts) to the tracked set. A message never read is stored as a
// placeholder with no content and no last_polled_at, so the tail rotation reads it
// first on the next tick. record, if not "", is attached to the message in the same
// transaction. Tracking again with the same record, or without one, is a no-op; with a
// different record it fails with ErrRecordConflict. ts must be a valid Slack ts.
func Track(s Store, channel string, ts TS, record string) error {
	if err := checkChannel(channel); err != nil {
		return err
	}
	if _, err := ParseTS(string(ts)); err != nil {
		return fmt.Errorf("track: %w", err)
	}
	return s.Update(func(tx Tx) error {
		m, ok, err := tx.Message(channel, ts)
		if err != nil {
			return err
		}
		if !ok {
			m = Message{Channel: channel, TS: ts}
		}
		if record == "" || m.Record == record {
			if ok {
				return nil
			}
			return tx.PutMessage(m)
		}
		if m.Record != "" {
			return fmt.Errorf("%w: %s %s is already tracked as record %q, not %q", ErrRecordConflict, channel, ts, m.Record, record)
		}
		if ref, found, err := tx.Record(record); err != nil {
			return err
		} else if found && ref != (Ref{channel, ts}) {
			return fmt.Errorf("%w: record %q is already attached to %s %s", ErrRecordConflict, record, ref.Channel, ref.TS)
		}
		m.Record = record
		if err := tx.PutRecord(record, Ref{channel, ts}); err != nil {
			return err
		}
		return tx.PutMessage(m)
	})
}
