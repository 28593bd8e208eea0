// Package status computes slackpoll's status report — coverage, staleness,
// per-conversation state and the last tick — from one read transaction of the read
// model. The CLI (`slackpoll status`) and the HTTP API (GET /v1/status) share it, so
// both say the same thing; the CLI prints it as a table (WriteText) or as JSON.
package status

import (
	"cmp"
	"slices"
	"time"

	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Report is the status of a read model at GeneratedAt. Durations are in seconds
// (float) so that the JSON is readable by any program; times are RFC 3339 UTC, null
// when not known.
type Report struct {
	GeneratedAt time.Time `json:"generated_at"`
	// DaemonRunning is true when the report comes from the running daemon (GET
	// /v1/status); a report read from the store file is of a store no daemon holds,
	// so no tick is scheduled.
	DaemonRunning bool `json:"daemon_running"`
	// IntervalSeconds is tick.interval.
	IntervalSeconds float64 `json:"interval_seconds"`
	// Identity is who the token is, as auth.test last answered (team, bot user, bot
	// ID, scopes); nil before the first tick. Its bot user ID is what tells our own
	// reactions apart (README, "How it works").
	Identity      *rm.Identity   `json:"identity"`
	Conversations []Conversation `json:"conversations"`
	Coverage      Coverage       `json:"coverage"`
	// LastTick is the summary of the last finished tick; nil before the first one.
	LastTick *Tick `json:"last_tick"`
	// TickInProgress is the tick the daemon is running now; nil between ticks and
	// when no daemon runs.
	TickInProgress *TickInProgress `json:"tick_in_progress"`
	// NextTickAt is when the next tick starts: the last tick's start plus the interval,
	// or its end when it overran. nil when no daemon runs or no tick has run yet.
	NextTickAt *time.Time `json:"next_tick_at"`
	// Feed is the change feed and the webhooks' outbox.
	Feed Feed `json:"feed"`
	// UndecodableRecords are the stored records found undecodable (skipped by every
	// read): "message C1/1700000000.000100: <error>". Read from the store file,
	// status decodes every record; from the daemon, they are those its reads met.
	UndecodableRecords []string `json:"undecodable_records"`
	// Projections are the SQL projection's targets: state, cursor and lag (seq and
	// seconds) behind the change feed (docs/sql.md).
	Projections []projection.Status `json:"projections"`
	// Workspace is the workspace's state in a daemon of many workspaces (store.dir);
	// absent from a one-workspace daemon's report.
	Workspace *WorkspaceState `json:"workspace,omitempty"`
}

// WorkspaceState is a workspace's state as the daemon of many workspaces runs it:
// active, paused, token_rejected, refresh_failed or damaged, and why.
type WorkspaceState struct {
	TeamID string `json:"team_id"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// Conversation is one conversation's state: its export fields (README, "Commands" (export)), the
// last per-conversation error, and its stored totals.
type Conversation struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	// Status is pending, ok, not_in_channel, missing_scope, channel_not_found,
	// archived or error.
	Status string `json:"status"`
	// NeededScope is the OAuth scope to add to the app when Status is missing_scope.
	NeededScope string     `json:"needed_scope"`
	Error       string     `json:"error"`
	Discovered  bool       `json:"discovered"`
	LastSweptAt *time.Time `json:"last_swept_at"`
	// WalkResumesBelow is set while a bulk window walk cut short is being finished:
	// the window has been read from its newest message down to this ts, and the next
	// sweep reads on below it before a fresh walk looks for new messages. "" when no
	// walk is pending.
	WalkResumesBelow rm.TS `json:"walk_resumes_below"`
	// Messages counts stored message records (replies included), Threads the thread
	// parents with a stored reply set, Tracked the messages in the tail rotation.
	Messages int `json:"messages"`
	Threads  int `json:"threads"`
	Tracked  int `json:"tracked"`
	// HeadAgeSeconds is the time from the conversation's last head read (its new
	// messages) to the end of the last tick: how late a new message may be to
	// appear. null before the first.
	HeadAgeSeconds *float64 `json:"head_age_seconds"`
}

// Coverage says how fresh the read model is.
type Coverage struct {
	// Tracked is the number of messages in the tail rotation, NeverPolled those of them
	// added by track and not read yet.
	Tracked     int `json:"tracked"`
	NeverPolled int `json:"never_polled"`
	// OldestPolledAt is the oldest refresh of a tracked message read at least once: its
	// own last read or, for a thread parent, its thread's last whole read, whichever is
	// older (readmodel.Message.RotatedAt); OldestPolledAgeSeconds its age at
	// GeneratedAt. null when none was read.
	OldestPolledAt         *time.Time `json:"oldest_last_polled_at"`
	OldestPolledAgeSeconds *float64   `json:"oldest_last_polled_age_seconds"`
	// RotationPeriodSeconds is the time the tail rotation needs to re-read every
	// tracked message: tracked ÷ the tail throughput of the last ticks (the poller's
	// TickSummary.RotationPeriod).
	// WorstCaseStalenessSeconds adds one interval: an edit or reaction the bulk window
	// and the reply watermarks cannot see is in the model within that time. Both null
	// when the last tick does not tell (no tick yet, or no tail read while some tracked
	// message was not read in it).
	RotationPeriodSeconds     *float64 `json:"rotation_period_seconds"`
	WorstCaseStalenessSeconds *float64 `json:"worst_case_staleness_seconds"`
	// Watched is the number of watched messages (record-keyed, or tracked on
	// request); WatchedRotationSeconds the time to re-read all of them, from the
	// last ticks' throughput. null when not known yet.
	Watched                int      `json:"watched"`
	WatchedRotationSeconds *float64 `json:"watched_rotation_seconds"`
	// PhysicalLimitSeconds is the least time the configured rates allow for
	// re-reading every tracked message and thread (⌈messages ÷ page⌉ history calls
	// and threads + replies ÷ page replies calls, the two methods at once);
	// RotationToLimit is the rotation period over it (1 is the physical best).
	PhysicalLimitSeconds *float64 `json:"physical_limit_seconds"`
	RotationToLimit      *float64 `json:"rotation_to_limit"`
	// PageCap is the most messages a conversations.history page was seen to hold
	// (15 for non-Marketplace apps), 0 while unknown.
	PageCap int `json:"page_cap"`
}

// Tick is the last tick's summary.
type Tick struct {
	Started         time.Time `json:"started"`
	Finished        time.Time `json:"finished"`
	DurationSeconds float64   `json:"duration_seconds"`
	// Calls counts the Slack calls started, by method.
	Calls map[string]int `json:"calls"`
	// StopReason is complete, budget:<cap>, deadline, shutdown or error.
	StopReason      string   `json:"stop_reason"`
	MessagesWritten int      `json:"messages_written"`
	ThreadsWritten  int      `json:"threads_written"`
	TailRead        int      `json:"tail_read"`
	UsersResolved   int      `json:"users_resolved"`
	Errors          []string `json:"errors"`
}

// TickInProgress is the tick under way: its number in the daemon's process, when it
// started, its soft deadline (no call starts after it) and its calls so far per method.
type TickInProgress struct {
	Tick         int            `json:"tick"`
	Started      time.Time      `json:"started"`
	SoftDeadline time.Time      `json:"soft_deadline"`
	Calls        map[string]int `json:"calls"`
}

// Input is what the report needs besides the store.
type Input struct {
	// Running, if set, reports the daemon's tick under way (poller.Poller.Running).
	Running func() (rm.TickRunning, bool)
	// Configured are the configured conversation IDs; those not stored yet are listed
	// as pending.
	Configured []string
	// Interval is tick.interval.
	Interval time.Duration
	// Now is the time of the report.
	Now time.Time
	// DaemonRunning: see Report.DaemonRunning.
	DaemonRunning bool
	// Webhooks are the configured webhook names: outbox rows of another name (a
	// webhook removed or renamed) are reported as not configured.
	Webhooks []string
	// Projections are the SQL projection's targets, as the daemon's projectors (or
	// the files, read by the status command) say.
	Projections []projection.Status
}

// Build computes the report from one read transaction. Errors are storage errors.
func Build(tx rm.Tx, in Input) (Report, error) {
	r, err := BuildCoverage(tx, in)
	if err != nil {
		return Report{}, err
	}
	if err := r.addFeed(tx, in.Webhooks); err != nil {
		return Report{}, err
	}
	r.UndecodableRecords = append([]string{}, tx.Undecodable()...)
	return r, nil
}

// BuildCoverage is Build without the change feed, the outbox and the undecodable
// records (Feed and UndecodableRecords are left empty): the conversations, the
// coverage, the identity, the last tick and the one under way, which is what a reader of the model asks
// of its freshness with every answer (the MCP server), at a cost that does not grow
// with the outbox.
func BuildCoverage(tx rm.Tx, in Input) (Report, error) {
	r := Report{
		GeneratedAt:        in.Now.UTC(),
		DaemonRunning:      in.DaemonRunning,
		IntervalSeconds:    in.Interval.Seconds(),
		Conversations:      []Conversation{},
		Feed:               Feed{Outbox: []Outbox{}},
		UndecodableRecords: []string{},
	}
	if err := r.addConversations(tx, in.Configured); err != nil {
		return Report{}, err
	}
	if err := r.addCoverage(tx); err != nil {
		return Report{}, err
	}
	id, ok, err := tx.Identity()
	if err != nil {
		return Report{}, err
	}
	if ok {
		id.CheckAt = id.CheckAt.UTC()
		r.Identity = &id
	}
	sum, ok, err := tx.LastTick()
	if err != nil {
		return Report{}, err
	}
	if ok {
		r.addTick(sum, in.Interval)
	}
	if in.Running != nil && in.DaemonRunning {
		if run, ok := in.Running(); ok {
			calls := run.Calls
			if calls == nil {
				calls = map[string]int{}
			}
			r.TickInProgress = &TickInProgress{Tick: run.Tick, Started: run.Started.UTC(), SoftDeadline: run.SoftDeadline.UTC(), Calls: calls}
			r.NextTickAt = nil // the next one starts after this one
		}
	}
	r.Projections = append([]projection.Status{}, in.Projections...)
	return r, nil
}

// ClassStaleness returns the worst-case staleness, in seconds, of a change to a
// message of the tracked class (Coverage.WorstCaseStalenessSeconds: its rotation
// plus one interval) and of the watched class (its rotation plus one interval); nil
// when the last ticks do not tell it yet. Untracked messages (retired by
// tracking.horizon) have none: nothing re-reads them.
func (r *Report) ClassStaleness() (tracked, watched *float64) {
	tracked = r.Coverage.WorstCaseStalenessSeconds
	if w := r.Coverage.WatchedRotationSeconds; w != nil {
		s := *w + r.IntervalSeconds
		watched = &s
	}
	return tracked, watched
}

func (r *Report) addConversations(tx rm.Tx, configured []string) error {
	stored := map[string]bool{}
	err := tx.Conversations(func(c rm.Conversation) error {
		stored[c.ID] = true
		r.Conversations = append(r.Conversations, Conversation{
			ID: c.ID, Name: c.Name, Type: c.Type, Status: orPending(c.Status),
			NeededScope: c.NeededScope, Error: c.ErrorDetail, Discovered: c.Discovered,
			LastSweptAt: utc(c.LastSweptAt), WalkResumesBelow: c.WalkBottom,
		})
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range configured {
		if !stored[id] {
			stored[id] = true
			r.Conversations = append(r.Conversations, Conversation{ID: id, Status: rm.StatusPending})
		}
	}
	slices.SortFunc(r.Conversations, func(a, b Conversation) int { return cmp.Compare(a.ID, b.ID) })
	for i := range r.Conversations {
		c := &r.Conversations[i]
		n, err := tx.Counts(c.ID)
		if err != nil {
			return err
		}
		c.Messages, c.Threads, c.Tracked = n.Messages, n.Threads, n.Tracked
		r.Coverage.Tracked += n.Tracked
	}
	return nil
}

// addCoverage reads the head of the tail index, which is ordered by RotatedAt: when a
// tracked message and, for a thread parent, its whole thread were last read. Entries
// never read (or whose thread was never read whole) sort first, so skipping them leads
// to the oldest refresh, and the skips count them. The cost is the number of
// never-read entries, not the store size.
func (r *Report) addCoverage(tx rm.Tx) error {
	never := 0
	oldest, err := tx.TailOldest(1, func(e rm.TailEntry) bool {
		if e.RotatedAt == nil {
			never++
			return true
		}
		return false
	})
	if err != nil {
		return err
	}
	r.Coverage.NeverPolled = never
	if len(oldest) == 1 {
		at := oldest[0].RotatedAt.UTC()
		r.Coverage.OldestPolledAt = &at
		r.Coverage.OldestPolledAgeSeconds = seconds(max(r.GeneratedAt.Sub(at), 0))
	}
	return nil
}

func (r *Report) addTick(s rm.TickSummary, interval time.Duration) {
	dur := s.Finished.Sub(s.Started)
	calls := s.Calls
	if calls == nil {
		calls = map[string]int{}
	}
	errs := s.Errors
	if errs == nil {
		errs = []string{}
	}
	r.LastTick = &Tick{
		Started: s.Started.UTC(), Finished: s.Finished.UTC(), DurationSeconds: dur.Seconds(),
		Calls: calls, StopReason: s.StopReason,
		MessagesWritten: s.MessagesWritten, ThreadsWritten: s.ThreadsWritten,
		TailRead: s.TailRead, UsersResolved: s.UsersResolved, Errors: errs,
	}
	if r.DaemonRunning {
		next := s.Started.Add(interval)
		if s.Finished.After(next) {
			next = s.Finished // Poller.Run starts the next tick at once after an overrun
		}
		next = next.UTC()
		r.NextTickAt = &next
	}
	if rot, ok := r.rotation(s, interval); ok {
		r.Coverage.RotationPeriodSeconds = seconds(rot)
		r.Coverage.WorstCaseStalenessSeconds = seconds(rot + interval)
		if s.PhysicalLimit > 0 && rot > 0 {
			ratio := rot.Seconds() / s.PhysicalLimit.Seconds()
			r.Coverage.RotationToLimit = &ratio
		}
	}
	r.Coverage.Watched, r.Coverage.PageCap = s.Watched, s.PageCap
	if s.WatchedRotation > 0 {
		r.Coverage.WatchedRotationSeconds = seconds(s.WatchedRotation)
	}
	if s.PhysicalLimit > 0 {
		r.Coverage.PhysicalLimitSeconds = seconds(s.PhysicalLimit)
	}
	for i := range r.Conversations {
		if age, ok := s.HeadAges[r.Conversations[i].ID]; ok {
			r.Conversations[i].HeadAgeSeconds = seconds(age)
		}
	}
}

// rotation returns the rotation period, when the last tick tells it: its own estimate
// when it read from the tail; one tick period when every tracked message was read in
// it (the bulk window covered them all, so the tail had nothing to do); 0 with nothing
// tracked.
func (r *Report) rotation(s rm.TickSummary, interval time.Duration) (time.Duration, bool) {
	switch {
	case s.RotationPeriod > 0:
		return s.RotationPeriod, true
	case r.Coverage.Tracked == 0:
		return 0, true
	case r.Coverage.NeverPolled == 0 && r.Coverage.OldestPolledAt != nil && !r.Coverage.OldestPolledAt.Before(s.Started):
		return max(interval, s.Finished.Sub(s.Started)), true
	}
	return 0, false
}

func orPending(status string) string {
	if status == "" {
		return rm.StatusPending
	}
	return status
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func seconds(d time.Duration) *float64 {
	s := d.Seconds()
	return &s
}

// Freshness returns the worst-case staleness, in seconds, of the tracked class and
// of the watched class (Report.ClassStaleness), from one read transaction: what a
// search hit says of how stale it may be. nil when not known yet.
func Freshness(tx rm.Tx, interval time.Duration, now time.Time) (projection.Freshness, error) {
	r, err := BuildCoverage(tx, Input{Interval: interval, Now: now})
	if err != nil {
		return projection.Freshness{}, err
	}
	tracked, watched := r.ClassStaleness()
	return projection.Freshness{Tracked: tracked, Watched: watched}, nil
}
