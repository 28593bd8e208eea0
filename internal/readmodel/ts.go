package readmodel

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// TS is a Slack message timestamp, kept as the exact string the API sent
// ("1754467200.123456"). It is an opaque identifier, unique per conversation, and is
// never round-tripped through a float: ordering parses it into integer seconds and
// microseconds instead. The zero value "" means "none".
type TS string

// TSKeyLen is the length in bytes of a TS sort key (see TS.Key).
const TSKeyLen = 12

// ParseTS checks that s has Slack's ts shape, "<seconds>.<fraction>", with 1-19
// digits of seconds and 1-6 digits of fraction, and returns it unchanged as a TS.
// Seconds-only strings ("1754467200") are accepted too: Slack's oldest/latest
// arguments take them. The error names the bad value.
func ParseTS(s string) (TS, error) {
	if _, _, err := splitTS(s); err != nil {
		return "", err
	}
	return TS(s), nil
}

func splitTS(s string) (sec uint64, micros uint32, err error) {
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || len(whole) > 19 || !allDigits(whole) {
		return 0, 0, fmt.Errorf("invalid ts %q: want <seconds>.<microseconds>", s)
	}
	if hasDot && (frac == "" || len(frac) > 6 || !allDigits(frac)) {
		return 0, 0, fmt.Errorf("invalid ts %q: want at most 6 digits after the dot", s)
	}
	sec, err = strconv.ParseUint(whole, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("invalid ts %q: %w", s, err)
	}
	// The fraction is a decimal fraction: ".5" is 500000 µs, so pad on the right.
	for len(frac) < 6 {
		frac += "0"
	}
	m, _ := strconv.ParseUint(frac, 10, 32)
	return sec, uint32(m), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Valid reports whether t has Slack's ts shape (see ParseTS).
func (t TS) Valid() bool {
	_, _, err := splitTS(string(t))
	return err == nil
}

// Parts returns t as integer seconds and microseconds. An invalid ts returns (0, 0)
// and ok == false.
func (t TS) Parts() (sec uint64, micros uint32, ok bool) {
	sec, micros, err := splitTS(string(t))
	return sec, micros, err == nil
}

// Key returns a 12-byte sort key: big-endian seconds (8 bytes) then microseconds
// (4 bytes), so byte order equals time order even across a change in the number of
// digits of the seconds. An invalid ts gives the all-zero key; callers validate first.
func (t TS) Key() [TSKeyLen]byte {
	var k [TSKeyLen]byte
	sec, micros, _ := t.Parts()
	binary.BigEndian.PutUint64(k[:8], sec)
	binary.BigEndian.PutUint32(k[8:], micros)
	return k
}

// Compare orders two ts by time: -1 if t is earlier than u, 0 if equal in time, +1 if
// later. "" sorts before every valid ts.
func (t TS) Compare(u TS) int {
	ts, tm, _ := t.Parts()
	us, um, _ := u.Parts()
	switch {
	case ts < us:
		return -1
	case ts > us:
		return 1
	case tm < um:
		return -1
	case tm > um:
		return 1
	}
	return 0
}

// Before reports whether t is strictly earlier than u.
func (t TS) Before(u TS) bool { return t.Compare(u) < 0 }

// Unix returns the seconds part of t, for windows computed from wall-clock time.
func (t TS) Unix() int64 {
	sec, _, _ := t.Parts()
	return int64(sec)
}

// TSFromUnix formats whole seconds as a ts ("1754467200.000000"), for the oldest and
// latest arguments of conversations.history.
func TSFromUnix(sec int64) TS {
	if sec < 0 {
		sec = 0
	}
	return TS(strconv.FormatInt(sec, 10) + ".000000")
}
