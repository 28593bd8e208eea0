package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/poller"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
)

// Credentials give the token a workspace's calls use now. Implementations never
// put the token in a String, error or log line.
type Credentials interface {
	Token() string
}

// Rotation is Credentials that refresh themselves before they expire (Slack's
// token rotation: 12-hour access tokens, single-use refresh tokens).
type Rotation interface {
	Credentials
	// Run refreshes before expiry until ctx ends.
	Run(ctx context.Context) error
	// Expired is called when a call met token_expired: refresh now, once. An error
	// means the workspace cannot go on until it gets new tokens.
	Expired(ctx context.Context) error
	// State is "active", or "refresh_failed" with Slack's error and what to do.
	State() (state, reason string)
}

// StaticToken is a token that does not rotate.
type StaticToken string

// Token returns the token.
func (t StaticToken) Token() string { return string(t) }

// String hides the token.
func (StaticToken) String() string { return "[redacted]" }

// Spec is a workspace to run.
type Spec struct {
	// TeamID names the workspace and its store file (<dir>/<team_id>.db). Empty only
	// for the one-workspace config (StorePath set): the team is then auth.test's.
	TeamID string
	// EnterpriseID is the org of an org-wide install (Enterprise Grid), else "".
	EnterpriseID string
	// Source is SourceConfig or SourceAPI.
	Source      string
	Credentials Credentials
	// Conversations and Discover are what to poll, as the config's keys of those
	// names.
	Conversations []string
	Discover      bool
	// Paused registers the workspace without polling it.
	Paused bool
	// StorePath overrides <dir>/<team_id>.db (the one-workspace config's store.path).
	StorePath string
}

// Unit is one running workspace: its store, client, poller and feed notifier. Its
// methods are safe for concurrent use.
type Unit struct {
	spec  Spec
	path  string
	log   *slog.Logger
	store *boltstore.Store
	model *projection.Watched
	src   *slackapi.Client
	poll  *poller.Poller
	feed  *changefeed.Notifier

	mu     sync.Mutex
	state  State
	reason string
	team   string // TeamID, or auth.test's for the one-workspace config
	last   *LastTick

	cancel context.CancelFunc
	done   chan struct{}
}

// Spec returns what the unit was started with.
func (u *Unit) Spec() Spec { return u.spec }

// TeamID is the workspace's team_id: the Spec's, or, for the one-workspace config,
// auth.test's once known ("" before).
func (u *Unit) TeamID() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.team
}

// Store is the workspace's store; nil when it could not be opened (Damaged).
func (u *Unit) Store() *boltstore.Store { return u.store }

// Model is the store as the poller writes it: watched, so that a SQL projection
// sees every commit.
func (u *Unit) Model() *projection.Watched { return u.model }

// Source is the workspace's Slack client.
func (u *Unit) Source() *slackapi.Client { return u.src }

// Poller is the workspace's poller.
func (u *Unit) Poller() *poller.Poller { return u.poll }

// Notifier wakes long polls of this workspace's change feed.
func (u *Unit) Notifier() *changefeed.Notifier { return u.feed }

// Log is the workspace's logger (every line carries its team_id).
func (u *Unit) Log() *slog.Logger { return u.log }

// Status is the workspace as listed.
func (u *Unit) Status() Status {
	u.mu.Lock()
	st := Status{
		TeamID: u.team, EnterpriseID: u.spec.EnterpriseID, Source: u.spec.Source,
		State: u.state, Reason: u.reason, Store: u.path, LastTick: u.last,
	}
	u.mu.Unlock()
	if rot, ok := u.spec.Credentials.(Rotation); ok {
		st.Rotating = true
		if st.State == Active {
			if s, why := rot.State(); s == string(RefreshFailed) {
				st.State, st.Reason = RefreshFailed, why
			}
		}
	}
	return st
}

// set records a state other than Active, once: the first cause is the one to fix.
func (u *Unit) set(s State, reason string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.state != Active {
		return
	}
	u.state, u.reason = s, reason
	u.log.Error("workspace stopped", "state", string(s), "reason", reason)
}

func (u *Unit) onTick(s rm.TickSummary) {
	lt := lastTick(s)
	u.mu.Lock()
	u.last = lt
	u.mu.Unlock()
}

// run polls until ctx ends or the workspace meets what no tick can fix.
func (u *Unit) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	rot, rotating := u.spec.Credentials.(Rotation)
	if rotating {
		wg.Go(func() {
			if err := rot.Run(ctx); err != nil && ctx.Err() == nil {
				u.log.Error("token rotation stopped", "err", err)
			}
		})
	}
	// A store that fails a transaction anywhere (a tick, a request, a delivery)
	// stops this workspace only.
	store := u.store
	go func() {
		select {
		case <-store.Failed():
			u.set(Damaged, fmt.Sprintf("the store failed: %v (restore a backup, or purge the workspace)", store.Err()))
			u.cancel()
		case <-ctx.Done():
		}
	}()
	if !u.verify(ctx) {
		return
	}
	for {
		err := u.poll.Run(ctx)
		if ctx.Err() != nil || err == nil {
			return
		}
		code := slackCode(err)
		switch {
		case errors.Is(err, poller.ErrTokenRejected) && code == "token_expired" && rotating:
			if rerr := rot.Expired(ctx); rerr != nil {
				if ctx.Err() == nil {
					u.set(RefreshFailed, rerr.Error())
				}
				return
			}
			u.log.Info("token expired: refreshed, polling goes on")
		case errors.Is(err, poller.ErrTokenRejected):
			u.set(TokenRejected, tokenReason(code))
			return
		default:
			u.set(Damaged, err.Error())
			return
		}
	}
}

// verify checks once that the token is the workspace's (auth.test): a token of
// another team would write that team's messages into this team's store.
func (u *Unit) verify(ctx context.Context) bool {
	id, err := u.src.AuthTest(ctx)
	switch {
	case ctx.Err() != nil:
		return false
	case err != nil && rm.ClassOf(err) == rm.ClassToken && slackCode(err) != "token_expired":
		u.set(TokenRejected, tokenReason(slackCode(err)))
		return false
	case err != nil:
		// Slack unreachable, or an expired token the poller's first tick refreshes:
		// the ticks retry it as they retry any call.
		u.log.Warn("auth.test failed; the first tick tries again", "err", err)
		return true
	}
	if u.spec.TeamID != "" && id.TeamID != u.spec.TeamID {
		u.set(TokenRejected, fmt.Sprintf("the token belongs to team %s, not %s: give this workspace its own token", id.TeamID, u.spec.TeamID))
		return false
	}
	u.mu.Lock()
	u.team = id.TeamID
	u.mu.Unlock()
	return true
}

// slackCode is Slack's error code in err, if any.
func slackCode(err error) string {
	var ae *rm.APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

// tokenReason says what a rejected token means and what to do.
func tokenReason(code string) string {
	switch code {
	case "token_expired":
		return "token_expired: the token expired and has no refresh token here; PUT a new token pair (bot_token and refresh_token)"
	case "":
		return "Slack rejected the token; PUT a new token"
	}
	return code + ": Slack rejected the token (the app was most likely uninstalled from this workspace); PUT a new token after a re-install, or DELETE ?purge=true to remove what is kept of it"
}
