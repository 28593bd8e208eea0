package status

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// WriteText prints r as a compact human table: one row per conversation, then
// coverage, staleness, the last tick and the next one. Ages are relative to
// r.GeneratedAt, so the output depends on r only.
func (r *Report) WriteText(w io.Writer) error {
	p := &printer{w: w}
	if ws := r.Workspace; ws != nil {
		line := "workspace " + ws.TeamID + ": " + ws.State
		if ws.Reason != "" {
			line += " (" + ws.Reason + ")"
		}
		fmt.Fprintln(w, line)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tNAME\tTYPE\tSTATUS\tMSGS\tTHREADS\tTRACKED\tSWEPT\tHEAD AGE")
	for _, c := range r.Conversations {
		// A head age says how late a new message may be: only a conversation whose
		// bulk window was read whole (ok) has one worth showing.
		head := "-"
		if c.HeadAgeSeconds != nil && c.Status == rm.StatusOK {
			head = dur(*c.HeadAgeSeconds)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", c.ID, clip(dash(c.Name), maxNameWidth), dash(strings.TrimSuffix(c.Type, "_channel")),
			c.Status, c.Messages, c.Threads, c.Tracked, r.ago(c.LastSweptAt), head)
	}
	if len(r.Conversations) == 0 {
		fmt.Fprintln(tw, "(none: set conversations or discover: member in the config)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	p.line("")
	for _, c := range r.Conversations {
		if hint := c.statusHint(); hint != "" {
			p.line("%s: %s: %s", c.ID, c.Status, hint)
		}
	}
	for _, c := range r.Conversations {
		if c.WalkResumesBelow != "" {
			at := time.Unix(c.WalkResumesBelow.Unix(), 0)
			p.line("catching up: %s's bulk window is read down to %s (%s); the next sweep reads on below it", c.ID, c.WalkResumesBelow, stamp(at))
		}
	}
	if n := len(r.UndecodableRecords); n > 0 {
		p.line("undecodable stored records: %d (skipped by every read; a message is replaced by the next read of it from Slack)", n)
		for _, rec := range r.UndecodableRecords {
			p.line("  %s", rec)
		}
	}
	if id := r.Identity; id != nil {
		p.line("token: team %s, bot user %s, bot %s; checked %s", id.TeamID, dash(id.UserID), dash(id.BotID), r.timeAgo(&id.CheckAt))
	}
	cv := r.Coverage
	p.line("tracked: %d messages (%d never polled); oldest refresh: %s", cv.Tracked, cv.NeverPolled, r.timeAgo(cv.OldestPolledAt))
	if cv.RotationPeriodSeconds != nil {
		p.line("rotation period: %s; worst-case staleness: %s (rotation + one %s interval)",
			dur(*cv.RotationPeriodSeconds), dur(*cv.WorstCaseStalenessSeconds), dur(r.IntervalSeconds))
	} else {
		p.line("rotation period: unknown until a tick reads from the tail; interval %s", dur(r.IntervalSeconds))
	}
	if cv.PhysicalLimitSeconds != nil {
		ratio := ""
		if cv.RotationToLimit != nil {
			ratio = fmt.Sprintf(" (rotation is %.2f× that)", *cv.RotationToLimit)
		}
		page := "unknown yet"
		if cv.PageCap > 0 {
			page = fmt.Sprint(cv.PageCap)
		}
		p.line("physical limit at the configured rates: %s%s; history page cap: %s", dur(*cv.PhysicalLimitSeconds), ratio, page)
	}
	if cv.Watched > 0 {
		rot := "unknown yet"
		if cv.WatchedRotationSeconds != nil {
			rot = dur(*cv.WatchedRotationSeconds)
		}
		p.line("watched: %d messages; watched rotation: %s", cv.Watched, rot)
	}
	r.writeFeed(p)
	r.writeProjections(p)
	r.writeTick(p)
	return p.err
}

// writeProjections prints one line per SQL projection target: its state, how far
// behind the feed it is, and its last sync.
func (r *Report) writeProjections(p *printer) {
	for _, s := range r.Projections {
		line := fmt.Sprintf("projection %s %s: %s", s.Target, s.Name, s.State)
		if s.Sync != nil {
			line += fmt.Sprintf(" (%d of %d messages)", s.Sync.Messages, s.Sync.Total)
		}
		switch {
		case strings.HasPrefix(s.State, projection.StateStopped):
			line += fmt.Sprintf("; cursor %d of %d (lag %d changes)", s.CursorSeq, s.LastSeq, s.LagSeq)
		case s.State != projection.StateStarting && s.State != projection.StateError && s.State != projection.StateWaiting:
			line += fmt.Sprintf("; cursor %d of %d (lag %d changes, %s)", s.CursorSeq, s.LastSeq, s.LagSeq, dur(s.LagSeconds))
			if s.PendingMessages > 0 {
				line += fmt.Sprintf(", %d messages pending", s.PendingMessages)
			}
		}
		if s.SyncedAt != nil {
			line += "; synced " + r.ago(s.SyncedAt)
		}
		if s.LastError != "" {
			line += "; last error: " + s.LastError
		}
		p.line("%s", line)
	}
}

func (r *Report) writeTick(p *printer) {
	t := r.LastTick
	if t == nil {
		p.line("last tick: none yet")
	} else {
		p.line("last tick: %s (%s), took %s, stopped: %s", stamp(t.Started), r.ago(&t.Started), dur(t.DurationSeconds), t.StopReason)
		p.line("  calls: %s", callsText(t.Calls))
		p.line("  written: %d messages, %d threads; tail reads: %d; users resolved: %d",
			t.MessagesWritten, t.ThreadsWritten, t.TailRead, t.UsersResolved)
		for _, e := range t.Errors {
			p.line("  error: %s", e)
		}
	}
	switch {
	case r.TickInProgress != nil:
		t := r.TickInProgress
		p.line("tick in progress: tick %d since %s (%s), soft deadline %s", t.Tick, stamp(t.Started),
			r.GeneratedAt.Sub(t.Started).Round(time.Second), stamp(t.SoftDeadline))
		p.line("  calls so far: %s", callsText(t.Calls))
	case !r.DaemonRunning:
		p.line("next tick: none scheduled (no daemon holds the store)")
	case r.NextTickAt == nil:
		p.line("next tick: when the first one ends")
	case !r.NextTickAt.After(r.GeneratedAt):
		p.line("next tick: %s (now)", stamp(*r.NextTickAt))
	default:
		p.line("next tick: %s (in %s)", stamp(*r.NextTickAt), r.NextTickAt.Sub(r.GeneratedAt).Round(time.Second))
	}
}

// statusHint says what to do about a problem status, which the bare code in the
// table does not say; "" for the others.
func (c *Conversation) statusHint() string {
	switch {
	case c.NeededScope != "":
		return fmt.Sprintf("add scope %s to the app, reinstall it, then `slackpoll retry %s`", c.NeededScope, c.ID)
	case c.Status == rm.StatusNotInChannel:
		return "invite the bot (/invite @yourbot)"
	case c.Status == rm.StatusChannelNotFound:
		return "wrong id, or private and the bot is not in it"
	case c.Status == rm.StatusError && c.Error != "":
		return c.Error
	}
	return ""
}

// maxNameWidth bounds the NAME column: a group DM's generated name runs to 60
// characters and more, and made the table 172 columns wide. (TYPE drops
// "_channel" for the same reason: public, private, mpim, im.)
const maxNameWidth = 18

// clip shortens s to at most n runes, ending in "…" when cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func callsText(calls map[string]int) string {
	if len(calls) == 0 {
		return "none"
	}
	names := make([]string, 0, len(calls))
	for m := range calls {
		names = append(names, m)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, m := range names {
		parts[i] = fmt.Sprintf("%s %d", m, calls[m])
	}
	return strings.Join(parts, ", ")
}

// printer remembers the first write error so the text code stays linear.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (r *Report) ago(t *time.Time) string {
	if t == nil {
		return "never"
	}
	d := r.GeneratedAt.Sub(*t)
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String() + " ago"
}

func (r *Report) timeAgo(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return stamp(*t) + " (" + r.ago(t) + ")"
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// dur rounds to what a reader can use: milliseconds below a second, else seconds.
func dur(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
