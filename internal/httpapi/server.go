// Package httpapi is slackpoll's HTTP read API (README, "Commands"): the read model as
// export lines (README, "Commands") over HTTP while the daemon holds the store, plus POST /v1/tracked,
// the status report, /healthz, /readyz and Prometheus /metrics.
//
// Routes (Go 1.22 ServeMux patterns):
//
//	GET  /v1/conversations                        {"items": [conversation lines], "next_cursor": ""}
//	GET  /v1/conversations/{id}/messages          ?oldest=&latest=&limit=&cursor= → {"items": [message lines], "next_cursor": "…"}
//	GET  /v1/conversations/{id}/messages/{ts}     one message line (a reply: its own line, no replies)
//	GET  /v1/records/{key}                        the message line a record key is attached to
//	GET  /v1/users/{id}                           one user line (to resolve reaction users)
//	POST /v1/tracked                              {"channel","ts","record"} → the message line
//	DELETE /v1/tracked/{channel}/{ts}             untrack → {"channel","ts"}
//	POST /v1/conversations/retry                  {"channels":[…]} → {"channels":[…]} made due (readmodel.Retry)
//	GET  /v1/status                               the status report (internal/status.Report)
//	GET  /v1/changes                              ?after=&cursor=&limit=&wait=&kind=&channel=&record=&own= → {"items", "next_cursor", "oldest", "last"}; 410 when pruned, 409 when after > last
//	GET  /v1/outbox                               ?webhook=&parked=true → {"items": [outbox rows]}
//	POST /v1/outbox/requeue                       {"webhook","seqs"} → {"requeued": n}
//	POST /v1/outbox/drop                          {"webhook"} → {"dropped": n}, a webhook no longer configured
//	GET  /v1/export                               the whole read model as JSON Lines (slackpoll export); header Slackpoll-Undecodable-Records names the records skipped
//	GET  /v1/backup                               a consistent copy of the store file (slackpoll backup)
//	GET  /v1/openapi.json                         the OpenAPI 3.1 document of every route (openapi.yaml)
//	GET  /v1/search                               ?q=&channel=&user=&after=&before=&record=&limit=&cursor= → {"items": [hits], "next_cursor": "…"}
//	POST /v1/projection/rebuild                   rebuild the SQL projection from the store → {"rebuilding": n}
//	GET  /healthz                                 200 while the process serves; no token needed
//	GET  /readyz                                  200 when the store is open and Ready() is nil
//	GET  /metrics                                 Prometheus text format, names slackpoll_*
//	POST /mcp                                     the MCP server (Options.MCP): Streamable HTTP, JSON-RPC; MCP's spec, not the OpenAPI document, describes it
//
// Errors are {"error": "…"} with a 4xx/5xx status: 400 bad parameter, 401 missing or
// wrong bearer token, 403 a Host header of another name (checkHost), 404 unknown
// conversation, message, record, user or route, 405 wrong method, 409 record
// conflict or a feed cursor past the last seq, 415 a POST that is not application/json, 500 store failure, 503 not
// ready. A request that changes state (POST, DELETE) from a web page of another
// origin is refused with 403 (crossOrigin).
package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/metrics"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
)

// Options configure New. Store is required.
type Options struct {
	// Store is the read model; the API reads it in View transactions and writes only
	// through readmodel.Track.
	Store rm.Store
	// Configured are the configured conversation IDs, listed as pending until stored.
	Configured []string
	// Interval is tick.interval, for the status report's staleness and next tick.
	Interval time.Duration
	// Token, if not "", is the bearer token every request but /healthz must send
	// ("Authorization: Bearer <token>"). It is compared in constant time and never
	// logged nor echoed.
	Token string
	// Ready reports whether the daemon can serve fresh data (Metrics.Ready: Slack
	// accepted the token); nil means always. /readyz also checks the store.
	Ready func() error
	// Metrics receives the poller's and the Slack client's hooks and is served on
	// /metrics; nil serves a fresh metrics.New (store gauges only).
	Metrics *metrics.Metrics
	// Logger gets one debug line per request and the details of 500s; nil discards.
	Logger *slog.Logger
	// Now is the clock of the status report and the store gauges; nil is time.Now.
	Now func() time.Time
	// Notifier wakes long polls of GET /v1/changes; nil answers them at once.
	Notifier *changefeed.Notifier
	// OnRequeue, if set, is called after POST /v1/outbox/requeue put rows back in
	// line (the deliverer's Wake).
	OnRequeue func()
	// Webhooks are the configured webhook names, for the status report's outbox.
	Webhooks []string
	// CurrentConfigured, if set, overrides Configured with the conversations
	// configured now (they change when the daemon reloads its config on SIGHUP).
	CurrentConfigured func() []string
	// Running, if set, reports the tick under way (poller.Poller.Running), for the
	// status report.
	Running func() (rm.TickRunning, bool)
	// Listen is http.listen: besides loopback names and IP addresses, requests
	// may name its host in their Host header (checkHost).
	Listen string
	// AllowedHosts are more names the Host header may give (http.allowed_hosts).
	AllowedHosts []string
	// MCP, if set, is served at /mcp behind the API's checks (host, origin, token,
	// JSON): the MCP server's Streamable HTTP handler (internal/mcp).
	MCP http.Handler
	// Projections, if set, serves GET /v1/search and POST /v1/projection/rebuild
	// and adds the projection's state to the status report and the metrics.
	Projections Projections
	// SpoolDir is where GET /v1/export and GET /v1/backup make their answer before
	// sending it (a file as large as the answer, removed once sent); "" is
	// os.TempDir(). The daemon uses the store's directory.
	SpoolDir string
	// WorkspaceState, if set, is the workspace's state in a daemon of many, for the
	// status report.
	WorkspaceState func() *status.WorkspaceState
	// Workspaces, if set, makes the API serve many workspaces (workspaces.go).
	Workspaces Workspaces
	// StreamChunkTimeout is how long a client may take to read each 64 KiB of a
	// streamed answer (export, backup) before it is cut off; ≤ 0 is
	// DefaultStreamChunkTimeout (20s).
	StreamChunkTimeout time.Duration
}

// api holds the handlers' dependencies.
type api struct {
	store      rm.Store
	configured []string
	interval   time.Duration
	ready      func() error
	log        *slog.Logger
	now        func() time.Time
	notifier   *changefeed.Notifier
	onRequeue  func()
	webhooks   []string
	metrics    *metrics.Metrics
	running    func() (rm.TickRunning, bool)
	current    func() []string
	// projections is nil when the daemon runs no SQL projection.
	projections Projections
	// spooler makes and sends the streamed answers (export, backup).
	spooler spooler
	// workspace is Options.WorkspaceState.
	workspace func() *status.WorkspaceState
}

// configuredNow is the configured conversations as of now (Options.CurrentConfigured).
func (a *api) configuredNow() []string {
	if a.current != nil {
		return a.current()
	}
	return a.configured
}

// New returns the API's handler. It registers Options.Store with Options.Metrics for
// the gauges read at scrape time (tracked items, oldest last_polled_at, ...). With
// Options.Workspaces set, it serves many workspaces instead (workspaces.go): each
// under /v1/workspaces/{team_id}/, and Options.Store is not used.
func New(opts Options) http.Handler {
	var mux *http.ServeMux
	if opts.Workspaces != nil {
		mux = newWorkspacesMux(opts)
	} else {
		a := newAPI(opts)
		a.metrics.Watch(a.statusInput, a.store)
		mux = apiMux(a, opts.MCP)
	}
	var h http.Handler = mux
	h = requireJSON(h)
	h = requireToken(opts.Token, h, "/healthz")
	h = crossOrigin(h)
	h = checkHost(opts.Listen, opts.AllowedHosts, h)
	h = jsonErrors(h)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h = logRequests(log, h)
	return h
}

// NewWorkspace returns one workspace's API without the checks New puts in front of
// it (host, origin, token, JSON) nor the store gauges: what New with
// Options.Workspaces serves under /v1/workspaces/{team_id}/, behind its own checks.
// Options.Metrics should be the daemon's (nil builds a registry per call).
func NewWorkspace(opts Options) http.Handler { return apiMux(newAPI(opts), opts.MCP) }

func newAPI(opts Options) *api {
	a := &api{
		store: opts.Store, configured: opts.Configured, interval: opts.Interval,
		ready: opts.Ready, log: opts.Logger, now: opts.Now,
		notifier: opts.Notifier, onRequeue: opts.OnRequeue, webhooks: opts.Webhooks,
		running: opts.Running, current: opts.CurrentConfigured,
		projections: opts.Projections, workspace: opts.WorkspaceState,
	}
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a.spooler = spooler{dir: opts.SpoolDir, chunkTimeout: opts.StreamChunkTimeout, log: a.log}
	if a.spooler.dir == "" {
		a.spooler.dir = os.TempDir()
	}
	if a.spooler.chunkTimeout <= 0 {
		a.spooler.chunkTimeout = DefaultStreamChunkTimeout
	}
	if a.now == nil {
		a.now = time.Now
	}
	a.metrics = opts.Metrics
	if a.metrics == nil {
		a.metrics = metrics.New()
	}
	return a
}

// apiMux is a's routes, and the MCP server's at /mcp when set.
func apiMux(a *api, mcp http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	a.routes(mux)
	if mcp != nil {
		// JSON-RPC over HTTP, described by MCP's spec rather than openapi.yaml,
		// hence not among routes; the SDK's handler answers its own methods and
		// errors (405 for GET and DELETE: the server is stateless).
		mux.Handle("/mcp", mcp)
	}
	return mux
}

// router is what routes registers on: an http.ServeMux, or a test's list of routes.
type router interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
	Handle(pattern string, handler http.Handler)
}

// routes registers every route of the API (Go 1.22 ServeMux patterns). The OpenAPI
// document (openapi.yaml) describes each, and TestOpenAPI checks that it does.
func (a *api) routes(mux router) {
	mux.HandleFunc("GET /v1/conversations", a.conversations)
	mux.HandleFunc("GET /v1/conversations/{id}/messages", a.messages)
	mux.HandleFunc("GET /v1/conversations/{id}/messages/{ts}", a.message)
	mux.HandleFunc("GET /v1/records/{key}", a.record)
	mux.HandleFunc("GET /v1/users/{id}", a.user)
	mux.HandleFunc("POST /v1/tracked", a.track)
	mux.HandleFunc("DELETE /v1/tracked/{channel}/{ts}", a.untrack)
	mux.HandleFunc("POST /v1/conversations/retry", a.retry)
	mux.HandleFunc("GET /v1/status", a.status)
	mux.HandleFunc("GET /v1/changes", a.changes)
	mux.HandleFunc("GET /v1/outbox", a.outbox)
	mux.HandleFunc("POST /v1/outbox/requeue", a.requeue)
	mux.HandleFunc("POST /v1/outbox/drop", a.drop)
	mux.HandleFunc("GET /v1/export", a.export)
	mux.HandleFunc("GET /v1/backup", a.backup)
	mux.HandleFunc("GET /v1/search", a.search)
	mux.HandleFunc("POST /v1/projection/rebuild", a.rebuild)
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.HandleFunc("GET /v1/openapi.json", openapi)
	mux.Handle("GET /metrics", a.metrics.Handler())
}

// NewServer returns an http.Server for h on addr with timeouts that keep a slow or
// idle client from holding a connection forever. Callers Serve it and Shutdown it.
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
}
