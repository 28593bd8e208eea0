package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackpoll/slackpoll/internal/status"
)

// Options configure New.
type Options struct {
	// Open returns the Reader one request reads through and the function that
	// releases it (`slackpoll mcp` opens the store, or asks the daemon, per request,
	// so that it never holds the store's lock between requests). Required.
	Open func(ctx context.Context) (Reader, func(), error)
	// Policy is the exposure policy (config mcp.conversations).
	Policy Policy
	// Version is slackpoll's version, told to clients.
	Version string
	// Subscriptions advertises resource subscriptions and, while a client holds
	// some, follows the change feed to notify it of the resources that changed. Only
	// a transport that keeps a session can carry them (stdio); the stateless HTTP
	// transport cannot.
	Subscriptions bool
	// Logger gets the server's log (stderr for stdio: stdout is the protocol); nil
	// discards.
	Logger *slog.Logger
	// FollowEvery is how often the change feed is read while subscriptions are held
	// and nothing changed; 0 is 2s.
	FollowEvery time.Duration
}

// Server is the MCP server: the SDK's server with slackpoll's tools and resources.
type Server struct {
	opts Options
	sdk  *sdk.Server
	log  *slog.Logger

	mu   sync.Mutex
	subs map[string]int // subscribed resource URIs, by number of subscriptions
	wake chan struct{}  // a first subscription starts the follower's reads
}

// instructions tell an agent what the server is and how to read its answers.
const instructions = `slackpoll keeps a local read model of Slack conversations by polling Slack; these tools read that model and call no Slack API.
Every message says how fresh it is: last_polled_at (when slackpoll last read it from Slack), its class (watched, tracked, untracked) and staleness_seconds, the worst-case delay after which a change to it (an edit, a reaction, a reply) is in the model. Untracked messages are no longer re-read.
Start with list_conversations; read_conversation pages a conversation newest first; read_thread reads a thread; get_message takes a channel and ts, a Slack message link or a record key; search_messages searches text; changes_since follows what changed; freshness says how stale the model may be.
Only the conversations the operator exposed are visible. Results are bounded: pass next_cursor back to get more.`

// New returns the server with every tool and resource registered.
func New(opts Options) *Server {
	s := &Server{opts: opts, log: opts.Logger, subs: map[string]int{}, wake: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	so := &sdk.ServerOptions{
		Instructions: instructions,
		// The SDK logs every session and notification at info: only its warnings
		// and errors belong in slackpoll's log.
		Logger: slog.New(minLevel{s.log.Handler(), slog.LevelWarn}),
		// Answers hold a workspace's messages: no shared cache may keep them.
		SetCacheable: func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) { c.CacheScope = "private" },
	}
	if opts.Subscriptions {
		so.SubscribeHandler = s.subscribe
		so.UnsubscribeHandler = s.unsubscribe
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "slackpoll", Title: "slackpoll: Slack, read from a local model", Version: opts.Version}, so)
	s.addTools()
	s.addResources()
	return s
}

// minLevel is a slog.Handler that drops records below its level.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(as), m.min}
}

func (m minLevel) WithGroup(g string) slog.Handler { return minLevel{m.Handler.WithGroup(g), m.min} }

// SDK returns the SDK's server, to connect a transport to.
func (s *Server) SDK() *sdk.Server { return s.sdk }

// Handler returns the Streamable HTTP handler of the server, stateless (each
// request stands alone, as the current MCP spec wants), answering JSON rather than
// an event stream. It does no access control of its own: mount it behind the read
// API's token, Host and cross-origin checks (httpapi.Options.MCP); the SDK's own
// localhost check is off because the API's Host check is the one in force.
func (s *Server) Handler() http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{
		Stateless:                  true,
		JSONResponse:               true,
		Logger:                     slog.New(minLevel{s.log.Handler(), slog.LevelWarn}),
		DisableLocalhostProtection: true,
	})
}

// Run serves one session on t (stdio) until the client goes away or ctx ends, and
// meanwhile, with Options.Subscriptions, notifies the client of changes to the
// resources it subscribed to.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	if s.opts.Subscriptions {
		wg.Go(func() { s.follow(ctx) })
	}
	err := s.sdk.Run(ctx, t)
	cancel()
	wg.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// view is what one answer reads first: the report, the policy applied to it, and
// the freshness of each class.
type view struct {
	r    Reader
	rep  status.Report
	exp  exposure
	cls  classes
	team string
}

// open starts one answer: a Reader, the report and the exposure. teamID, when set,
// must be the store's team (the multi-workspace design names workspaces by it).
func (s *Server) open(ctx context.Context, teamID string) (*view, func(), error) {
	r, release, err := s.opts.Open(ctx)
	if err != nil {
		return nil, nil, err
	}
	rep, err := r.Report(ctx)
	if err != nil {
		release()
		return nil, nil, err
	}
	v := &view{r: r, rep: rep, exp: s.opts.Policy.expose(&rep), cls: newClasses(&rep)}
	if rep.Identity != nil {
		v.team = rep.Identity.TeamID
	}
	if teamID != "" && teamID != v.team {
		release()
		if v.team == "" {
			return nil, nil, fmt.Errorf("team_id %q: this store has no team yet (no tick has run); leave team_id out", teamID)
		}
		return nil, nil, fmt.Errorf("team_id %q is not a workspace this slackpoll serves (it serves %s); leave team_id out or use %s", teamID, v.team, v.team)
	}
	return v, release, nil
}

// errNotExposed is the one answer about a conversation the policy hides, whether or
// not the model holds it: an agent cannot tell the two apart.
func errNotExposed(channel string) error {
	return fmt.Errorf("conversation %s is not available: it is not in the model, or not exposed to agents (mcp.conversations); list_conversations lists those that are", channel)
}
