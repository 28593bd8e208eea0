package cli

import (
	"fmt"
	"net/url"
	"strings"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// messageArgs checks the arguments of a command that names one message: CHANNEL TS,
// or a message link copied from Slack ("Copy link":
// https://acme.slack.com/archives/C0123456789/p1754467200123456, with ?thread_ts=…
// for a reply).
func messageArgs(cmd string) func(c *cmdCtx) error {
	return func(c *cmdCtx) error {
		if cmd == "show" && c.record != "" {
			if len(c.args) != 0 {
				return usageErr("show --record takes no CHANNEL TS, got %q", strings.Join(c.args, " "))
			}
			return nil
		}
		if len(c.args) == 1 || len(c.args) == 2 {
			// Checked before the config is read, so that a mistyped ts is the error.
			if _, err := parseMessageRef(c.args); err != nil {
				return usageErr("%s: %v", cmd, err)
			}
			return nil
		}
		return usageErr("%s needs CHANNEL TS or a message link, got %q", cmd, strings.Join(c.args, " "))
	}
}

// parseMessageRef reads a message from CHANNEL TS or from a message link. A ts is
// normalised to Slack's form, <seconds>.<6 digits> ("1754467200.5" is
// "1754467200.500000", the same time), so that it names the message Slack returns; a
// ts without its fraction is refused: it names no message, and is most often a ts cut
// short by a spreadsheet or a float.
func parseMessageRef(args []string) (rm.Ref, error) {
	if len(args) == 1 {
		return parsePermalink(args[0])
	}
	ch, s := args[0], args[1]
	if !rm.ValidConversationID(ch) {
		return rm.Ref{}, fmt.Errorf("%q is not a Slack conversation ID (C…, G… or D…, as shown in the conversation's details in Slack)", ch)
	}
	ts, err := normalizeMessageTS(s)
	if err != nil {
		return rm.Ref{}, err
	}
	return rm.Ref{Channel: ch, TS: ts}, nil
}

func normalizeMessageTS(s string) (rm.TS, error) {
	if _, err := rm.ParseTS(s); err != nil {
		return "", err
	}
	whole, frac, ok := strings.Cut(s, ".")
	if !ok {
		return "", fmt.Errorf("ts %q has no microseconds: a message ts is <seconds>.<6 digits>, e.g. %s.000100 (copy it from the message's link in Slack, or give the link itself)", s, s)
	}
	return rm.TS(whole + "." + frac + strings.Repeat("0", 6-len(frac))), nil
}

// parsePermalink reads a Slack message link: /archives/<channel>/p<ts without the dot>.
func parsePermalink(s string) (rm.Ref, error) {
	bad := func(why string) (rm.Ref, error) {
		return rm.Ref{}, fmt.Errorf("%q is not a message link (%s): give CHANNEL TS, or a link from the message's \"Copy link\", such as https://acme.slack.com/archives/C0123456789/p1754467200123456", s, why)
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
	if !ok || len(digits) < 7 || !isDigits(digits) {
		return bad(fmt.Sprintf("%q is not p followed by the ts's digits", p))
	}
	ts, err := rm.ParseTS(digits[:len(digits)-6] + "." + digits[len(digits)-6:])
	if err != nil {
		return bad(err.Error())
	}
	return rm.Ref{Channel: ch, TS: ts}, nil
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
