package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/mcp"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// startMCP runs `slackpoll mcp --config cfg` in-process on pipes and returns a
// client session on the other ends.
func startMCP(t *testing.T, cfg string) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	inR, inW := io.Pipe()   // client → server
	outR, outW := io.Pipe() // server → client
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"mcp", "--config", cfg}, Env{Stdin: inR, Stdout: outW, Stderr: &stderr, Getenv: func(string) string { return "" }})
		_ = outW.Close()
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect to slackpoll mcp: %v (stderr: %s)", err, stderr.String())
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = inW.Close()
		if code := <-done; code != ExitOK {
			t.Errorf("slackpoll mcp exited %d: %s", code, stderr.String())
		}
		cancel()
		if strings.Contains(stderr.String(), "s3cret") {
			t.Errorf("stderr shows the token: %s", stderr.String())
		}
	})
	return cs
}

// callTool calls a tool and decodes its structured answer; a tool error fails.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s(%v): %v", name, args, res.Content[0].(*sdk.TextContent).Text)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}

// `slackpoll mcp` reads the store when no daemon holds it, and the daemon's API
// while one does — the same answers either way, the DM hidden in both.
func TestMCPOnStdioReadsTheStoreOrTheDaemon(t *testing.T) {
	for _, mode := range []string{"store", "daemon"} {
		t.Run(mode, func(t *testing.T) {
			f := readfixture.New(t, readfixture.Options{Private: true})
			o := cfgOpts{store: f.Path, convs: f.Configured, token: "s3cret"}
			if mode == "store" {
				if err := f.Store.Close(); err != nil {
					t.Fatal(err)
				}
				// The SQLite projection search reads, as once or run leave it.
				if code, out, errOut := runCLI(t.Context(), "projection", "rebuild", "--config", writeConfig(t, o)); code != ExitOK {
					t.Fatalf("projection rebuild: %d %s%s", code, out, errOut)
				}
			} else {
				o.listen = daemonAPIWithSearch(t, f, "s3cret")
			}
			cfg := writeConfig(t, o)
			cs := startMCP(t, cfg)

			var convs mcp.ListConversationsOutput
			callTool(t, cs, "list_conversations", nil, &convs)
			for _, c := range convs.Conversations {
				if c.ID == readfixture.DM || c.ID == readfixture.GroupDM {
					t.Errorf("list_conversations shows %s", c.ID)
				}
			}
			if len(convs.Conversations) != 3 || convs.TeamID == "" {
				t.Errorf("list_conversations = %+v", convs)
			}
			var m mcp.GetMessageOutput
			callTool(t, cs, "get_message", map[string]any{"link": "https://acme.slack.com/archives/" + readfixture.General + "/p" + strings.Replace(string(f.Reply), ".", "", 1)}, &m)
			if m.Message.TS != f.Reply || m.Message.Class != mcp.ClassWatched || m.Freshness.DaemonRunning != (mode == "daemon") {
				t.Errorf("get_message by link = %+v (freshness %+v)", m.Message, m.Freshness)
			}
			var th mcp.ReadThreadOutput
			callTool(t, cs, "read_thread", map[string]any{"record": readfixture.Record}, &th)
			if th.Parent.TS != f.Parent || len(th.Replies) != 1 || th.Replies[0].TS != f.Reply {
				t.Errorf("read_thread = %+v", th)
			}
			var p mcp.ReadConversationOutput
			callTool(t, cs, "read_conversation", map[string]any{"channel": readfixture.General, "limit": 2}, &p)
			var p2 mcp.ReadConversationOutput
			callTool(t, cs, "read_conversation", map[string]any{"channel": readfixture.General, "limit": 2, "cursor": p.NextCursor}, &p2)
			if len(p.Messages) != 2 || p.Messages[0].TS != f.Own || len(p2.Messages) != 2 || p2.Messages[0].TS != f.Parent || p2.NextCursor != "" {
				t.Errorf("read_conversation pages: %v then %v (%q)", tsOf(p.Messages), tsOf(p2.Messages), p2.NextCursor)
			}
			var found mcp.SearchOutput
			callTool(t, cs, "search_messages", map[string]any{"query": "deploy"}, &found)
			if len(found.Hits) != 1 || found.Hits[0].TS != f.Parent || found.Hits[0].Class != mcp.ClassWatched {
				t.Errorf("search_messages deploy = %+v", found)
			}
			// Every filter reaches the search, the store's or the daemon's.
			var byUser mcp.SearchOutput
			callTool(t, cs, "search_messages", map[string]any{"query": "thanks", "user": "Bee Example", "channel": readfixture.General,
				"after": "2026-01-01", "before": string(f.Plain), "limit": 5}, &byUser)
			if len(byUser.Hits) != 1 || byUser.Hits[0].TS != f.Reply {
				t.Errorf("search_messages thanks by Bee in %s = %+v", readfixture.General, byUser)
			}
			callTool(t, cs, "search_messages", map[string]any{"query": "thanks", "before": string(f.Reply)}, &byUser)
			if len(byUser.Hits) != 0 {
				t.Errorf("search_messages thanks before the reply = %+v", byUser)
			}
			// The operator's own search, which no policy restricts, finds the DM's
			// messages, through the same store or daemon: the answer below can fail.
			code, out, errOut := runCLI(t.Context(), "search", "--json", "--config", cfg, readfixture.DMKeyword)
			if code != ExitOK || !strings.Contains(out, `"channel":"`+readfixture.DM+`"`) {
				t.Fatalf("slackpoll search %s = %d, %s%s; want hits in %s", readfixture.DMKeyword, code, out, errOut, readfixture.DM)
			}
			var secret mcp.SearchOutput
			callTool(t, cs, "search_messages", map[string]any{"query": readfixture.DMKeyword}, &secret)
			if len(secret.Hits) != 0 {
				t.Errorf("search_messages %s shows %+v", readfixture.DMKeyword, secret.Hits)
			}
			var ch mcp.ChangesSinceOutput
			callTool(t, cs, "changes_since", map[string]any{"seq": 0}, &ch)
			for _, c := range ch.Changes {
				if c.Channel == readfixture.DM || c.Channel == readfixture.GroupDM {
					t.Errorf("changes_since shows a change of %s", c.Channel)
				}
			}
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "read_thread", Arguments: map[string]any{"record": readfixture.DMRecord}})
			if err != nil || !res.IsError {
				t.Errorf("read_thread of the DM's record: %v, %+v; want a tool error", err, res)
			}
		})
	}
}

// daemonAPIWithSearch is daemonAPI with a running SQLite projection, so that
// GET /v1/search answers, as the daemon's does.
func daemonAPIWithSearch(t *testing.T, f *readfixture.Fixture, token string) string {
	t.Helper()
	r := readfixture.Projection(t, f.Store)
	srv := httptest.NewServer(httpapi.New(httpapi.Options{
		Store: f.Store, Configured: f.Configured, Interval: readfixture.Interval, Token: token, Now: f.Clock.Now, Projections: r,
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func tsOf(ms []mcp.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.TS))
	}
	return out
}

// An agent keeps `slackpoll mcp` running for hours: between its requests the store
// is not held, so `slackpoll run` can start (here: a read-write open, as run does).
func TestMCPDoesNotHoldTheStoreBetweenRequests(t *testing.T) {
	f := closedStore(t)
	cs := startMCP(t, writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured}))
	var convs mcp.ListConversationsOutput
	callTool(t, cs, "list_conversations", nil, &convs)
	s, err := boltstore.Open(f.Path, boltstore.Options{LockTimeout: readLockTimeout})
	if err != nil {
		t.Fatalf("opening the store read-write while slackpoll mcp runs: %v", err)
	}
	// With the store held (as by run) and no API configured, a request says why.
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "freshness"})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "http.listen") {
		t.Errorf("freshness while the store is held and http.listen is unset: %v %+v; want an error naming http.listen", err, res)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "list_conversations", nil, &convs)
}

// --print-config prints each client's config for stdio and for /mcp; the token is
// never in it.
func TestMCPPrintConfig(t *testing.T) {
	cfg := writeConfig(t, cfgOpts{store: "/tmp/x.db", listen: "127.0.0.1:8089", token: "s3cret"})
	for _, tc := range []struct {
		client, transport string
		wants             []string
	}{
		{"claude-desktop", "stdio", []string{`"mcpServers"`, `"command"`, `"mcp"`, `"--config"`, cfg}},
		{"claude-code", "stdio", []string{`"mcpServers"`, `"type": "stdio"`, cfg}},
		{"claude-code", "http", []string{`"type": "http"`, `"url": "http://127.0.0.1:8089/mcp"`, `"Authorization": "Bearer ${SLACKPOLL_HTTP_TOKEN}"`}},
		{"vscode", "stdio", []string{`"servers"`, `"type": "stdio"`, cfg}},
		{"vscode", "http", []string{`"url": "http://127.0.0.1:8089/mcp"`, `"password": true`, `${input:slackpoll-http-token}`}},
		{"codex", "stdio", []string{"[mcp_servers.slackpoll]", `command = "`, `args = ["mcp", "--config", "` + cfg + `"]`}},
		{"codex", "http", []string{`url = "http://127.0.0.1:8089/mcp"`, `bearer_token_env_var = "SLACKPOLL_HTTP_TOKEN"`}},
	} {
		code, out, errOut := runCLI(t.Context(), "mcp", "--config", cfg, "--print-config", tc.client, "--transport", tc.transport)
		if code != ExitOK {
			t.Errorf("%s %s: exit %d: %s", tc.client, tc.transport, code, errOut)
			continue
		}
		wantContains(t, tc.client+" "+tc.transport, out, tc.wants...)
		if strings.Contains(out+errOut, "s3cret") {
			t.Errorf("%s %s prints the token", tc.client, tc.transport)
		}
		if strings.HasPrefix(out, "{") {
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Errorf("%s %s: not JSON: %v\n%s", tc.client, tc.transport, err, out)
			}
		}
	}
	for _, args := range [][]string{
		{"--print-config", "notepad"},
		{"--print-config", "claude-desktop", "--transport", "http"},
		{"--print-config", "codex", "--transport", "carrier-pigeon"},
	} {
		if code, _, _ := runCLI(t.Context(), append([]string{"mcp", "--config", cfg}, args...)...); code != ExitUsage {
			t.Errorf("mcp %v: exit %d, want %d", args, code, ExitUsage)
		}
	}
	noListen := writeConfig(t, cfgOpts{store: "/tmp/x.db"})
	if code, _, errOut := runCLI(t.Context(), "mcp", "--config", noListen, "--print-config", "codex", "--transport", "http"); code != ExitUsage || !strings.Contains(errOut, "http.listen") {
		t.Errorf("http config without http.listen: exit %d, %s", code, errOut)
	}
}
