package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Message value, format 3 (byte 0): the content, without read times. Strings are
// uvarint length + bytes; the channel is not stored (it is the bucket).
//
//	format(1) flags(1) ts thread_ts                                          ← header
//	user bot_id bot_name subtype text [edited.user edited.ts, if flagEdited]
//	n_reactions{ name count(varint) n_users{ user } }
//	reply_count(varint) latest_reply reply_watermark
//	[MissingSince time, if flagMissing] record
//	ext(1)
//
// The read times live in a record of their own under the same key (chan/<c>/r/, see
// appendReadTimes), so that a read that finds a message unchanged rewrites a few bytes,
// not the message: the content value is put only when its bytes change.
//
// Format 2, written by earlier releases, is format 3 with the read times inline: the
// tail index time, m.RotatedAt(), after the flags (if flagPolled), and after ext
// LastPolledAt (if extPolled) and ThreadSyncedAt (if extThreadSynced). It is still
// read; PutMessage replaces it with format 3 and a read-times record.
//
// The header comes first so PutMessage and DeleteMessage can update the indexes from
// the old record without decoding it whole; flagTimeline lets Timeline skip plain
// replies undecoded.
const (
	formatMessageTimed = 2
	formatMessage      = 3
)

// isMessageFormat reports whether b is a message format this build reads.
func isMessageFormat(b byte) bool { return b == formatMessage || b == formatMessageTimed }

// Read-times value, format 1 (chan/<c>/r/tskey), present when the message has any:
//
//	format(1) bits(1) [LastPolledAt time, if rtPolled] [ThreadSyncedAt time, if rtThreadSynced]
//
// rtRotatedThread says that RotatedAt() is ThreadSyncedAt (else it is LastPolledAt),
// so the tail index time is known without the content.
const formatReadTimes = 1

const (
	rtPolled = 1 << iota
	rtThreadSynced
	rtRotatedThread
)

const (
	flagTimeline = 1 << iota // m.InTimeline()
	flagTracked              // m.IsTracked(): the record has a tail index entry
	flagPolled               // RotatedAt() != nil: the header holds the tail index time
	flagEdited               // Edited != nil
	flagOwnPost
	flagDeleted
	flagMissing // MissingSince != nil
	flagReply   // m.IsReply(): the record has a thread index entry under ThreadTS
)

func messageFlags(m *readmodel.Message) byte {
	var f byte
	if m.InTimeline() {
		f |= flagTimeline
	}
	if m.IsTracked() {
		f |= flagTracked
	}
	if m.RotatedAt() != nil {
		f |= flagPolled
	}
	if m.Edited != nil {
		f |= flagEdited
	}
	if m.OwnPost {
		f |= flagOwnPost
	}
	if m.Deleted {
		f |= flagDeleted
	}
	if m.MissingSince != nil {
		f |= flagMissing
	}
	if m.IsReply() {
		f |= flagReply
	}
	return f
}

// messageSizeBound is an upper bound of the encoded size of m, so the arena can hand
// out a slice append never outgrows.
func messageSizeBound(m *readmodel.Message) int {
	n := 3 + maxVarint*24 + len(m.TS) + len(m.ThreadTS) + len(m.User) + len(m.BotID) +
		len(m.BotName) + len(m.Subtype) + len(m.Text) + len(m.LatestReply) +
		len(m.ReplyWatermark) + len(m.Record)
	if m.Edited != nil {
		n += len(m.Edited.User) + len(m.Edited.TS)
	}
	for i := range m.Reactions {
		r := &m.Reactions[i]
		n += maxVarint*(3+len(r.Users)) + len(r.Name)
		for _, u := range r.Users {
			n += len(u)
		}
	}
	return n
}

// Extension flags (the byte after record).
const (
	extPolled       = 1 << iota // LastPolledAt != nil
	extThreadSynced             // ThreadSyncedAt != nil
	extThreadGone               // ThreadGone
	extRetired                  // Retired
)

// appendMessage appends the format-3 encoding of m (its content) to b.
func appendMessage(b []byte, m *readmodel.Message) []byte {
	return appendMessageFormat(b, m, formatMessage)
}

// appendMessageTimed appends the format-2 encoding of m, read times inline: what
// earlier releases wrote (tests build old stores with it).
func appendMessageTimed(b []byte, m *readmodel.Message) []byte {
	return appendMessageFormat(b, m, formatMessageTimed)
}

func appendMessageFormat(b []byte, m *readmodel.Message, format byte) []byte {
	timed := format == formatMessageTimed
	flags := messageFlags(m)
	b = append(b, format, flags)
	if rot := m.RotatedAt(); rot != nil && timed {
		b = appendTime(b, *rot)
	}
	b = appendString(b, string(m.TS))
	b = appendString(b, string(m.ThreadTS))
	b = appendString(b, m.User)
	b = appendString(b, m.BotID)
	b = appendString(b, m.BotName)
	b = appendString(b, m.Subtype)
	b = appendString(b, m.Text)
	if m.Edited != nil {
		b = appendString(b, m.Edited.User)
		b = appendString(b, string(m.Edited.TS))
	}
	b = appendReactions(b, m.Reactions)
	b = binary.AppendVarint(b, int64(m.ReplyCount))
	b = appendString(b, string(m.LatestReply))
	b = appendString(b, string(m.ReplyWatermark))
	if m.MissingSince != nil {
		b = appendTime(b, *m.MissingSince)
	}
	b = appendString(b, m.Record)
	var ext byte
	if m.LastPolledAt != nil && timed {
		ext |= extPolled
	}
	if m.ThreadSyncedAt != nil && timed {
		ext |= extThreadSynced
	}
	if m.ThreadGone {
		ext |= extThreadGone
	}
	if m.Retired {
		ext |= extRetired
	}
	b = append(b, ext)
	if m.LastPolledAt != nil && timed {
		b = appendTime(b, *m.LastPolledAt)
	}
	if m.ThreadSyncedAt != nil && timed {
		b = appendTime(b, *m.ThreadSyncedAt)
	}
	return b
}

// readTimesBound bounds the size of a read-times value.
const readTimesBound = 2 + 2*(2*maxVarint)

// appendReadTimes appends m's read-times value to b, or nothing when m has none.
func appendReadTimes(b []byte, m *readmodel.Message) []byte {
	if m.LastPolledAt == nil && m.ThreadSyncedAt == nil {
		return b
	}
	var bits byte
	if m.LastPolledAt != nil {
		bits |= rtPolled
	}
	if m.ThreadSyncedAt != nil {
		bits |= rtThreadSynced
		if rot := m.RotatedAt(); rot == m.ThreadSyncedAt {
			bits |= rtRotatedThread
		}
	}
	b = append(b, formatReadTimes, bits)
	if m.LastPolledAt != nil {
		b = appendTime(b, *m.LastPolledAt)
	}
	if m.ThreadSyncedAt != nil {
		b = appendTime(b, *m.ThreadSyncedAt)
	}
	return b
}

// readTimes decodes a read-times value: the message's LastPolledAt, ThreadSyncedAt and
// which of them is its RotatedAt. An empty rt has none.
func readTimes(rt []byte) (polled, synced *time.Time, rotated *time.Time, err error) {
	if len(rt) == 0 {
		return nil, nil, nil, nil
	}
	r := reader{s: string(rt)}
	if f := r.byte(); r.err == nil && f != formatReadTimes {
		return nil, nil, nil, fmt.Errorf("unknown read-times format %d", f)
	}
	bits := r.byte()
	if bits&rtPolled != 0 {
		t := r.time()
		polled = &t
	}
	if bits&rtThreadSynced != 0 {
		t := r.time()
		synced = &t
	}
	if err := r.end(); err != nil {
		return nil, nil, nil, err
	}
	rotated = polled
	if bits&rtRotatedThread != 0 {
		rotated = synced
	}
	return polled, synced, rotated, nil
}

// errNoTailTime: a format-3 message flagged as read has no read time to key its tail
// entry by (its read-times record is missing).
var errNoTailTime = errors.New("the tail index time is missing")

// decodeMessage decodes a message value of channel, with its read-times value rt
// (format 3; nil when it has none). The result shares no memory with v or rt.
func decodeMessage(channel string, v, rt []byte) (readmodel.Message, error) {
	r := reader{s: string(v)}
	m := readmodel.Message{Channel: channel}
	format := r.byte()
	if r.err == nil && !isMessageFormat(format) {
		return m, fmt.Errorf("unknown message format %d", format)
	}
	flags := r.byte()
	if flags&flagPolled != 0 && format == formatMessageTimed {
		r.time() // the tail index time, derived from the fields below
	}
	m.TS = readmodel.TS(r.string())
	m.ThreadTS = readmodel.TS(r.string())
	m.User = r.string()
	m.BotID = r.string()
	m.BotName = r.string()
	m.Subtype = r.string()
	m.Text = r.string()
	if flags&flagEdited != 0 {
		m.Edited = &readmodel.Edited{User: r.string(), TS: readmodel.TS(r.string())}
	}
	m.Reactions = r.reactions()
	m.ReplyCount = r.int()
	m.LatestReply = readmodel.TS(r.string())
	m.ReplyWatermark = readmodel.TS(r.string())
	if flags&flagMissing != 0 {
		t := r.time()
		m.MissingSince = &t
	}
	m.Record = r.string()
	ext := r.byte()
	if ext&extPolled != 0 {
		t := r.time()
		m.LastPolledAt = &t
	}
	if ext&extThreadSynced != 0 {
		t := r.time()
		m.ThreadSyncedAt = &t
	}
	m.ThreadGone = ext&extThreadGone != 0
	m.Retired = ext&extRetired != 0
	m.OwnPost = flags&flagOwnPost != 0
	m.Deleted = flags&flagDeleted != 0
	if err := r.end(); err != nil {
		return readmodel.Message{}, err
	}
	if format == formatMessage {
		polled, synced, rot, err := readTimes(rt)
		if err == nil && flags&flagPolled != 0 && rot == nil {
			err = errNoTailTime
		}
		if err != nil {
			return readmodel.Message{}, fmt.Errorf("read times: %w", err)
		}
		m.LastPolledAt, m.ThreadSyncedAt = polled, synced
	}
	return m, nil
}

// header is what the indexes need from a stored message, read without decoding it.
// threadTS points into bbolt memory: use it only inside the transaction.
type header struct {
	flags    byte
	polled   uint64 // tail index time (see polledKey); 0 when never polled
	threadTS []byte
}

func (h *header) tracked() bool { return h.flags&flagTracked != 0 }

func (h *header) isReply() bool { return h.flags&flagReply != 0 }

// readHeader parses the header of a message value, with its read-times value rt
// (format 3), which holds the tail index time.
func readHeader(v, rt []byte) (header, error) {
	var h header
	if len(v) < 2 {
		return h, errTruncated
	}
	if !isMessageFormat(v[0]) {
		return h, fmt.Errorf("unknown message format %d", v[0])
	}
	h.flags = v[1]
	p := v[2:]
	if h.flags&flagPolled != 0 && v[0] == formatMessage {
		_, _, rot, err := readTimes(rt)
		if err != nil {
			return h, fmt.Errorf("read times: %w", err)
		}
		if rot == nil {
			return h, fmt.Errorf("read times: %w", errNoTailTime)
		}
		h.polled = polledKey(*rot)
	}
	if h.flags&flagPolled != 0 && v[0] == formatMessageTimed {
		sec, n := binary.Varint(p)
		if n <= 0 {
			return h, errTruncated
		}
		nsec, n2 := binary.Uvarint(p[n:])
		if n2 <= 0 || nsec >= 1e9 {
			return h, errTruncated
		}
		p = p[n+n2:]
		h.polled = polledKey(time.Unix(sec, int64(nsec)))
	}
	for i := 0; i < 2; i++ { // skip ts, then read thread_ts
		l, n := binary.Uvarint(p)
		if n <= 0 || l > uint64(len(p)-n) {
			return h, errTruncated
		}
		if i == 1 {
			h.threadTS = p[n : n+int(l)]
		}
		p = p[n+int(l):]
	}
	return h, nil
}

// appendReactions appends n_reactions{ name count(varint) n_users{ user } }.
func appendReactions(b []byte, rs []readmodel.Reaction) []byte {
	b = binary.AppendUvarint(b, uint64(len(rs)))
	for i := range rs {
		r := &rs[i]
		b = appendString(b, r.Name)
		b = binary.AppendVarint(b, int64(r.Count))
		b = binary.AppendUvarint(b, uint64(len(r.Users)))
		for _, u := range r.Users {
			b = appendString(b, u)
		}
	}
	return b
}

// reactions reads what appendReactions wrote; none is nil.
func (r *reader) reactions() []readmodel.Reaction {
	// Each reaction takes at least 3 bytes (name length, count, user count).
	n := r.count(3)
	if n == 0 {
		return nil
	}
	rs := make([]readmodel.Reaction, n)
	for i := range rs {
		rc := &rs[i]
		rc.Name = r.string()
		rc.Count = r.int()
		if nu := r.count(1); nu > 0 {
			rc.Users = make([]string, nu)
			for j := range rc.Users {
				rc.Users[j] = r.string()
			}
		}
	}
	return rs
}
