package poller_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// stubSource is a scripted Slack in domain types: enough state to page history and
// replies the way Slack does (newest first, cursor ends with "", parent first), with
// errors injectable per call. The faithful HTTP fake lives in internal/slackfake; this
// one lets a test state one rule exactly.
type stubSource struct {
	mu           sync.Mutex
	identity     rm.Identity
	infos        map[string]rm.ConversationInfo
	hist         map[string][]rm.Message // channel → timeline (any order)
	threads      map[rm.Ref][]rm.Message // parent → replies, ascending
	pageSize     int
	repeatParent bool
	ascending    bool // history pages oldest first (Slack's order is newest first)
	users        map[string]rm.User
	fails        []stubFail
	calls        []stubCall
	// before is called at the start of every call (after it is logged).
	before func(method string)
}

type stubFail struct {
	method, channel string
	err             error
	times           int
}

type stubCall struct {
	method string
	hist   rm.HistoryRequest
	rep    rm.RepliesRequest
	user   string
}

func newStub() *stubSource {
	return &stubSource{
		identity: rm.Identity{TeamID: "T1", UserID: "UBOT", BotID: "BBOT", Scopes: []string{"channels:history"}},
		infos:    map[string]rm.ConversationInfo{},
		hist:     map[string][]rm.Message{},
		threads:  map[rm.Ref][]rm.Message{},
		pageSize: 1000,
		users:    map[string]rm.User{},
	}
}

func (s *stubSource) addChannel(id string) {
	s.infos[id] = rm.ConversationInfo{ID: id, Name: "chan-" + id, IsMember: true}
}

func (s *stubSource) post(m rm.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hist[m.Channel] = append(s.hist[m.Channel], m)
}

// setThread sets a parent's replies and its latest_reply / reply_count.
func (s *stubSource) setThread(ch string, parent rm.TS, replies ...rm.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range replies {
		replies[i].Channel, replies[i].ThreadTS = ch, parent
	}
	s.threads[rm.Ref{Channel: ch, TS: parent}] = replies
	for i, m := range s.hist[ch] {
		if m.TS == parent {
			m.ThreadTS = parent
			m.ReplyCount = len(replies)
			m.LatestReply = ""
			if len(replies) > 0 {
				m.LatestReply = replies[len(replies)-1].TS
			}
			s.hist[ch][i] = m
		}
	}
}

func (s *stubSource) edit(ch string, ts rm.TS, fn func(*rm.Message)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.hist[ch] {
		if s.hist[ch][i].TS == ts {
			fn(&s.hist[ch][i])
		}
	}
}

func (s *stubSource) remove(ch string, ts rm.TS) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hist[ch] = slices.DeleteFunc(s.hist[ch], func(m rm.Message) bool { return m.TS == ts })
}

func (s *stubSource) fail(method, channel string, err error, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails = append(s.fails, stubFail{method, channel, err, times})
}

func (s *stubSource) callsOf(method string) []stubCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []stubCall
	for _, c := range s.calls {
		if c.method == method {
			out = append(out, c)
		}
	}
	return out
}

// enter logs a call and returns the injected error for it, if any.
func (s *stubSource) enter(c stubCall, channel string) error {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	var err error
	for i := range s.fails {
		f := &s.fails[i]
		if f.times != 0 && f.method == c.method && (f.channel == "" || f.channel == channel) {
			f.times--
			err = f.err
			break
		}
	}
	before := s.before
	s.mu.Unlock()
	if before != nil {
		before(c.method)
	}
	return err
}

func (s *stubSource) AuthTest(ctx context.Context) (rm.Identity, error) {
	if err := s.enter(stubCall{method: rm.MethodAuthTest}, ""); err != nil {
		return rm.Identity{}, err
	}
	return s.identity, nil
}

func (s *stubSource) ConversationInfo(ctx context.Context, ch string) (rm.ConversationInfo, error) {
	if err := s.enter(stubCall{method: rm.MethodConversationInfo}, ch); err != nil {
		return rm.ConversationInfo{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	info, ok := s.infos[ch]
	if !ok {
		return info, &rm.APIError{Method: rm.MethodConversationInfo, Code: "channel_not_found", Class: rm.ClassConversation}
	}
	return info, nil
}

func page(msgs []rm.Message, cursor string, size int) (rm.Page, error) {
	off := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil {
			return rm.Page{}, &rm.APIError{Code: "invalid_cursor", Class: rm.ClassTransient}
		}
		off = n
	}
	end := min(off+size, len(msgs))
	p := rm.Page{Messages: slices.Clone(msgs[off:end])}
	if end < len(msgs) {
		p.NextCursor = strconv.Itoa(end)
	}
	return p, nil
}

func (s *stubSource) History(ctx context.Context, req rm.HistoryRequest) (rm.Page, error) {
	if err := s.enter(stubCall{method: rm.MethodHistory, hist: req}, req.Channel); err != nil {
		return rm.Page{}, err
	}
	if err := ctx.Err(); err != nil {
		return rm.Page{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var in []rm.Message
	for _, m := range s.hist[req.Channel] {
		lo, hi := m.TS.Compare(req.Oldest), m.TS.Compare(req.Latest)
		if req.Oldest != "" && (lo < 0 || lo == 0 && !req.Inclusive) {
			continue
		}
		if req.Latest != "" && (hi > 0 || hi == 0 && !req.Inclusive) {
			continue
		}
		in = append(in, m)
	}
	slices.SortFunc(in, func(a, b rm.Message) int { return b.TS.Compare(a.TS) })
	if s.ascending {
		slices.Reverse(in)
	}
	size := s.pageSize
	if req.Limit > 0 && req.Limit < size {
		size = req.Limit
	}
	return page(in, req.Cursor, size)
}

func (s *stubSource) Replies(ctx context.Context, req rm.RepliesRequest) (rm.Page, error) {
	if err := s.enter(stubCall{method: rm.MethodReplies, rep: req}, req.Channel); err != nil {
		return rm.Page{}, err
	}
	if err := ctx.Err(); err != nil {
		return rm.Page{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Like Slack, ts may name the parent or any reply of it: the answer is the thread.
	root := req.TS
	for ref, replies := range s.threads {
		if ref.Channel == req.Channel && slices.ContainsFunc(replies, func(m rm.Message) bool { return m.TS == req.TS }) {
			root = ref.TS
		}
	}
	var parent *rm.Message
	for _, m := range s.hist[req.Channel] {
		if m.TS == root {
			parent = &m
		}
	}
	replies := s.threads[rm.Ref{Channel: req.Channel, TS: root}]
	if parent == nil {
		return rm.Page{}, &rm.APIError{Method: rm.MethodReplies, Code: "thread_not_found", Class: rm.ClassItem}
	}
	size := s.pageSize
	if req.Limit > 0 && req.Limit < size {
		size = req.Limit
	}
	p, err := page(replies, req.Cursor, size)
	if err != nil {
		return p, err
	}
	if req.Cursor == "" || s.repeatParent {
		p.Messages = append([]rm.Message{*parent}, p.Messages...)
	}
	return p, nil
}

func (s *stubSource) UserInfo(ctx context.Context, id string) (rm.User, error) {
	if err := s.enter(stubCall{method: rm.MethodUsersInfo, user: id}, ""); err != nil {
		return rm.User{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return rm.User{ID: id, LookupError: "user_not_found"}, nil
	}
	return u, nil
}

// ReactionsGet answers from the timeline or a thread; the stub's token has no
// reactions:read, so the poller calls it only in tests that grant the scope.
func (s *stubSource) ReactionsGet(ctx context.Context, ref rm.Ref) (rm.Message, error) {
	if err := s.enter(stubCall{method: rm.MethodReactionsGet}, ref.Channel); err != nil {
		return rm.Message{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.hist[ref.Channel] {
		if m.TS == ref.TS {
			return m, nil
		}
	}
	for _, rs := range s.threads {
		for _, m := range rs {
			if m.Channel == ref.Channel && m.TS == ref.TS {
				return m, nil
			}
		}
	}
	return rm.Message{}, &rm.APIError{Method: rm.MethodReactionsGet, Code: "message_not_found", Class: rm.ClassItem}
}

func (s *stubSource) MemberConversations(ctx context.Context, types []string, cursor string) ([]rm.ConversationInfo, string, error) {
	if err := s.enter(stubCall{method: rm.MethodUsersConversations}, ""); err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []rm.ConversationInfo
	for _, info := range s.infos {
		if info.IsMember && slices.Contains(types, info.Type()) {
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b rm.ConversationInfo) int { return cmpString(a.ID, b.ID) })
	return out, "", nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// openStore opens a fresh bbolt store in a test directory.
func openStore(t testing.TB) *boltstore.Store {
	t.Helper()
	return storetest.Open(t)
}

// fixedClock is a settable clock for poller tests that do not need synctest.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fixedClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var epoch = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// ts returns a ts sec seconds before epoch, with the given microseconds.
func ts(secBefore int, micros int) rm.TS {
	return rm.TS(fmt.Sprintf("%d.%06d", epoch.Unix()-int64(secBefore), micros))
}

func msg(ch string, t rm.TS, user, text string) rm.Message {
	return rm.Message{Channel: ch, TS: t, User: user, Text: text}
}

func defaultBudget() poller.Budget {
	return poller.Budget{HistoryCalls: 33, RepliesCalls: 12, UsersInfoCalls: 20, ReactionsCalls: 25}
}

// newPoller wires a poller on a stub and a fresh store with a fixed clock.
func newPoller(t testing.TB, src rm.Source, convs ...string) (*poller.Poller, *boltstore.Store, *fixedClock) {
	t.Helper()
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	p := poller.New(store, src, poller.Config{
		Conversations: convs, Budget: defaultBudget(), Now: clock.Now,
	})
	return p, store, clock
}

// polledThread posts a parent, ts(1000, 0), with one reply "r1", serves them
// pageSize messages a page (0: the stub's default) and ticks once: the thread is
// synced.
func polledThread(t *testing.T, pageSize int) (*stubSource, *poller.Poller, *boltstore.Store, *fixedClock, rm.TS) {
	t.Helper()
	src := newStub()
	src.addChannel(ch)
	if pageSize > 0 {
		src.pageSize = pageSize
	}
	parent := ts(1000, 0)
	src.post(msg(ch, parent, "U1", "parent"))
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"))
	p, store, clock := newPoller(t, src, ch)
	mustTick(t, p)
	return src, p, store, clock, parent
}

func mustTick(t testing.TB, p *poller.Poller) rm.TickSummary {
	t.Helper()
	sum, err := p.Tick(context.Background())
	if err != nil {
		t.Fatalf("tick: %v", err)
	}
	return sum
}

func getMsg(t testing.TB, s rm.Store, ch string, ts rm.TS) rm.Message {
	t.Helper()
	var m rm.Message
	var ok bool
	err := s.View(func(tx rm.Tx) error {
		var err error
		m, ok, err = tx.Message(ch, ts)
		return err
	})
	if err != nil || !ok {
		t.Fatalf("message %s/%s: ok=%v err=%v", ch, ts, ok, err)
	}
	return m
}

func getReplies(t testing.TB, s rm.Store, ch string, ts rm.TS) []rm.Message {
	t.Helper()
	var out []rm.Message
	if err := s.View(func(tx rm.Tx) error {
		var err error
		out, err = tx.Replies(ch, ts)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func replyTS(ms []rm.Message) []rm.TS {
	out := make([]rm.TS, len(ms))
	for i, m := range ms {
		out[i] = m.TS
	}
	return out
}

// ids returns the stub's conversation IDs.
func (s *stubSource) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id := range s.infos {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// undecodable turns the message ts of p, if p holds it, into an undecodable one (its
// ts known), as slackapi reports a message slack-go cannot read, and reports whether
// it did.
func undecodable(p *rm.Page, ts rm.TS, why string) bool {
	for i, m := range p.Messages {
		if m.TS == ts {
			p.Messages = append(p.Messages[:i:i], p.Messages[i+1:]...)
			p.Skipped = append(p.Skipped, rm.ItemError{TS: m.TS, Err: why})
			return true
		}
	}
	return false
}
