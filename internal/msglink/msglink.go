// Package msglink reads the ways people name a Slack message: a conversation ID
// and a ts, or a message link as Slack's "Copy link" gives it.
package msglink

import (
	"fmt"
	"net/url"
	"strings"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// ParseMessageRef reads a message named by a conversation ID and a ts. The ts is
// normalised to Slack's form, <seconds>.<6 digits> ("1754467200.5" is
// "1754467200.500000", the same time), so that it names the message Slack returns; a
// ts without its fraction is refused: it names no message, and is most often a ts cut
// short by a spreadsheet or a float. The CLI (show, track) and the MCP server
// (get_message, read_thread) name messages this way.
func ParseMessageRef(channel, ts string) (rm.Ref, error) {
	if !rm.ValidConversationID(channel) {
		return rm.Ref{}, fmt.Errorf("%q is not a Slack conversation ID (C…, G… or D…, as shown in the conversation's details in Slack)", channel)
	}
	t, err := NormalizeMessageTS(ts)
	if err != nil {
		return rm.Ref{}, err
	}
	return rm.Ref{Channel: channel, TS: t}, nil
}

// NormalizeMessageTS returns s in Slack's form, <seconds>.<6 digits>; see
// ParseMessageRef.
func NormalizeMessageTS(s string) (rm.TS, error) {
	if _, err := rm.ParseTS(s); err != nil {
		return "", err
	}
	whole, frac, ok := strings.Cut(s, ".")
	if !ok {
		return "", fmt.Errorf("ts %q has no microseconds: a message ts is <seconds>.<6 digits>, e.g. %s.000100 (copy it from the message's link in Slack, or give the link itself)", s, s)
	}
	return rm.TS(whole + "." + frac + strings.Repeat("0", 6-len(frac))), nil
}

// ParseMessageLink reads a Slack message link (the message's "Copy link",
// https://acme.slack.com/archives/C0123456789/p1754467200123456, with
// ?thread_ts=…&cid=… for a thread reply): /archives/<channel>/p<ts without the dot>.
// The link's host is not checked: every workspace has its own.
func ParseMessageLink(s string) (rm.Ref, error) {
	bad := func(why string) (rm.Ref, error) {
		return rm.Ref{}, fmt.Errorf("%q is not a message link (%s): give the conversation ID and ts, or a link from the message's \"Copy link\", such as https://acme.slack.com/archives/C0123456789/p1754467200123456", s, why)
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return bad("not a URL")
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 3 || parts[0] != "archives" {
		return bad("its path is not /archives/CHANNEL/pTS")
	}
	ch, p := parts[1], parts[2]
	if !rm.ValidConversationID(ch) {
		return bad(fmt.Sprintf("%q is not a conversation ID", ch))
	}
	digits, ok := strings.CutPrefix(p, "p")
	if !ok || len(digits) < 7 || strings.Trim(digits, "0123456789") != "" {
		return bad(fmt.Sprintf("%q is not p followed by the ts's digits", p))
	}
	ts, err := rm.ParseTS(digits[:len(digits)-6] + "." + digits[len(digits)-6:])
	if err != nil {
		return bad(err.Error())
	}
	return rm.Ref{Channel: ch, TS: ts}, nil
}
