package slackfake

import (
	"hash/fnv"
	"strconv"
	"unicode/utf8"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Message JSON is written by hand, field by field as Slack sends it, and cached per
// message until the message changes: conversations.history then costs little more
// than a copy. Shapes (see testdata/slack-api-ref):
//
//	user:        {"type","user","text","ts","client_msg_id","team","blocks",…}
//	app bot:     {"type","user","bot_id","app_id","bot_profile":{…},"text","ts",…}
//	classic bot: {"type","subtype":"bot_message","bot_id","username","bot_profile"?,"text","ts",…}
//	reply:       … "thread_ts","parent_user_id" …
//	parent:      … "thread_ts","reply_count","reply_users_count","latest_reply","reply_users","is_locked","subscribed" …
//	tombstone:   {"type","subtype":"tombstone","hidden":true,"user":"USLACKBOT","text":"This message was deleted.", thread fields}
//	optional:    "edited":{"user","ts"}, "reactions":[{"name","users","count"}]

const tombstoneText = "This message was deleted."

// encoded returns m's cached JSON, building it if stale. Callers hold s.mu.
func (s *Server) encoded(m *message) []byte {
	if m.enc == nil {
		m.enc = s.appendMessage(make([]byte, 0, 256), m, false)
	}
	return m.enc
}

// appendMessage appends m's JSON. bad writes latest_reply as a JSON number (the
// BadMessage fault), which fails slack-go's decoding of the whole page.
func (s *Server) appendMessage(b []byte, m *message, bad bool) []byte {
	b = append(b, `{"type":"message"`...)
	if m.tombstone {
		b = append(b, `,"subtype":"tombstone","hidden":true,"user":"USLACKBOT","text":`...)
		b = appendString(b, tombstoneText)
		b = appendField(b, "ts", string(m.ts))
		b = s.appendThread(b, m, bad)
		return append(b, '}')
	}
	if m.subtype != "" {
		b = appendField(b, "subtype", m.subtype)
	}
	if m.user != "" {
		b = appendField(b, "user", m.user)
	}
	if m.botID != "" {
		b = appendField(b, "bot_id", m.botID)
		if m.bot != nil && m.bot.AppID != "" && m.user != "" {
			b = appendField(b, "app_id", m.bot.AppID)
		}
	}
	if m.username != "" {
		b = appendField(b, "username", m.username)
	}
	if m.bot != nil {
		b = append(b, `,"bot_profile":{"id":`...)
		b = appendString(b, m.bot.ID)
		if m.bot.AppID != "" {
			b = appendField(b, "app_id", m.bot.AppID)
		}
		b = appendField(b, "name", m.bot.Name)
		b = append(b, `,"deleted":false,"updated":1700000000`...)
		b = appendField(b, "team_id", s.id.teamID)
		b = append(b, '}')
	}
	b = appendField(b, "text", m.text)
	b = appendField(b, "ts", string(m.ts))
	if p := m.parent; p != nil {
		b = appendField(b, "thread_ts", string(p.ts))
		parentUser := p.user
		if parentUser == "" {
			parentUser = p.botID
		}
		if parentUser != "" {
			b = appendField(b, "parent_user_id", parentUser)
		}
		if bad {
			b = append(b, `,"latest_reply":`...)
			b = appendNumberTS(b, m.ts)
		}
	} else {
		b = s.appendThread(b, m, bad)
	}
	if m.user != "" && m.botID == "" {
		b = appendField(b, "client_msg_id", clientMsgID(m))
		b = appendField(b, "team", s.id.teamID)
		if !s.opts.OmitBlocks {
			b = appendBlocks(b, m)
		}
	}
	if m.edited != nil {
		b = append(b, `,"edited":{"user":`...)
		b = appendString(b, m.edited.User)
		b = appendField(b, "ts", string(m.edited.TS))
		b = append(b, '}')
	}
	if len(m.reactions) > 0 {
		b = append(b, `,"reactions":[`...)
		for i, r := range m.reactions {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, r.name)
			b = append(b, `,"users":[`...)
			for j, u := range s.visibleUsers(r) {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendString(b, u)
			}
			b = append(b, `],"count":`...)
			b = strconv.AppendInt(b, int64(len(r.users)), 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendThread appends a top-level message's thread fields: none for a message
// without replies (except a bad latest_reply), the full set for a parent.
func (s *Server) appendThread(b []byte, m *message, bad bool) []byte {
	if len(m.replies) == 0 && !m.tombstone {
		if bad {
			b = append(b, `,"latest_reply":`...)
			b = appendNumberTS(b, m.ts)
		}
		return b
	}
	b = appendField(b, "thread_ts", string(m.ts))
	users := m.replyUsers()
	b = append(b, `,"reply_count":`...)
	b = strconv.AppendInt(b, int64(len(m.replies)), 10)
	b = append(b, `,"reply_users_count":`...)
	b = strconv.AppendInt(b, int64(len(users)), 10)
	b = append(b, `,"latest_reply":`...)
	if bad {
		b = appendNumberTS(b, m.latestReply())
	} else {
		b = appendString(b, string(m.latestReply()))
	}
	b = append(b, `,"reply_users":[`...)
	for i, u := range users {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, u)
	}
	return append(b, `],"is_locked":false,"subscribed":false`...)
}

// visibleUsers is a reaction's users list as the API shows it: at most
// ReactionUsersCap users, always including the token's own bot user if it reacted
// ("If the authenticated user has a given reaction then they are guaranteed to appear
// in the users array").
func (s *Server) visibleUsers(r *reaction) []string {
	n := s.opts.ReactionUsersCap
	if n <= 0 || len(r.users) <= n {
		return r.users
	}
	out := make([]string, n)
	copy(out, r.users[:n])
	for _, u := range r.users[n:] {
		if u == botUserID {
			out[n-1] = u
		}
	}
	return out
}

// appendBlocks appends a rich_text block mirroring the text, as Slack adds to
// messages posted from its clients.
func appendBlocks(b []byte, m *message) []byte {
	b = append(b, `,"blocks":[{"type":"rich_text","block_id":`...)
	b = appendString(b, blockID(m))
	b = append(b, `,"elements":[{"type":"rich_text_section","elements":[{"type":"text","text":`...)
	b = appendString(b, m.text)
	return append(b, `}]}]}]`...)
}

func hashOf(m *message, salt string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(m.conv.ID))
	h.Write([]byte(m.ts))
	h.Write([]byte(salt))
	return h.Sum64()
}

func blockID(m *message) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	v := hashOf(m, "block")
	var out [5]byte
	for i := range out {
		out[i] = alnum[v%uint64(len(alnum))]
		v /= uint64(len(alnum))
	}
	return string(out[:])
}

// clientMsgID is a deterministic UUID-shaped client_msg_id.
func clientMsgID(m *message) string {
	a, c := hashOf(m, "a"), hashOf(m, "c")
	const hex = "0123456789abcdef"
	var out []byte
	for i := 0; i < 32; i++ {
		if i == 8 || i == 12 || i == 16 || i == 20 {
			out = append(out, '-')
		}
		v := a
		if i >= 16 {
			v = c
		}
		out = append(out, hex[(v>>(4*(i%16)))&0xf])
	}
	return string(out)
}

func appendField(b []byte, name, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

// appendNumberTS writes a ts as a bare JSON number ("1754467200.000100" → 1754467200.000100).
func appendNumberTS(b []byte, ts readmodel.TS) []byte {
	if !ts.Valid() {
		return append(b, '0')
	}
	return append(b, ts...)
}

// appendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
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
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
