// Package config is slackpoll's configuration: the Config type, the commented
// default file slackpoll.yaml (embedded in the binary), Load, and Validate.
//
// The contract is config/slackpoll.yaml. A config file is YAML; it is decoded on top of
// the defaults, so it needs only the keys it changes. Unknown keys are errors; a
// key of an earlier release that was renamed or removed (keychanges.go) loads with
// a Warning.
// ${VAR} in a value is expanded from the environment after parsing, so an
// environment variable cannot inject YAML structure. Every error of this
// package matches ErrInvalid (exit status 2) and names the file, the key path
// and what is allowed; secrets (type Secret) never appear in errors or output.
package config

import (
	_ "embed"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed slackpoll.yaml
var defaultYAML []byte

// DefaultFile is the name under which the embedded defaults appear in errors.
const DefaultFile = "built-in defaults"

// Config is the whole configuration. Field comments give units and allowed
// values; slackpoll.yaml documents them for operators.
type Config struct {
	Slack         Slack      `yaml:"slack" json:"slack"`
	Store         Store      `yaml:"store" json:"store"`
	Conversations []string   `yaml:"conversations" json:"conversations"` // IDs to poll: C, G or D then uppercase letters/digits
	Discover      string     `yaml:"discover" json:"discover"`           // "" or "member" (DiscoverMember)
	Tick          Tick       `yaml:"tick" json:"tick"`
	Budget        Budget     `yaml:"budget" json:"budget"`
	Tracking      Tracking   `yaml:"tracking" json:"tracking"`
	Window        Window     `yaml:"window" json:"window"`
	Users         Users      `yaml:"users" json:"users"`
	HTTP          HTTP       `yaml:"http" json:"http"`
	Changes       Changes    `yaml:"changes" json:"changes"`
	Webhooks      []Webhook  `yaml:"webhooks" json:"webhooks"`
	Projection    Projection `yaml:"projection" json:"projection"`
	MCP           MCP        `yaml:"mcp" json:"mcp"`
	Log           Log        `yaml:"log" json:"log"`
	// Workspaces are the installations one daemon polls; empty = the one of
	// slack.token, in store.path (config/workspaces.go).
	Workspaces []Workspace `yaml:"workspaces" json:"workspaces"`
	Install    Install     `yaml:"install" json:"install"`
	Shard      Shard       `yaml:"shard" json:"shard"`

	src *source // where the values came from, for error messages; nil for Default
}

// Slack configures the Slack Web API client.
type Slack struct {
	Token          Secret             `yaml:"token" json:"token"`                     // bot token; default ${SLACK_BOT_TOKEN}; see RequireToken
	APIURL         string             `yaml:"api_url" json:"api_url"`                 // http(s) base URL; Validate appends a missing trailing "/"
	RateProfile    string             `yaml:"rate_profile" json:"rate_profile"`       // ProfileNonMarketplace or ProfileInternal
	Rates          map[string]float64 `yaml:"rates" json:"rates"`                     // requests per minute (> 0) per method, overriding the profile
	RequestTimeout Duration           `yaml:"request_timeout" json:"request_timeout"` // per HTTP request, > 0
	// ClientID and ClientSecret are the app's credentials, needed to refresh
	// rotating tokens (oauth.v2.access); "" when no token rotates.
	ClientID     string `yaml:"client_id" json:"client_id"`
	ClientSecret Secret `yaml:"client_secret" json:"client_secret"`
}

// Store configures the bbolt database.
type Store struct {
	Path string `yaml:"path" json:"path"` // database file, non-empty (one workspace)
	// Dir holds one store per workspace, <dir>/<team_id>.db, and the sealed
	// registrations (installations.db): needed by workspaces: and the install API.
	Dir string `yaml:"dir" json:"dir"`
}

// Tick configures the polling pass.
type Tick struct {
	Interval     Duration `yaml:"interval" json:"interval"`           // how often a tick starts, > 0
	SoftDeadline Duration `yaml:"soft_deadline" json:"soft_deadline"` // no new call after this, > 0
}

// Budget holds the per-tick hard caps on calls, per method (each >= 0; 0 = none).
type Budget struct {
	HistoryCalls   int `yaml:"history_calls" json:"history_calls"`       // conversations.history: head reads and tail ranges
	RepliesCalls   int `yaml:"replies_calls" json:"replies_calls"`       // conversations.replies calls
	UsersInfoCalls int `yaml:"users_info_calls" json:"users_info_calls"` // users.info calls
	ReactionsCalls int `yaml:"reactions_calls" json:"reactions_calls"`   // reactions.get calls (watched messages)
}

// Tracking is the tracking policy: which stored messages keep rotating, and how often
// each conversation's new messages are read.
type Tracking struct {
	Horizon      Duration `yaml:"horizon" json:"horizon"`             // rotate a message not watched until this long after its ts; 0 = for ever
	HeadMaxAge   Duration `yaml:"head_max_age" json:"head_max_age"`   // longest time between two head reads of a conversation; 0 = automatic
	WatchedShare float64  `yaml:"watched_share" json:"watched_share"` // least share of each method's calls for watched messages, in (0, 1]
}

// Window configures the head reads: how far back they read a conversation (the
// bulk window).
type Window struct {
	Bulk Duration `yaml:"bulk" json:"bulk"` // history read in bulk each tick: oldest = now − Bulk; > 0
}

// Users configures user-name lookups.
type Users struct {
	CacheTTL Duration `yaml:"cache_ttl" json:"cache_ttl"` // age after which a cached user is looked up again; > 0
}

// HTTP configures the read API.
type HTTP struct {
	Listen string `yaml:"listen" json:"listen"` // "" (off) or host:port, e.g. "127.0.0.1:8089", ":8089"
	Token  Secret `yaml:"token" json:"token"`   // optional bearer token for the read API; "" = none
	// AllowedHosts are more names requests may give in their Host header besides
	// loopback names, IP addresses and http.listen's host: a service name such as
	// "slackpoll" in Docker Compose or Kubernetes. Names, without a port.
	AllowedHosts []string `yaml:"allowed_hosts" json:"allowed_hosts"`
	// PathPrefix is not a key: a command scoped to one workspace of many
	// (--workspace) reaches its API under /v1/workspaces/{team_id}.
	PathPrefix string `yaml:"-" json:"-"`
}

// Changes configures the change feed (GET /v1/changes, slackpoll changes).
type Changes struct {
	Retention Duration `yaml:"retention" json:"retention"` // how long changes are kept, > 0
	Backfill  bool     `yaml:"backfill" json:"backfill"`   // also report messages first read below a conversation's baseline
}

// Webhook is one receiver of the change feed's changes, POSTed through the outbox.
// Zero durations and counts take the defaults documented in slackpoll.yaml.
type Webhook struct {
	Name        string    `yaml:"name" json:"name"`                 // unique; keys the webhook's outbox rows
	URL         SecretURL `yaml:"url" json:"url"`                   // http(s) URL the changes are POSTed to; may carry credentials
	Secret      Secrets   `yaml:"secret" json:"secret"`             // signs every POST (Standard Webhooks): whsec_… or, as earlier releases, a plain secret; a list while rotating; required
	Kinds       []string  `yaml:"kinds" json:"kinds"`               // change kinds to send; empty = all
	Channels    []string  `yaml:"channels" json:"channels"`         // conversation IDs; empty = all
	Records     []string  `yaml:"records" json:"records"`           // record keys; empty = all
	Own         *bool     `yaml:"own" json:"own"`                   // true: only the app's own; false: only others'; unset: both
	Timeout     Duration  `yaml:"timeout" json:"timeout"`           // per POST; 0 = 10s
	Lease       Duration  `yaml:"lease" json:"lease"`               // how long a claim holds its rows; 0 = 1m
	MaxAttempts int       `yaml:"max_attempts" json:"max_attempts"` // failed attempts before a row is parked; 0 = 10
	MaxRows     int       `yaml:"max_rows" json:"max_rows"`         // rows its outbox keeps before the oldest are dropped; 0 = 100000
}

// MCP configures the MCP server (slackpoll mcp, and /mcp on http.listen).
type MCP struct {
	// Conversations are the conversations agents may read. Empty: every public and
	// private channel the model holds, never a DM or group DM. A list: those only,
	// whatever their type (list a DM to expose it).
	Conversations []string `yaml:"conversations" json:"conversations"`
}

// Projection configures the SQL projection of the read model (docs/sql.md): a
// SQLite file next to the store, on by default, and optionally a Postgres schema.
type Projection struct {
	SQLite   ProjectionSQLite   `yaml:"sqlite" json:"sqlite"`
	Postgres ProjectionPostgres `yaml:"postgres" json:"postgres"`
}

// ProjectionSQLite configures the built-in SQLite projection.
type ProjectionSQLite struct {
	Enabled bool   `yaml:"enabled" json:"enabled"` // default true
	Path    string `yaml:"path" json:"path"`       // "" = store.path with its extension replaced by .sqlite; relative to the config file
}

// ProjectionPostgres configures the Postgres projection; off while DSN is "".
type ProjectionPostgres struct {
	DSN    Secret `yaml:"dsn" json:"dsn"`       // postgres://user:password@host:5432/db, or libpq key=value pairs
	Schema string `yaml:"schema" json:"schema"` // the schema of the tables, created if missing; default slackpoll
}

// SQLitePath returns the SQLite projection's file: projection.sqlite.path, else
// store.path with its extension replaced by ".sqlite" (slackpoll.db →
// slackpoll.sqlite), next to the store.
func (c *Config) SQLitePath() string {
	if c.Projection.SQLite.Path != "" {
		return c.Projection.SQLite.Path
	}
	return strings.TrimSuffix(c.Store.Path, filepath.Ext(c.Store.Path)) + ".sqlite"
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level" json:"level"`   // debug | info | warn | error
	Format string `yaml:"format" json:"format"` // text | json
}

// DefaultYAML returns a copy of the embedded, commented default config file
// (config/slackpoll.yaml).
func DefaultYAML() []byte {
	return append([]byte(nil), defaultYAML...)
}

// Default returns the built-in configuration: the embedded slackpoll.yaml,
// with ${VAR} expanded from the environment as Load does (so the token is
// $SLACK_BOT_TOKEN), validated.
func Default() (*Config, error) {
	c := &Config{}
	if err := decode(c, DefaultFile, defaultYAML, os.LookupEnv, nil); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// File returns the path the config was loaded from, or "" for Default.
func (c *Config) File() string {
	if c.src == nil {
		return ""
	}
	return c.src.file
}

// String renders the config as YAML with secrets redacted.
func (c *Config) String() string {
	b, err := yaml.Marshal(c)
	if err != nil {
		return "config: " + err.Error()
	}
	return string(b)
}
