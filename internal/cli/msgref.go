package cli

import (
	"strings"

	"github.com/slackpoll/slackpoll/internal/msglink"
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

// parseMessageRef reads a message from CHANNEL TS or from a message link
// (readmodel.ParseMessageRef, readmodel.ParseMessageLink).
func parseMessageRef(args []string) (rm.Ref, error) {
	if len(args) == 1 {
		return msglink.ParseMessageLink(args[0])
	}
	return msglink.ParseMessageRef(args[0], args[1])
}
