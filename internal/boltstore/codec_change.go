package boltstore

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Change value, format 2 (byte 0): the change feed's rows in binary, smaller than their
// JSON (format 1, written by earlier releases and still read: see decodeChange): a
// backfilled feed takes 466 bytes a message on disk instead of 839 (BenchmarkExport).
// Strings are uvarint length + bytes, times (varint seconds, uvarint nanoseconds) UTC.
//
//	format(1) version(uvarint) kind(1: index in changeKinds, 0: string follows [kind])
//	id(1: 16 = 32 lowercase hex digits as 16 bytes follow, else 0 and a string)
//	flags(1: own, before, after) channel ts thread_ts record thread_record reaction user
//	observed_at [before value] [after value]
//
// value: flags(2, see cv*) [text] [edited.user edited.ts] user bot_id subtype
//
//	[n_reactions{ name count(varint) n_users{ user } }] [count(varint)] [n_users{ user }]
//	status label
const formatChange = 2

// changeKinds are the kinds a byte stands for (its index); 0 is "the kind as a string".
var changeKinds = []string{"",
	readmodel.ChangeMessagePosted, readmodel.ChangeMessageEdited, readmodel.ChangeMessageDeleted,
	readmodel.ChangeMessageMissing, readmodel.ChangeMessageReappeared, readmodel.ChangeReactionAdded,
	readmodel.ChangeReactionRemoved, readmodel.ChangeReactionCountChanged, readmodel.ChangeReplyAdded,
	readmodel.ChangeReplyRemoved, readmodel.ChangeConversationStatus, readmodel.ChangeUserRenamed,
}

const (
	chOwn = 1 << iota
	chBefore
	chAfter
)

const (
	cvText = 1 << iota
	cvEdited
	cvReactions
	cvReactionsOmitted
	cvCount
	cvUsers
	cvUsersOmitted
	cvDeleted
)

// appendChange appends the format-2 encoding of c to b.
func appendChange(b []byte, c *readmodel.Change) []byte {
	b = append(b, formatChange)
	b = binary.AppendUvarint(b, uint64(c.Version))
	kind := byte(0)
	for i, k := range changeKinds[1:] {
		if k == c.Kind {
			kind = byte(i + 1)
		}
	}
	b = append(b, kind)
	if kind == 0 {
		b = appendString(b, c.Kind)
	}
	if id, ok := hexID(c.ID); ok {
		b = append(b, 16)
		b = append(b, id[:]...)
	} else {
		b = append(b, 0)
		b = appendString(b, c.ID)
	}
	var flags byte
	if c.Own {
		flags |= chOwn
	}
	if c.Before != nil {
		flags |= chBefore
	}
	if c.After != nil {
		flags |= chAfter
	}
	b = append(b, flags)
	for _, s := range []string{c.Channel, string(c.TS), string(c.ThreadTS), c.Record, c.ThreadRecord, c.Reaction, c.User} {
		b = appendString(b, s)
	}
	b = appendTime(b, c.ObservedAt)
	if c.Before != nil {
		b = appendChangeValue(b, c.Before)
	}
	if c.After != nil {
		b = appendChangeValue(b, c.After)
	}
	return b
}

// hexID returns the 16 bytes of a 32-digit lowercase hex ID, ok false for any other ID
// (which is stored as a string, so that it reads back byte for byte).
func hexID(id string) (out [16]byte, ok bool) {
	if len(id) != 32 {
		return out, false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return out, false
		}
	}
	_, err := hex.Decode(out[:], []byte(id))
	return out, err == nil
}

func appendChangeValue(b []byte, v *readmodel.ChangeValue) []byte {
	var flags uint16
	set := func(bit uint16, on bool) {
		if on {
			flags |= bit
		}
	}
	set(cvText, v.Text != nil)
	set(cvEdited, v.Edited != nil)
	set(cvReactions, len(v.Reactions) > 0)
	set(cvReactionsOmitted, v.ReactionsOmitted)
	set(cvCount, v.Count != nil)
	set(cvUsers, len(v.Users) > 0)
	set(cvUsersOmitted, v.UsersOmitted)
	set(cvDeleted, v.Deleted)
	b = binary.LittleEndian.AppendUint16(b, flags)
	if v.Text != nil {
		b = appendString(b, *v.Text)
	}
	if v.Edited != nil {
		b = appendString(b, v.Edited.User)
		b = appendString(b, string(v.Edited.TS))
	}
	b = appendString(b, v.User)
	b = appendString(b, v.BotID)
	b = appendString(b, v.Subtype)
	if len(v.Reactions) > 0 {
		b = appendReactions(b, v.Reactions)
	}
	if v.Count != nil {
		b = binary.AppendVarint(b, int64(*v.Count))
	}
	if len(v.Users) > 0 {
		b = binary.AppendUvarint(b, uint64(len(v.Users)))
		for _, u := range v.Users {
			b = appendString(b, u)
		}
	}
	b = appendString(b, v.Status)
	return appendString(b, v.Label)
}

// decodeChange decodes a stored change of either format: 2 (binary) or 1 (JSON, what
// earlier releases wrote).
func decodeChange(v []byte) (readmodel.Change, error) {
	var c readmodel.Change
	if len(v) > 0 && v[0] == formatJSON1 {
		err := decodeJSON(v, &c)
		return c, err
	}
	r := reader{s: string(v)}
	if f := r.byte(); r.err == nil && f != formatChange {
		return c, fmt.Errorf("unknown change format %d", f)
	}
	version := r.uvarint()
	if r.err == nil && version > 1<<16 {
		r.fail(fmt.Errorf("version %d out of range", version))
	}
	c.Version = max(int(version), 1) // as Change.UnmarshalJSON: no version is version 1
	kind := r.byte()
	switch {
	case kind == 0:
		c.Kind = r.string()
	case int(kind) < len(changeKinds):
		c.Kind = changeKinds[kind]
	default:
		r.fail(fmt.Errorf("unknown change kind %d", kind))
	}
	switch r.byte() {
	case 16:
		var id [16]byte
		for i := range id {
			id[i] = r.byte()
		}
		c.ID = hex.EncodeToString(id[:])
	case 0:
		c.ID = r.string()
	default:
		r.fail(fmt.Errorf("unknown change id form"))
	}
	flags := r.byte()
	c.Own = flags&chOwn != 0
	c.Channel = r.string()
	c.TS = readmodel.TS(r.string())
	c.ThreadTS = readmodel.TS(r.string())
	c.Record = r.string()
	c.ThreadRecord = r.string()
	c.Reaction = r.string()
	c.User = r.string()
	c.ObservedAt = r.time()
	if flags&chBefore != 0 {
		c.Before = readChangeValue(&r)
	}
	if flags&chAfter != 0 {
		c.After = readChangeValue(&r)
	}
	if err := r.end(); err != nil {
		return readmodel.Change{}, err
	}
	return c, nil
}

func readChangeValue(r *reader) *readmodel.ChangeValue {
	v := &readmodel.ChangeValue{}
	flags := uint16(r.byte()) | uint16(r.byte())<<8
	if flags&cvText != 0 {
		s := r.string()
		v.Text = &s
	}
	if flags&cvEdited != 0 {
		v.Edited = &readmodel.Edited{User: r.string(), TS: readmodel.TS(r.string())}
	}
	v.User = r.string()
	v.BotID = r.string()
	v.Subtype = r.string()
	if flags&cvReactions != 0 {
		v.Reactions = r.reactions()
	}
	v.ReactionsOmitted = flags&cvReactionsOmitted != 0
	if flags&cvCount != 0 {
		n := r.int()
		v.Count = &n
	}
	if flags&cvUsers != 0 {
		if n := r.count(1); n > 0 {
			v.Users = make([]string, n)
			for i := range v.Users {
				v.Users[i] = r.string()
			}
		}
	}
	v.UsersOmitted = flags&cvUsersOmitted != 0
	v.Deleted = flags&cvDeleted != 0
	v.Status = r.string()
	v.Label = r.string()
	return v
}
