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

// Identity of the workspace and of the token's bot.
const (
	teamID    = "T0SLACKPL"
	teamName  = "slackpoll fake"
	teamURL   = "https://slackpoll-fake.slack.com/"
	botUserID = "U0BOTSELF"
	botID     = "B0BOTSELF"
	botAppID  = "A0BOTSELF"
	botName   = "slackpoll"
	botToken  = "xoxb-1000000001-2000000002-sLaCkPoLlFaKeToKeN0000"
)

// Server is the fake Slack Web API. It is an http.Handler; its workspace state is
// changed through its methods, which are safe for concurrent use with requests.
type Server struct {
	opts Options
	now  func() time.Time

	mu       sync.Mutex
	users    map[string]*User
	bots     map[string]*Bot
	convs    map[string]*conv
	scopes   map[string]bool
	revoked  bool
	lastKey  uint64
	rate     map[string][]time.Time // method+"\x00"+token → accepted request times
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

// Token returns the valid bot token ("xoxb-…").
func (s *Server) Token() string { return botToken }

// BotUserID returns the token's bot user ID (auth.test user_id).
func (s *Server) BotUserID() string { return botUserID }

// BotID returns the token's bot ID (auth.test bot_id).
func (s *Server) BotID() string { return botID }

// TeamID returns the workspace ID (auth.test team_id).
func (s *Server) TeamID() string { return teamID }

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
