package slackfake

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options configures a Server. The zero value is a Tier-3 (internal app) workspace:
// no page cap, no rate limits, untruncated reaction users, real time.
type Options struct {
	// Now is the clock for ts values, rate-limit windows and the request log. Default
	// time.Now (which is the fake clock inside a testing/synctest bubble).
	Now func() time.Time
	// PageCap caps every page size server-side, whatever limit the client asks for;
	// 0 = no cap, 15 = a non-Marketplace app.
	PageCap int
	// RatePerMinute is the number of requests per minute allowed per method and token
	// ("conversations.history": 1); 0 or absent = unlimited. Over it the Server
	// answers HTTP 429 with an integer Retry-After (sliding 60-second window).
	RatePerMinute map[string]int
	// ReactionUsersCap truncates each reaction's users list to this many users
	// (count stays exact; the token's own bot user is always listed); 0 = no cap.
	ReactionUsersCap int
	// RepeatParentOnEveryPage makes conversations.replies repeat the thread parent at
	// the start of every continuation page (real clients disagree on whether Slack
	// does this).
	RepeatParentOnEveryPage bool
	// Seed seeds the fault generator (SetFaultRate, 5xx status choice).
	Seed int64
	// Scopes are the token's OAuth scopes; nil = DefaultScopes.
	Scopes []string
	// TeamID is the workspace ID ("T" and uppercase letters or digits, as Slack's);
	// "" = "T0SLACKPL". TeamName is its name; "" = "slackpoll fake".
	TeamID, TeamName string
	// EnterpriseID makes the installation an org-wide install in that Enterprise Grid
	// organisation ("E" and uppercase letters or digits): auth.test then answers
	// enterprise_id and is_enterprise_install true. "" = a plain workspace install.
	EnterpriseID string
	// Token is the bot token ("xoxb-…"). "" = the fixed "xoxb-1000000001-…" token when
	// TeamID is unset too, else a token derived from TeamID and Seed, so that servers
	// of different teams never share a token.
	Token string
	// TokenLifetime is how long a rotating access token lives (expires_in); 0 =
	// TokenLifetime, Slack's 12 hours. A few seconds lets a demo in real time see its
	// tokens expire and be refreshed.
	TokenLifetime time.Duration
	// OmitBlocks leaves out the rich_text blocks Slack adds to user messages. slack-go
	// decodes blocks slowly (most of its cost per page); benchmarks of code above it
	// may prefer to skip them. Default false: messages look as Slack sends them.
	OmitBlocks bool
}

// DefaultScopes are the scopes of the fake's bot token unless Options.Scopes is set:
// history and read for every conversation type, users:read and reactions:read.
var DefaultScopes = []string{
	"channels:history", "channels:read", "groups:history", "groups:read",
	"im:history", "im:read", "mpim:history", "mpim:read", "reactions:read", "users:read",
}

// Identity of the workspace (unless Options say otherwise) and of the token's bot.
const (
	defaultTeamID   = "T0SLACKPL"
	defaultTeamName = "slackpoll fake"
	defaultTeamURL  = "https://slackpoll-fake.slack.com/"
	botUserID       = "U0BOTSELF"
	botID           = "B0BOTSELF"
	botAppID        = "A0BOTSELF"
	botName         = "slackpoll"
	botToken        = "xoxb-1000000001-2000000002-sLaCkPoLlFaKeToKeN0000"
)

// identity is a Server's workspace identity, fixed at New.
type identity struct {
	teamID, teamName, teamURL, enterpriseID string
}

// Server is the fake Slack Web API. It is an http.Handler; its workspace state is
// changed through its methods, which are safe for concurrent use with requests.
type Server struct {
	opts Options
	now  func() time.Time
	id   identity

	mu       sync.Mutex
	users    map[string]*User
	bots     map[string]*Bot
	convs    map[string]*conv
	scopes   map[string]bool
	revoked  bool
	auth     auth
	lastKey  uint64
	rate     map[string][]time.Time // method (+"\x00"+foreign token) → accepted request times
	faults   []Fault
	faultP   float64
	faultKs  []FaultKind
	rng      *rand.Rand
	requests []Request
}

// New returns a Server with an empty workspace holding only the token's own bot (user
// BotUserID, bot BotID).
func New(opts Options) *Server {
	s := &Server{
		opts:  opts,
		now:   opts.Now,
		users: map[string]*User{},
		bots:  map[string]*Bot{},
		convs: map[string]*conv{},
		rate:  map[string][]time.Time{},
		rng:   rand.New(rand.NewPCG(uint64(opts.Seed), 0x51ac4f4ce)),
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.id = identity{teamID: defaultTeamID, teamName: defaultTeamName, teamURL: defaultTeamURL,
		enterpriseID: opts.EnterpriseID}
	if opts.TeamID != "" {
		s.id.teamID = opts.TeamID
		s.id.teamName = "workspace " + opts.TeamID
		s.id.teamURL = "https://" + strings.ToLower(opts.TeamID) + ".slack.com/"
	}
	if opts.TeamName != "" {
		s.id.teamName = opts.TeamName
	}
	s.auth.init(opts, s.id.teamID)
	s.scopes = map[string]bool{}
	scopes := opts.Scopes
	if scopes == nil {
		scopes = DefaultScopes
	}
	for _, sc := range scopes {
		s.scopes[sc] = true
	}
	s.users[botUserID] = &User{ID: botUserID, Name: botName, RealName: botName, IsBot: true}
	s.bots[botID] = &Bot{ID: botID, UserID: botUserID, Name: botName, AppID: botAppID}
	return s
}

// Token returns the current access token: the bot token ("xoxb-…"), or with rotation
// enabled the newest access token issued ("xoxe.xoxb-1-…"). It still answers after
// RevokeToken (the token is then refused).
func (s *Server) Token() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth.current
}

// BotUserID returns the token's bot user ID (auth.test user_id).
func (s *Server) BotUserID() string { return botUserID }

// BotID returns the token's bot ID (auth.test bot_id).
func (s *Server) BotID() string { return botID }

// TeamID returns the workspace ID (auth.test team_id).
func (s *Server) TeamID() string { return s.id.teamID }

// TeamName returns the workspace name (auth.test team).
func (s *Server) TeamName() string { return s.id.teamName }

// EnterpriseID returns the Enterprise Grid organisation of an org-wide install
// (auth.test enterprise_id), "" for a plain workspace install.
func (s *Server) EnterpriseID() string { return s.id.enterpriseID }

// Scopes returns the token's current scopes, sorted.
func (s *Server) Scopes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scopeList()
}

func (s *Server) scopeList() []string {
	out := make([]string, 0, len(s.scopes))
	for sc := range s.scopes {
		out = append(out, sc)
	}
	slices.Sort(out)
	return out
}

// scopeHeader is the X-OAuth-Scopes value: the scopes comma-separated.
func (s *Server) scopeHeader() string { return strings.Join(s.scopeList(), ",") }

// Client returns an *http.Client that reaches the Server in memory (Transport).
// Use it as slack.New(s.Token(), slack.OptionAPIURL("http://slack.fake/"),
// slack.OptionHTTPClient(s.Client())); any URL ending in "/" works.
func (s *Server) Client() *http.Client { return &http.Client{Transport: s.Transport()} }
