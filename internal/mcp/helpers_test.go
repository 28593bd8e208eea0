package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/mcp"
	"github.com/slackpoll/slackpoll/internal/projection"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// testToken is http.token of the HTTP transport's tests.
const testToken = "s3cret-mcp-token"

// env is a fixture store (with a DM and a group DM) served by the MCP server.
type env struct {
	f      *readfixture.Fixture
	proj   *projection.Runner // the SQLite projection search_messages searches
	server *mcp.Server
	api    *httptest.Server // the read API with the server at /mcp
}

func newEnv(t testing.TB, policy mcp.Policy) *env {
	t.Helper()
	return newEnvSearching(t, policy, nil)
}

// searcher is StoreReader.Searcher's type.
type searcher = func(context.Context, projection.Query, projection.Freshness) (projection.Page, error)

// newEnvSearching is newEnv whose reader searches through wrap(the projection's
// search) when wrap is not nil.
func newEnvSearching(t testing.TB, policy mcp.Policy, wrap func(searcher) searcher) *env {
	t.Helper()
	f := readfixture.New(t, readfixture.Options{Private: true})
	proj := readfixture.Projection(t, f.Store)
	search := searcher(proj.Search)
	if wrap != nil {
		search = wrap(search)
	}
	reader := &mcp.StoreReader{Store: f.Store, Configured: f.Configured, Interval: readfixture.Interval, DaemonRunning: true, Now: f.Clock.Now,
		Searcher: search}
	s := mcp.New(mcp.Options{
		Open:          func(context.Context) (mcp.Reader, func(), error) { return reader, func() {}, nil },
		Policy:        policy,
		Version:       "test",
		Subscriptions: true,
		FollowEvery:   20 * time.Millisecond,
	})
	api := httptest.NewServer(httpapi.New(httpapi.Options{
		Store: f.Store, Configured: f.Configured, Interval: readfixture.Interval, Now: f.Clock.Now,
		Token: testToken, MCP: s.Handler(),
	}))
	t.Cleanup(api.Close)
	return &env{f: f, proj: proj, server: s, api: api}
}

// changeTheWorkspace reacts to and edits messages of General and of the DM, and runs
// a tick that reads them: the feed then holds changes of both.
func (e *env) changeTheWorkspace(t testing.TB) {
	t.Helper()
	f := e.f
	for _, err := range []error{
		f.Fake.React(readfixture.General, f.Plain, readfixture.Avery, "tada"),
		f.Fake.React(readfixture.DM, f.DMParent, readfixture.Avery, "lock"),
		f.Fake.Edit(readfixture.DM, f.DMParent, "the "+readfixture.DMKeyword+" salary numbers, edited"),
		f.Fake.React(readfixture.GroupDM, f.GroupDMMessage, readfixture.Bee, "lock"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	e.tick(t)
}

// tick runs a tick of the fixture's poller, and brings the projection up to date
// with what it wrote (the poller writes the store directly, not through the
// projection's watch).
func (e *env) tick(t testing.TB) {
	t.Helper()
	e.f.Clock.Advance(2 * readfixture.Interval)
	if _, err := e.f.Poller.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.proj.RequestRebuild() == 0 {
		t.Fatal("no projection to rebuild")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.proj.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

// transports are the two ways a client reaches the server.
var transports = []string{"stdio", "http"}

// bearer adds the API's token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect returns a client session over transport: "stdio" is a session on a pair of
// OS pipes, served as `slackpoll mcp` serves its stdin and stdout (Server.Run on an
// IOTransport);
// "http" goes through the read API's /mcp with the token.
func (e *env) connect(t testing.TB, transport string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
	var ct sdk.Transport
	switch transport {
	case "stdio":
		// Two OS pipes framed as `slackpoll mcp` frames its stdin and stdout.
		toServer, fromClient, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		toClient, fromServer, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		s := &sdk.IOTransport{Reader: toServer, Writer: fromServer}
		c := &sdk.IOTransport{Reader: toClient, Writer: fromClient}
		done := make(chan error, 1)
		go func() { done <- e.server.Run(ctx, s) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Server.Run: %v", err)
			}
		})
		ct = c
	case "http":
		ct = &sdk.StreamableClientTransport{
			Endpoint:   e.api.URL + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}},
		}
	}
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("%s: connect: %v", transport, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// schemas compiles the output schema of every tool the session lists.
type schemas struct {
	mu    sync.Mutex
	tools map[string]*jsonschema.Schema
}

func toolSchemas(t testing.TB, cs *sdk.ClientSession) *schemas {
	t.Helper()
	s := &schemas{tools: map[string]*jsonschema.Schema{}}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		url := "mem://" + tool.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			t.Fatalf("tool %s: output schema: %v", tool.Name, err)
		}
		s.tools[tool.Name] = sch
	}
	return s
}

// call calls a tool, checks the answer is not an error and validates its structured
// content against the tool's output schema, then decodes it into out.
func (s *schemas) call(t testing.TB, cs *sdk.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	if res.IsError {
		t.Fatalf("%s(%v): tool error: %s", name, args, text(res))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	sch := s.tools[name]
	s.mu.Unlock()
	if sch == nil {
		t.Fatalf("tool %s is not listed", name)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("%s(%v): the answer does not match the tool's output schema: %v\n%s", name, args, err, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}
}

// callErr calls a tool and returns the text of its tool error; it fails the test
// when the call succeeds.
func callErr(t testing.TB, cs *sdk.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err.Error()
	}
	if !res.IsError {
		raw, _ := json.Marshal(res.StructuredContent)
		t.Fatalf("%s(%v) succeeded, want an error: %s", name, args, raw)
	}
	return text(res)
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
