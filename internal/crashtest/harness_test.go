package crashtest

import (
	"fmt"
	"net"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/compliance"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// Rates of the client (slack.rates) and of the fake. Every method is fast so that the
// daemon gets far in a short test, except auth.test, which each new process calls
// first: at 120/min (0.5 s apart) a restart soon after the previous start must wait
// for the persisted last call, which is what CheckRestarts looks at. The fake limits
// conversations.history slightly below the client's rate, so that it answers 429 with
// a Retry-After when its window is full (see fillHistoryWindow).
var (
	clientRates = map[string]float64{
		rm.MethodAuthTest: 120, rm.MethodHistory: 3000, rm.MethodReplies: 3000,
		rm.MethodConversationInfo: 3000, rm.MethodUsersInfo: 3000, rm.MethodUsersConversations: 3000,
	}
	fakeHistoryLimit = 2900
)

// jitter is the tolerance between send and arrival times (see package compliance):
// loopback latency plus the bbolt commit (an fsync) the client makes before each
// attempt, which on a busy CI disk can take a while. Runs here saw up to 16 ms. A
// daemon that forgot its pacing over a restart is still 350 ms early for auth.test
// (TestRestartCheckSeesLostPacingState).
const jitter = 200 * time.Millisecond

// Workspace: small enough for 50 restarts in under a minute, with threads longer than
// a page (pageCap) so that a kill can land between two pages of one thread.
var (
	workspace = slackfake.GenSize{Conversations: 7, Messages: 600, Users: 20}
	pageCap   = 8
)

// env is a fake Slack on loopback behind a Recorder, and a daemon config for it.
type env struct {
	t         *testing.T
	fake      *slackfake.Server
	rec       *compliance.Recorder
	srv       *httptest.Server
	dir       string
	storePath string
	convs     []string
	// shift is added to the fake's clock (nanoseconds); it only ever grows (see
	// fillHistoryWindow).
	shift atomic.Int64
	// hook, if set, sees every request before the fake does (kill points).
	hook atomic.Pointer[func(method string, params url.Values)]
}

func newEnv(t *testing.T, seed int64) *env {
	e := &env{t: t, dir: t.TempDir()}
	e.storePath = filepath.Join(e.dir, "slackpoll.db")
	e.fake = slackfake.New(slackfake.Options{
		Now:           func() time.Time { return time.Now().Add(time.Duration(e.shift.Load())) },
		PageCap:       pageCap,
		RatePerMinute: map[string]int{rm.MethodHistory: fakeHistoryLimit},
		Seed:          seed,
	})
	slackfake.Generate(e.fake, seed, workspace)
	e.convs = e.fake.ConversationIDs()
	e.addLongThreads(2)
	e.rec = compliance.NewRecorder(e.fake)
	e.rec.Before = func(method string, params url.Values) {
		if h := e.hook.Load(); h != nil {
			(*h)(method, params)
		}
	}
	e.srv = httptest.NewServer(e.rec)
	t.Cleanup(e.srv.Close)
	return e
}

// publicChannel returns the first readable public channel of the workspace and a
// user who can post in it.
func (e *env) publicChannel() (channel, user string) {
	truth := e.fake.Truth()
	for _, c := range truth.Conversations {
		if c.Status == rm.StatusOK && c.Type == rm.TypePublicChannel {
			channel = c.ID
			break
		}
	}
	for _, u := range truth.Users {
		if u.LookupError == "" && !u.Deleted {
			user = u.ID
			break
		}
	}
	return channel, user
}

// addLongThreads posts n threads of three pages each in the first readable public
// channel, so that every seed has threads a kill can cut between two pages (the
// generated ones are mostly shorter than a page).
func (e *env) addLongThreads(n int) {
	channel, user := e.publicChannel()
	for i := range n {
		parent, err := e.fake.Post(channel, user, fmt.Sprintf("long thread %d", i))
		if err != nil {
			e.t.Fatalf("long thread in %s by %s: %v", channel, user, err)
		}
		for j := range 3 * pageCap {
			if _, err := e.fake.Reply(channel, parent, user, fmt.Sprintf("reply %d", j)); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

func (e *env) setHook(h func(method string, params url.Values)) {
	if h == nil {
		e.hook.Store(nil)
		return
	}
	e.hook.Store(&h)
}

// writeConfig writes a daemon config for this env and returns its path. listen is
// http.listen ("" = no read API).
func (e *env) writeConfig(name, listen string) string {
	var rates []string
	for m, r := range clientRates {
		rates = append(rates, fmt.Sprintf("%s: %g", m, r))
	}
	cfg := fmt.Sprintf(`slack:
  api_url: %s/
  rate_profile: internal
  rates: {%s}
  request_timeout: 20s
store:
  path: %s
conversations: [%s]
tick:
  interval: 1s
  soft_deadline: 1m
budget:
  history_calls: 100
  replies_calls: 60
  users_info_calls: 100
  reactions_calls: 60
window:
  bulk: 72h
users:
  cache_ttl: 3s
http:
  listen: %q
log:
  level: warn
`, e.srv.URL, strings.Join(rates, ", "), e.storePath, strings.Join(e.convs, ", "), listen)
	path := filepath.Join(e.dir, name)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path
}

func (e *env) start(cfg string) *proc {
	return startDaemon(e.t, slackpollBinary(e.t), cfg, e.fake.Token())
}

// fillHistoryWindow makes the fake answer the next conversations.history calls with
// 429 and a Retry-After of about 2 s, as Slack does when the app has used its minute.
// The fake's window slides over 60 s of its clock, and filling it at the current time
// would block history for a whole minute. So the fake's clock first jumps a minute
// forward (every earlier request leaves the window), the window is filled, and the
// clock jumps 58 s more: the window now holds only the filler requests, all of which
// leave it 2 s from now. The fake's clock only moves forward, which keeps its window
// in time order (and its new ts values ahead of real time, which nothing minds). Call
// it only while no daemon runs; the filler requests bypass the Recorder, since they
// are not the daemon's.
func (e *env) fillHistoryWindow() {
	e.shift.Add(int64(time.Minute))
	req := httptest.NewRequest("GET", "/api/"+rm.MethodHistory+"?channel=C0NOWHERE&limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+e.fake.Token())
	for range fakeHistoryLimit {
		e.fake.ServeHTTP(httptest.NewRecorder(), req)
	}
	e.shift.Add(int64(58 * time.Second))
}

// freePort returns a loopback address no one listens on now, for http.listen.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// waitFor polls cond every 10 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}
