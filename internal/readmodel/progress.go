package readmodel

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// ProgressEvery is the longest time a tick runs without a log line: at 1 request a
// minute a tick is minutes of waiting, which must not look like a hang.
const ProgressEvery = 30 * time.Second

// WaitReporter is implemented by a Source that can say whether a call of a method is
// waiting before its request, until when (wall clock) and why ("rate limit",
// "Retry-After"): slackapi.Client. The progress log shows it.
type WaitReporter interface {
	Waiting(method string) (until time.Time, why string, ok bool)
}

// inFlight is a Slack call the poller is making.
type inFlight struct {
	what  string
	since time.Time
}

// observedSource is the poller's Source with a record of the call each method has in
// flight, for the progress log. It changes nothing of the calls.
type observedSource struct {
	Source
	now func() time.Time

	mu      sync.Mutex
	current map[string]inFlight
}

func newObservedSource(src Source, now func() time.Time) *observedSource {
	return &observedSource{Source: src, now: now, current: map[string]inFlight{}}
}

// begin records method's call of what and returns the function that ends it.
func (s *observedSource) begin(method, what string) func() {
	s.mu.Lock()
	s.current[method] = inFlight{what: what, since: s.now()}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.current, method)
		s.mu.Unlock()
	}
}

func (s *observedSource) inFlight() map[string]inFlight {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.current)
}

func (s *observedSource) AuthTest(ctx context.Context) (Identity, error) {
	defer s.begin(MethodAuthTest, "the token")()
	return s.Source.AuthTest(ctx)
}

func (s *observedSource) ConversationInfo(ctx context.Context, channel string) (ConversationInfo, error) {
	defer s.begin(MethodConversationInfo, channel)()
	return s.Source.ConversationInfo(ctx, channel)
}

func (s *observedSource) History(ctx context.Context, req HistoryRequest) (Page, error) {
	what := req.Channel
	switch {
	case req.Oldest != "" && req.Latest != "":
		what += fmt.Sprintf(" from %s to %s", req.Oldest, req.Latest)
	case req.Oldest != "":
		what += " since " + string(req.Oldest)
	}
	if req.Cursor != "" {
		what += ", a further page"
	}
	defer s.begin(MethodHistory, what)()
	return s.Source.History(ctx, req)
}

func (s *observedSource) Replies(ctx context.Context, req RepliesRequest) (Page, error) {
	what := "thread " + req.Channel + " " + string(req.TS)
	if req.Cursor != "" {
		what += ", a further page"
	}
	defer s.begin(MethodReplies, what)()
	return s.Source.Replies(ctx, req)
}

func (s *observedSource) UserInfo(ctx context.Context, id string) (User, error) {
	defer s.begin(MethodUsersInfo, id)()
	return s.Source.UserInfo(ctx, id)
}

func (s *observedSource) ReactionsGet(ctx context.Context, ref Ref) (Message, error) {
	defer s.begin(MethodReactionsGet, ref.Channel+" "+string(ref.TS))()
	return s.Source.ReactionsGet(ctx, ref)
}

func (s *observedSource) MemberConversations(ctx context.Context, types []string, cursor string) ([]ConversationInfo, string, error) {
	defer s.begin(MethodUsersConversations, "the bot's conversations")()
	return s.Source.MemberConversations(ctx, types, cursor)
}

// Waiting forwards to the wrapped Source, when it reports waits.
func (s *observedSource) Waiting(method string) (time.Time, string, bool) {
	if wr, ok := s.Source.(WaitReporter); ok {
		return wr.Waiting(method)
	}
	return time.Time{}, "", false
}

// startProgress logs that the tick starts (with the first sync's estimate on a
// process's first tick over conversations never read), then a progress line every
// ProgressEvery until the returned function is called, which waits for the logger
// to stop.
func (t *tick) startProgress() (stop func()) {
	p := t.p
	p.log.Info("tick started", "tick", p.tickNo, "soft_deadline", t.deadline.Format(time.RFC3339))
	if p.tickNo == 1 {
		p.logFirstSync()
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tk := time.NewTicker(ProgressEvery)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				p.log.Info("tick in progress", t.progress()...)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// progress is the progress line's attributes: elapsed time, calls so far per method,
// the call each method has in flight and since when, and which method waits for its
// rate limit until when.
func (t *tick) progress() []any {
	now := t.now()
	t.mu.Lock()
	calls := maps.Clone(t.sum.Calls)
	t.mu.Unlock()
	var callAttrs, reading, waiting []any
	for _, m := range slices.Sorted(maps.Keys(calls)) {
		callAttrs = append(callAttrs, slog.Int(m, calls[m]))
	}
	obs := t.p.obs
	current := obs.inFlight()
	for _, m := range slices.Sorted(maps.Keys(current)) {
		c := current[m]
		reading = append(reading, slog.String(m, fmt.Sprintf("%s (for %s)", c.what, now.Sub(c.since).Round(time.Second))))
		if until, why, ok := obs.Waiting(m); ok {
			waiting = append(waiting, slog.String(m, fmt.Sprintf("until %s (%s, in %s)",
				until.Format(time.RFC3339), why, time.Until(until).Round(time.Second))))
		}
	}
	attrs := []any{
		"tick", t.p.tickNo,
		"elapsed", shortDuration(now.Sub(t.start).Round(time.Second)),
		"soft_deadline_in", shortDuration(max(t.deadline.Sub(now), 0).Round(time.Second)),
		slog.Group("calls", callAttrs...),
	}
	if len(reading) > 0 {
		attrs = append(attrs, slog.Group("reading", reading...))
	}
	if len(waiting) > 0 {
		attrs = append(attrs, slog.Group("waiting", waiting...))
	}
	return attrs
}

// unreadConversations counts the configured conversations whose bulk window was
// never read, out of those that may be read: not stored yet, pending or ok. One the
// bot cannot read (not_in_channel, missing_scope, …) waits for the operator, not for
// the first sync.
func (p *Poller) unreadConversations() (unread, readable int, err error) {
	err = p.store.View(func(tx Tx) error {
		known := map[string]Conversation{}
		if err := tx.Conversations(func(c Conversation) error {
			known[c.ID] = c
			return nil
		}); err != nil {
			return err
		}
		for _, id := range p.cfg.Conversations {
			c, ok := known[id]
			switch {
			case !ok:
				unread++
			case c.Status != StatusOK && c.Status != StatusPending:
				continue
			case c.HeadReadAt == nil:
				unread++
			}
			readable++
		}
		return nil
	})
	return unread, readable, err
}

// logFirstSync logs, on a process's first tick, when some configured conversations
// were never read, the least time their first read takes at the configured rates: one
// conversations.history call each for the bulk window (more where it holds more than
// a page), then one conversations.replies call per thread, which only the reads can
// count.
func (p *Poller) logFirstSync() {
	never, _, err := p.unreadConversations()
	if err != nil || never == 0 {
		return
	}
	history, replies := p.cfg.Rates[MethodHistory], p.cfg.Rates[MethodReplies]
	least := time.Duration(float64(never) / history * float64(time.Minute)).Round(time.Second)
	p.log.Info("first sync: conversations never read",
		"conversations", never,
		"at_least", shortDuration(least),
		"why", fmt.Sprintf("one conversations.history call per conversation for its last %s (%g a minute), one more per further page of messages; then one conversations.replies call per thread (%g a minute); each tick logs the physical limit once the store is known", shortDuration(p.cfg.BulkWindow), history, replies))
}

// logFirstSyncProgress logs, after a tick while some readable conversations were
// never read, how far the first sync is and what it will take at least: the
// conversations left at one history call each, and reading once everything stored so
// far (the physical limit), the two running at once.
func (p *Poller) logFirstSyncProgress(sum TickSummary) {
	unread, readable, err := p.unreadConversations()
	if err != nil || unread == 0 {
		return
	}
	left := time.Duration(float64(unread) / p.cfg.Rates[MethodHistory] * float64(time.Minute))
	p.log.Info("first sync in progress",
		"conversations_read", readable-unread, "conversations", readable,
		"tracked", sum.Tracked, "threads", sum.Threads,
		"expect_at_least", shortDuration(max(left, sum.PhysicalLimit).Round(time.Second)))
}

// shortDuration drops a duration's zero tails: 72h rather than 72h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
