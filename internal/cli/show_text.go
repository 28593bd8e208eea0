package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// usersOf returns the user IDs a message line names that are not labelled in it:
// reaction users and editors, of the message and of its replies (authors come with
// user_label already).
func usersOf(l *export.MessageLine) []string {
	var ids []string
	add := func(edited *rm.Edited, reactions []rm.Reaction) {
		if edited != nil && edited.User != "" {
			ids = append(ids, edited.User)
		}
		for _, r := range reactions {
			ids = append(ids, r.Users...)
		}
	}
	add(l.Edited, l.Reactions)
	for _, r := range l.Replies {
		add(r.Edited, r.Reactions)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// writeShow prints a message line for a human: the message with its state, then its
// thread. labels maps user IDs to names; an ID without one prints as itself. ownUser is
// the bot user ID from auth.test ("" if not known yet): reactions and edits by it are
// marked "own" (README, "How it works": own reactions are told apart by the bot user ID).
func writeShow(w io.Writer, l *export.MessageLine, labels map[string]string, ownUser string) error {
	name := func(id string) string {
		own := ""
		if id == ownUser {
			own = ", own"
		}
		if n := labels[id]; n != "" && n != id {
			return n + " (" + id + own + ")"
		}
		if own != "" {
			return id + " (own)"
		}
		return id
	}
	var b strings.Builder
	field := func(k, format string, args ...any) {
		fmt.Fprintf(&b, "%-11s"+format+"\n", append([]any{k + ":"}, args...)...)
	}

	fmt.Fprintf(&b, "%s %s\n", l.Channel, tsTime(l.TS))
	if l.LastPolledAt == nil && l.Text == "" && l.User == "" && l.BotID == "" {
		// A placeholder added by track: there is nothing else to show yet.
		field("state", "tracked, never read: the next tick reads it first")
		field("record", "%s", orNone(l.Record))
		_, err := io.WriteString(w, b.String())
		return err
	}
	field("from", "%s", author(l.User, l.UserLabel, l.BotID))
	field("text", "%s", indentText(l.Text))
	if l.Edited != nil {
		field("edited", "by %s at %s", name(l.Edited.User), tsTime(l.Edited.TS))
	}
	field("reactions", "%s", reactionsText(l.Reactions, name))
	field("own post", "%s", yesNo(l.OwnPost))
	field("record", "%s", orNone(l.Record))
	switch {
	case l.Deleted:
		field("deleted", "yes: Slack deleted it; its last known content is shown")
	case l.MissingSince != nil:
		field("missing", "since %s: a complete read did not find it", l.MissingSince.Format(time.RFC3339))
	}
	if l.LastPolledAt != nil {
		field("polled", "%s", l.LastPolledAt.Format(time.RFC3339))
	}
	if l.ThreadTS != "" && l.ThreadTS != l.TS {
		field("thread", "a reply in the thread of %s (show that ts for the whole thread)", l.ThreadTS)
	} else if l.ReplyCount > 0 || len(l.Replies) > 0 {
		field("thread", "%s, latest %s, synced up to %s", plural(l.ReplyCount, "reply", "replies"), orNone(string(l.LatestReply)), orNone(string(l.ReplyWatermark)))
		for _, r := range l.Replies {
			fmt.Fprintf(&b, "  %s  %s%s: %s\n", r.TS, author(r.User, r.UserLabel, r.BotID), ownMark(r.OwnPost), indentText(r.Text))
			if r.Edited != nil {
				fmt.Fprintf(&b, "      edited by %s at %s\n", name(r.Edited.User), tsTime(r.Edited.TS))
			}
			if len(r.Reactions) > 0 {
				fmt.Fprintf(&b, "      reactions: %s\n", reactionsText(r.Reactions, name))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func author(user, label, botID string) string {
	switch {
	case user != "" && label != "" && label != user:
		return label + " (" + user + ")"
	case user != "":
		return user
	case label != "" && label != botID:
		return label + " (bot " + botID + ")"
	case botID != "":
		return "bot " + botID
	}
	return "(unknown)"
}

// reactionsText prints ":name: count (users)", noting users Slack did not list (it
// truncates the users of busy reactions; count stays exact).
func reactionsText(rs []rm.Reaction, name func(string) string) string {
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		users := make([]string, len(r.Users))
		for j, u := range r.Users {
			users[j] = name(u)
		}
		if more := r.Count - len(r.Users); more > 0 {
			users = append(users, fmt.Sprintf("%d more", more))
		}
		parts[i] = fmt.Sprintf(":%s: %d (%s)", r.Name, r.Count, strings.Join(users, ", "))
	}
	return strings.Join(parts, "; ")
}

// tsTime renders a ts with its UTC time, for humans; the ts itself stays exact.
func tsTime(ts rm.TS) string {
	sec, _, ok := ts.Parts()
	if !ok {
		return string(ts)
	}
	return string(ts) + " (" + time.Unix(int64(sec), 0).UTC().Format(time.RFC3339) + ")"
}

// indentText keeps a multi-line text aligned under its field.
func indentText(s string) string {
	if s == "" {
		return "(empty)"
	}
	return strings.ReplaceAll(s, "\n", "\n"+strings.Repeat(" ", 11))
}

func ownMark(own bool) string {
	if own {
		return " [own post]"
	}
	return ""
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
