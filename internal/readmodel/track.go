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

// ErrBadRecord is returned by Track for a record key that is empty of meaning: longer
// than MaxRecordKeyLen bytes.
var ErrBadRecord = errors.New("invalid record key")

// MaxRecordKeyLen bounds a record key (a ticket number, a URL): far above any real
// one, far below what the store can key.
const MaxRecordKeyLen = 512

// ErrNotTracked is returned by Untrack for a message that is not tracked on request.
var ErrNotTracked = errors.New("message not tracked")

// ErrTooManyTracked is returned by Track when MaxWatched messages are tracked on
// request already.
var ErrTooManyTracked = errors.New("too many tracked messages")

// MaxWatched caps the watched set (messages tracked on request or by record key): each
// takes a share of the calls of every tick, and an API client looping on POST
// /v1/tracked must not grow the store and the rotation without bound.
const MaxWatched = 10000

// maxIDLen bounds Slack IDs (conversations are about 11 characters).
const maxIDLen = 64

// ValidConversationID reports whether id has the shape of a Slack conversation ID: C
// (channel), G (private channel or group DM) or D (DM), then uppercase letters and
// digits ("C0123456789").
func ValidConversationID(id string) bool {
	if len(id) < 2 || len(id) > maxIDLen || !strings.ContainsRune("CGD", rune(id[0])) {
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

// Track adds (channel, ts) to the watched set: it rotates whatever the tracking
// horizon, with the watched class's guaranteed share of calls. A message never read is
// stored as a placeholder with no content and no last_polled_at, so the next tick
// reads it first. record, if not "", is attached to the message in the same
// transaction. Tracking again with the same record, or without one, changes nothing;
// with a different record it fails with ErrRecordConflict. ts must be a valid Slack ts.
func Track(s Store, channel string, ts TS, record string) error {
	if err := checkChannel(channel); err != nil {
		return err
	}
	if _, err := ParseTS(string(ts)); err != nil {
		return fmt.Errorf("track: %w", err)
	}
	if len(record) > MaxRecordKeyLen {
		return fmt.Errorf("%w: %.20q… is longer than %d bytes", ErrBadRecord, record, MaxRecordKeyLen)
	}
	return (&Writer{store: s}).track(Ref{channel, ts}, record)
}

// track is Track's transaction.
func (w *Writer) track(ref Ref, record string) error {
	err := w.update(func(tx Tx) error {
		m, ok, err := tx.Message(ref.Channel, ref.TS)
		if err != nil {
			return err
		}
		if !ok {
			m = Message{Channel: ref.Channel, TS: ref.TS}
		}
		if err := checkWatchedRoom(tx, ref); err != nil {
			return err
		}
		if err := tx.PutWatched(ref); err != nil {
			return err
		}
		changed := !ok || m.Retired
		m.Retired = false
		if record != "" && m.Record != record {
			if m.Record != "" {
				return fmt.Errorf("%w: %s %s is already tracked as record %q, not %q", ErrRecordConflict, ref.Channel, ref.TS, m.Record, record)
			}
			if other, found, err := tx.Record(record); err != nil {
				return err
			} else if found && other != ref {
				return fmt.Errorf("%w: record %q is already attached to %s %s", ErrRecordConflict, record, other.Channel, other.TS)
			}
			m.Record = record
			if err := tx.PutRecord(record, ref); err != nil {
				return err
			}
			changed = true
		}
		if !changed {
			return nil
		}
		return tx.PutMessage(m)
	})
	// Track's errors are the caller's to word; storeErr's prefix is the poller's.
	return unwrapStore(err)
}

// checkWatchedRoom fails with ErrTooManyTracked when ref is not watched yet and the
// watched set holds MaxWatched messages.
func checkWatchedRoom(tx Tx, ref Ref) error {
	if ok, err := tx.IsWatched(ref); err != nil || ok {
		return err
	}
	n := 0
	err := tx.Watched(func(Ref) error {
		if n++; n >= MaxWatched {
			return ErrStopIteration
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n >= MaxWatched {
		return fmt.Errorf("%w: %d messages are tracked, the most allowed: untrack some first (slackpoll untrack, or DELETE /v1/tracked/{channel}/{ts})", ErrTooManyTracked, MaxWatched)
	}
	return nil
}

// Untrack takes (channel, ts) out of the watched set and detaches its record key. A
// message that was read stays in the read model (the tracking policy decides whether
// it keeps rotating); a placeholder never read is removed with it. A message not
// watched fails with ErrNotTracked.
func Untrack(s Store, channel string, ts TS) error {
	if err := checkChannel(channel); err != nil {
		return err
	}
	if _, err := ParseTS(string(ts)); err != nil {
		return fmt.Errorf("untrack: %w", err)
	}
	return (&Writer{store: s}).untrack(Ref{channel, ts})
}

// untrack is Untrack's transaction.
func (w *Writer) untrack(ref Ref) error {
	err := w.update(func(tx Tx) error {
		ok, err := tx.IsWatched(ref)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s %s", ErrNotTracked, ref.Channel, ref.TS)
		}
		if err := tx.DeleteWatched(ref); err != nil {
			return err
		}
		m, found, err := tx.Message(ref.Channel, ref.TS)
		if err != nil || !found {
			return err
		}
		if m.Record != "" {
			if other, ok, err := tx.Record(m.Record); err != nil {
				return err
			} else if ok && other == ref {
				if err := tx.DeleteRecord(m.Record); err != nil {
					return err
				}
			}
			m.Record = ""
		}
		if m.LastPolledAt == nil {
			return tx.DeleteMessage(ref.Channel, ref.TS)
		}
		return tx.PutMessage(m)
	})
	return unwrapStore(err)
}
