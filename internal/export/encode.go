package export

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// appendMessageLine appends l as encoding/json encodes it (HTML escaping off) followed
// by a newline, as json.Encoder.Encode writes it. Export writes a line per timeline
// message: reflection cost more than reading the store did. TestMessageLineEncoding
// holds the two to the same bytes. ok is false when encoding/json would fail (a time
// outside years 0–9999): the caller encodes that line with it, to report its error.
func appendMessageLine(b []byte, l *MessageLine) (_ []byte, ok bool) {
	if !timeOK(l.MissingSince) || !timeOK(l.LastPolledAt) {
		return b, false
	}
	for i := range l.Replies {
		if !timeOK(l.Replies[i].LastPolledAt) {
			return b, false
		}
	}
	b = append(b, `{"kind":`...)
	b = appendString(b, l.Kind)
	b = append(b, `,"team_id":`...)
	b = appendString(b, l.TeamID)
	b = append(b, `,"channel":`...)
	b = appendString(b, l.Channel)
	b = append(b, `,"ts":`...)
	b = appendString(b, string(l.TS))
	b = append(b, `,"thread_ts":`...)
	b = appendString(b, string(l.ThreadTS))
	b = append(b, `,"user":`...)
	b = appendString(b, l.User)
	b = append(b, `,"user_label":`...)
	b = appendString(b, l.UserLabel)
	b = append(b, `,"bot_id":`...)
	b = appendString(b, l.BotID)
	b = append(b, `,"subtype":`...)
	b = appendString(b, l.Subtype)
	b = append(b, `,"text":`...)
	b = appendString(b, l.Text)
	b = append(b, `,"edited":`...)
	b = appendEdited(b, l.Edited)
	b = append(b, `,"reactions":`...)
	b = appendReactions(b, l.Reactions)
	b = append(b, `,"reply_count":`...)
	b = strconv.AppendInt(b, int64(l.ReplyCount), 10)
	b = append(b, `,"latest_reply":`...)
	b = appendString(b, string(l.LatestReply))
	b = append(b, `,"reply_watermark":`...)
	b = appendString(b, string(l.ReplyWatermark))
	b = append(b, `,"replies":`...)
	if l.Replies == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range l.Replies {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendReplyLine(b, &l.Replies[i])
		}
		b = append(b, ']')
	}
	b = append(b, `,"own_post":`...)
	b = strconv.AppendBool(b, l.OwnPost)
	b = append(b, `,"deleted":`...)
	b = strconv.AppendBool(b, l.Deleted)
	b = append(b, `,"missing_since":`...)
	b = appendTime(b, l.MissingSince)
	b = append(b, `,"record":`...)
	b = appendString(b, l.Record)
	b = append(b, `,"last_polled_at":`...)
	b = appendTime(b, l.LastPolledAt)
	b = append(b, `,"tracked":`...)
	b = strconv.AppendBool(b, l.Tracked)
	return append(b, "}\n"...), true
}

func appendReplyLine(b []byte, r *ReplyLine) []byte {
	b = append(b, `{"ts":`...)
	b = appendString(b, string(r.TS))
	b = append(b, `,"thread_ts":`...)
	b = appendString(b, string(r.ThreadTS))
	b = append(b, `,"user":`...)
	b = appendString(b, r.User)
	b = append(b, `,"user_label":`...)
	b = appendString(b, r.UserLabel)
	b = append(b, `,"bot_id":`...)
	b = appendString(b, r.BotID)
	b = append(b, `,"subtype":`...)
	b = appendString(b, r.Subtype)
	b = append(b, `,"text":`...)
	b = appendString(b, r.Text)
	b = append(b, `,"edited":`...)
	b = appendEdited(b, r.Edited)
	b = append(b, `,"reactions":`...)
	b = appendReactions(b, r.Reactions)
	b = append(b, `,"own_post":`...)
	b = strconv.AppendBool(b, r.OwnPost)
	b = append(b, `,"last_polled_at":`...)
	b = appendTime(b, r.LastPolledAt)
	return append(b, '}')
}

func appendEdited(b []byte, e *rm.Edited) []byte {
	if e == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"user":`...)
	b = appendString(b, e.User)
	b = append(b, `,"ts":`...)
	b = appendString(b, string(e.TS))
	return append(b, '}')
}

func appendReactions(b []byte, rs []rm.Reaction) []byte {
	if rs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range rs {
		r := &rs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendString(b, r.Name)
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, int64(r.Count), 10)
		b = append(b, `,"users":`...)
		if r.Users == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for j, u := range r.Users {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendString(b, u)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// timeOK reports whether encoding/json can encode t (time.Time.MarshalJSON refuses
// years outside 0–9999).
func timeOK(t *time.Time) bool {
	return t == nil || t.Year() >= 0 && t.Year() <= 9999
}

// appendTime appends t as time.Time.MarshalJSON does (RFC 3339 with nanoseconds), or
// null.
func appendTime(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string exactly as encoding/json does with HTML
// escaping off: \b \f \n \r \t and \" \\ by name, other control bytes as \u00XX,
// invalid UTF-8 as \ufffd, and U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// encodeMessageLine is appendMessageLine with encoding/json's answer for the lines it
// leaves to it.
func encodeMessageLine(b []byte, l *MessageLine) ([]byte, error) {
	if out, ok := appendMessageLine(b, l); ok {
		return out, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		return b, err
	}
	return append(b, buf.Bytes()...), nil
}
