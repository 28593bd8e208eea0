package poller

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
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
	rm.Source
	now func() time.Time

	mu      sync.Mutex
	current map[string]inFlight
}

func newObservedSource(src rm.Source, now func() time.Time) *observedSource {
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

func (s *observedSource) AuthTest(ctx context.Context) (rm.Identity, error) {
	defer s.begin(rm.MethodAuthTest, "the token")()
	return s.Source.AuthTest(ctx)
}

func (s *observedSource) ConversationInfo(ctx context.Context, channel string) (rm.ConversationInfo, error) {
	defer s.begin(rm.MethodConversationInfo, channel)()
	return s.Source.ConversationInfo(ctx, channel)
}

func (s *observedSource) History(ctx context.Context, req rm.HistoryRequest) (rm.Page, error) {
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
	defer s.begin(rm.MethodHistory, what)()
	return s.Source.History(ctx, req)
}

func (s *observedSource) Replies(ctx context.Context, req rm.RepliesRequest) (rm.Page, error) {
	what := "thread " + req.Channel + " " + string(req.TS)
	if req.Cursor != "" {
		what += ", a further page"
	}
	defer s.begin(rm.MethodReplies, what)()
	return s.Source.Replies(ctx, req)
}

func (s *observedSource) UserInfo(ctx context.Context, id string) (rm.User, error) {
	defer s.begin(rm.MethodUsersInfo, id)()
	return s.Source.UserInfo(ctx, id)
}

func (s *observedSource) ReactionsGet(ctx context.Context, ref rm.Ref) (rm.Message, error) {
	defer s.begin(rm.MethodReactionsGet, ref.Channel+" "+string(ref.TS))()
	return s.Source.ReactionsGet(ctx, ref)
}

func (s *observedSource) MemberConversations(ctx context.Context, types []string, cursor string) ([]rm.ConversationInfo, string, error) {
	defer s.begin(rm.MethodUsersConversations, "the bot's conversations")()
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
	p.log.Info("tick started", "tick", p.mem.tickNo, "soft_deadline", t.deadline.Format(time.RFC3339))
	if p.mem.tickNo == 1 {
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
	calls := t.report.calls()
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
		"tick", t.p.mem.tickNo,
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
	err = p.store.View(func(tx rm.Tx) error {
		known, err := storedConversations(tx)
		if err != nil {
			return err
		}
		for _, id := range p.cfg.Conversations {
			c, ok := known[id]
			switch {
			case !ok:
				unread++
			case c.Status != rm.StatusOK && c.Status != rm.StatusPending:
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
	history, replies := p.cfg.Rates[rm.MethodHistory], p.cfg.Rates[rm.MethodReplies]
	least := time.Duration(float64(never) / history * float64(time.Minute)).Round(time.Second)
	p.log.Info("first sync: conversations never read",
		"conversations", never,
		"at_least", shortDuration(least),
		"why", fmt.Sprintf("one conversations.history call per conversation for its last %s (%g a minute), one more per further page of messages; then one conversations.replies call per thread (%g a minute); each tick logs the physical limit once the store is known", shortDuration(p.cfg.BulkWindow), history, replies))
}

// firstSync is how far the first sync is: the readable configured conversations and
// those whose bulk window was never read whole, the thread parents whose thread was
// never read, and the calls of each method still to make. Conversations not read
// yet are assumed to hold what the read ones hold on average (pages and threads), at
// least a page each, so the estimate gets better as each one is read instead of
// growing with every conversation read.
type firstSync struct {
	readable, unread, threadsUnread int
	historyCalls, repliesCalls      int
}

// left is the least time the calls left take at rates, the two methods at once.
func (f firstSync) left(rates map[string]float64) time.Duration {
	at := func(n int, method string) time.Duration {
		if r := rates[method]; r > 0 {
			return time.Duration(float64(n) / r * float64(time.Minute))
		}
		return 0
	}
	return max(at(f.historyCalls, rm.MethodHistory), at(f.repliesCalls, rm.MethodReplies)).Round(time.Second)
}

func (f firstSync) done() bool { return f.unread == 0 && f.threadsUnread == 0 }

// firstSyncStallTicks is how many ticks the threads never read may stay as many,
// once every conversation was read, before the first sync is taken as over.
const firstSyncStallTicks = 3

// storedConversations returns the conversations tx holds, by ID.
func storedConversations(tx rm.Tx) (map[string]rm.Conversation, error) {
	known := map[string]rm.Conversation{}
	err := tx.Conversations(func(c rm.Conversation) error {
		known[c.ID] = c
		return nil
	})
	return known, err
}

// firstSyncState counts what the first sync still has to read (see firstSync). It
// walks the stored timelines of the configured conversations, so the poller calls it
// only while a first sync runs.
func (p *Poller) firstSyncState() (f firstSync, err error) {
	page := p.mem.history.pageCap
	if page <= 0 {
		page = rm.HistoryPageLimit
	}
	calls := func(n int) int { return max(1, (n+page-1)/page) }
	counted := map[rm.Ref]bool{}
	err = p.store.View(func(tx rm.Tx) error {
		known, err := storedConversations(tx)
		if err != nil {
			return err
		}
		var readPages, readThreadCalls, read int
		var walked []int // messages stored so far of each conversation not read whole
		for _, id := range p.cfg.Conversations {
			c, ok := known[id]
			if ok && c.Status != rm.StatusOK && c.Status != rm.StatusPending {
				continue // waits for the operator, not for the first sync
			}
			f.readable++
			if !ok || c.CoveredTo == "" {
				f.unread++
			}
			if !ok {
				continue
			}
			var msgs, threadCalls int
			if err := tx.Timeline(id, "", "", func(m rm.Message) error {
				msgs++
				if m.ReplyCount == 0 {
					return nil
				}
				// Every thread of a conversation costs its first sync a call;
				// those never read are still to make.
				threadCalls += calls(m.ReplyCount + 1)
				if m.ReplyWatermark == "" {
					counted[rm.Ref{Channel: m.Channel, TS: m.TS}] = true
					f.threadsUnread++
					f.repliesCalls += calls(m.ReplyCount + 1)
				}
				return nil
			}); err != nil {
				return err
			}
			if c.CoveredTo != "" {
				read++
				readPages += calls(msgs)
				readThreadCalls += threadCalls
			} else {
				walked = append(walked, msgs)
			}
		}
		// The unread conversations, at the read ones' average (a page each while none
		// was read; their threads are known only once read).
		avgPages, avgThreads := 1, 0
		if read > 0 {
			avgPages = max(1, (readPages+read-1)/read)
			avgThreads = readThreadCalls / read
		}
		for len(walked) < f.unread {
			walked = append(walked, 0)
		}
		for _, msgs := range walked {
			// A walk under way has read msgs/page of its pages.
			f.historyCalls += max(1, avgPages-msgs/page)
		}
		f.repliesCalls += f.unread * avgThreads
		return nil
	})
	// A parent the store does not hold yet is stored with its thread: the syncs a
	// tick could not make wait in carried, or were cut between pages (a stored one
	// was counted above).
	waiting := p.mem.carried
	if cut := p.mem.threadCut; cut != nil && cut.c.first != nil {
		waiting = append(slices.Clip(waiting), cut.c)
	}
	for _, c := range waiting {
		if !counted[c.Ref] {
			f.threadsUnread++
			f.repliesCalls++
		}
	}
	return f, err
}

// logFirstSyncProgress logs, after a tick while the first sync runs (some readable
// conversations or their threads were never read), how far it is and the least time
// what is left takes at the configured rates; then once, when it is done, how long
// it took.
func (p *Poller) logFirstSyncProgress(sum rm.TickSummary) {
	if p.mem.firstSync.done {
		return
	}
	f, err := p.firstSyncState()
	if err != nil {
		return
	}
	if p.mem.firstSync.since.IsZero() {
		p.mem.firstSync.since = sum.Started
	}
	// Once every conversation was read, threads whose count stops going down are
	// ones the reads cannot finish (their errors are in the ticks' logs): the first
	// sync is over, rather than walked again at every tick for ever.
	if f.unread == 0 && f.threadsUnread > 0 && p.mem.firstSync.threads > 0 && f.threadsUnread >= p.mem.firstSync.threads {
		p.mem.firstSync.stalled++
	} else {
		p.mem.firstSync.stalled = 0
	}
	p.mem.firstSync.threads = f.threadsUnread
	if f.done() || p.mem.firstSync.stalled >= firstSyncStallTicks {
		p.mem.firstSync.done = true
		if p.mem.firstSync.logged {
			p.log.Info("first sync complete", "conversations", f.readable, "threads_not_read", f.threadsUnread,
				"took", shortDuration(sum.Finished.Sub(p.mem.firstSync.since).Round(time.Second)))
		}
		return
	}
	p.mem.firstSync.logged = true
	p.log.Info("first sync in progress",
		"conversations_read", f.readable-f.unread, "conversations", f.readable,
		"threads_unread", f.threadsUnread,
		"history_calls_left", f.historyCalls, "replies_calls_left", f.repliesCalls,
		"tracked", sum.Tracked, "threads", sum.Threads,
		"expect_left", shortDuration(f.left(p.cfg.Rates)))
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
