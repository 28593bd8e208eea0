package readmodel

import (
	"errors"
	"fmt"
)

// ErrRecordConflict is returned by Track when the message already carries another
// record key, or the record key is attached to another message.
var ErrRecordConflict = errors.New("record key conflict")

// Track adds (channel, ts) to the tracked set. A message never read is stored as a
// placeholder with no content and no last_polled_at, so the tail rotation reads it
// first on the next tick. record, if not "", is attached to the message in the same
// transaction. Tracking again with the same record, or without one, is a no-op; with a
// different record it fails with ErrRecordConflict. ts must be a valid Slack ts.
func Track(s Store, channel string, ts TS, record string) error {
	if channel == "" {
		return errors.New("track: empty channel id")
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
