package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/mcp"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/status"
)

// bearerTransport sends a bearer token with every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// freeAddr returns a loopback address no one listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitFor polls fn until it reports true; the test's own timeout bounds it.
func waitFor(t *testing.T, what string, fn func() bool) {
	t.Helper()
	for !fn() {
		if t.Context().Err() != nil {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(url, token string) (int, []byte) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// generalDaemon serves a fake workspace with one channel, C0GENERAL, on loopback and
// writes a config (o's store, token and extra keys) that polls it with the read API
// on a free loopback port. It returns the fake, the API's base URL and the config.
func generalDaemon(t *testing.T, o cfgOpts) (*slackfake.Server, string, string) {
	t.Helper()
	return generalDaemonBehind(t, o, func(h http.Handler) http.Handler { return h })
}

// generalDaemonBehind is generalDaemon with the fake served through wrap.
func generalDaemonBehind(t *testing.T, o cfgOpts, wrap func(http.Handler) http.Handler) (*slackfake.Server, string, string) {
	t.Helper()
	fake := slackfake.New(slackfake.Options{})
	if err := fake.AddConversation(slackfake.PublicChannel("C0GENERAL", "general")); err != nil {
		t.Fatal(err)
	}
	slack := httptest.NewServer(wrap(fake))
	t.Cleanup(slack.Close)
	addr := freeAddr(t)
	o.convs, o.listen, o.apiURL, o.slack = []string{"C0GENERAL"}, addr, slack.URL+"/api/", fake.Token()
	return fake, "http://" + addr, writeConfig(t, o)
}

// TestRunServesTheReadAPI runs `slackpoll run` against the fake Slack with http.listen
// set: while it holds the store, `slackpoll status` answers through its API; its
// metrics count the tick; on cancel (SIGTERM) the API stops and run exits 0.
func TestRunServesTheReadAPI(t *testing.T) {
	fake, base, cfg := generalDaemon(t, cfgOpts{store: filepath.Join(t.TempDir(), "slackpoll.db"), token: "api-tok", extra: "tick:\n  interval: 1h\n"})
	if _, err := fake.Post("C0GENERAL", fake.BotUserID(), "hello"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, errOut := runCLI(ctx, "run", "--config", cfg)
		done <- result{code, errOut}
	}()

	waitFor(t, "the first tick", func() bool {
		code, b := get(base+"/v1/status", "api-tok")
		var r status.Report
		return code == http.StatusOK && json.Unmarshal(b, &r) == nil && r.LastTick != nil
	})
	if code, b := get(base+"/readyz", "api-tok"); code != http.StatusOK {
		t.Errorf("/readyz after the first tick = %d %s, want 200", code, b)
	}
	// The status report sees the tick's last commit a moment before the tick
	// returns and is counted: under -race that moment is long enough to see.
	counted := func(b []byte) bool {
		return strings.Contains(string(b), `slackpoll_ticks_total{stop_reason="complete"} 1`) &&
			strings.Contains(string(b), `slackpoll_slack_calls_total{method="conversations.history",outcome="ok"}`)
	}
	_, b := get(base+"/metrics", "api-tok")
	for deadline := time.Now().Add(10 * time.Second); !counted(b) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		_, b = get(base+"/metrics", "api-tok")
	}
	if !counted(b) {
		t.Errorf("/metrics does not count the tick and its calls:\n%s", b)
	}

	code, out, errOut := runCLI(t.Context(), "status", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("status while run holds the store = %d, stderr %s", code, errOut)
	}
	wantContains(t, "status", out, "status of the running daemon at "+base, "C0GENERAL  general")

	// The MCP server answers at /mcp, behind the same token.
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{
		Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{"api-tok"}},
	}, nil)
	if err != nil {
		t.Fatalf("MCP client on %s/mcp: %v", base, err)
	}
	var m mcp.ReadConversationOutput
	callTool(t, cs, "read_conversation", map[string]any{"channel": "C0GENERAL"}, &m)
	if len(m.Messages) != 1 || m.Messages[0].Text != "hello" || !m.Freshness.DaemonRunning {
		t.Errorf("read_conversation over /mcp = %+v", m)
	}
	// search_messages searches the daemon's own SQL projection, which its projectors
	// bring up to date with the tick a moment after it.
	var found mcp.SearchOutput
	var last string
	for deadline := time.Now().Add(10 * time.Second); len(found.Hits) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "search_messages", Arguments: map[string]any{"query": "hello"}})
		if err != nil {
			t.Fatalf("search_messages over /mcp: %v", err)
		}
		raw, _ := json.Marshal(res)
		if last = string(raw); !res.IsError {
			raw, _ = json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(raw, &found); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(found.Hits) != 1 || found.Hits[0].Channel != "C0GENERAL" || found.Hits[0].Text != "hello" || found.Hits[0].LastPolledAt == nil || !found.Freshness.DaemonRunning {
		t.Errorf("search_messages hello over /mcp = %s, want the message, from the daemon's projection", last)
	}
	_ = cs.Close()

	cancel()
	res := <-done
	if res.code != ExitOK {
		t.Fatalf("run after cancel = %d, stderr %s", res.code, res.stderr)
	}
	if strings.Contains(res.stderr, "api-tok") || strings.Contains(res.stderr, fake.Token()) {
		t.Errorf("run's log reveals a token:\n%s", res.stderr)
	}
	if code, _ := get(base+"/healthz", ""); code != 0 {
		t.Errorf("/healthz after run returned = %d, want no server", code)
	}
}

func TestNonLoopbackListenWarns(t *testing.T) {
	for listen, warns := range map[string]bool{"127.0.0.1:8089": false, ":8089": true, "0.0.0.0:8089": true, "192.0.2.7:8089": true} {
		var logs bytes.Buffer
		warnIfExposed(slog.New(slog.NewTextHandler(&logs, nil)), listen, true)
		if got := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "not a loopback address"); got != warns {
			t.Errorf("http.listen %q: warning logged = %v, want %v (log: %q)", listen, got, warns, logs.String())
		}
	}
}

// The store file deleted under a running daemon: /readyz answers 503 at once, and the
// daemon stops with an error at its next tick instead of writing into the unlinked
// file while a second daemon could start on the path.
func TestRunStopsWhenItsStoreIsDeleted(t *testing.T) {
	store := filepath.Join(t.TempDir(), "slackpoll.db")
	_, base, cfg := generalDaemon(t, cfgOpts{store: store, extra: "tick:\n  interval: 1s\n"})
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, errOut := runCLI(t.Context(), "run", "--config", cfg)
		done <- result{code, errOut}
	}()
	waitFor(t, "the first tick", func() bool {
		code, b := get(base+"/v1/status", "")
		var r status.Report
		return code == http.StatusOK && json.Unmarshal(b, &r) == nil && r.LastTick != nil
	})
	if err := os.Remove(store); err != nil {
		t.Fatal(err)
	}
	if code, b := get(base+"/readyz", ""); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after the store was deleted = %d %s, want 503", code, b)
	}
	select {
	case res := <-done:
		if res.code != ExitRuntime || !strings.Contains(res.stderr, "deleted or moved away") {
			t.Errorf("run = exit %d, stderr:\n%s\nwant exit 1 saying the store was deleted", res.code, res.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run still running 30 s after its store was deleted")
	}
}

// TestShutdownAnswersTheLongPollsInFlight: a SIGTERM answers every GET /v1/changes
// long poll with what it has (an empty page and its cursor) at once, rather than
// leave them holding the API's graceful shutdown until it gives up and cuts their
// connections without an answer.
func TestShutdownAnswersTheLongPollsInFlight(t *testing.T) {
	_, base, cfg := generalDaemon(t, cfgOpts{store: filepath.Join(t.TempDir(), "slackpoll.db"), extra: "tick:\n  interval: 1h\n"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		code, _, _ := runCLI(ctx, "run", "--config", cfg)
		done <- code
	}()
	waitFor(t, "the first tick", func() bool {
		code, b := get(base+"/v1/status", "")
		var r status.Report
		return code == http.StatusOK && json.Unmarshal(b, &r) == nil && r.LastTick != nil
	})
	_, b := get(base+"/v1/changes", "")
	var p changefeed.Page
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("/v1/changes: %s", b)
	}
	type answer struct {
		code int
		body []byte
	}
	polls := make(chan answer, 3)
	sent := make(chan struct{}, cap(polls))
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // no idle connection the shutdown closes
	for range cap(polls) {
		go func() {
			// The request written is enough: a connection with a request not yet read is
			// not idle, so the shutdown serves it.
			trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { sent <- struct{}{} }}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodGet,
				fmt.Sprintf("%s/v1/changes?after=%d&wait=50s", base, p.Last), nil)
			resp, err := fresh.Do(req)
			if err != nil {
				polls <- answer{0, []byte(err.Error())}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			polls <- answer{resp.StatusCode, b}
		}()
	}
	for range cap(polls) {
		<-sent
	}
	// Shut down only once the three are waiting in the handler (the gauge of long
	// polls in flight): a request still in the socket when the listener closes is not
	// what this test is about.
	waitFor(t, "the long polls to wait", func() bool {
		_, b := get(base+"/metrics", "")
		return strings.Contains(string(b), "\nslackpoll_changes_long_polls 3\n")
	})
	cancel()
	for range cap(polls) {
		a := <-polls
		var got changefeed.Page
		if err := json.Unmarshal(a.body, &got); a.code != http.StatusOK || err != nil || got.Next != p.Last {
			t.Errorf("long poll at shutdown = %d %s, want 200 with next %d", a.code, a.body, p.Last)
		}
	}
	if code := <-done; code != ExitOK {
		t.Errorf("run after cancel = %d", code)
	}
}
