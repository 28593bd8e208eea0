package installs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slackpoll/slackpoll/internal/slackapi"
)

// TokenLifetime is the life of a rotating access token at Slack (expires_in 43200).
// A stored ExpiresAt further ahead than this is not trusted (a wrong clock wrote it):
// the token is refreshed at once.
const TokenLifetime = 12 * time.Hour

// States of a Rotator (State).
const (
	StateActive        = "active"
	StateRefreshFailed = "refresh_failed"
)

// Backoff of transient refresh failures: doubling from minBackoff to maxBackoff.
const (
	minBackoff = 5 * time.Second
	maxBackoff = 5 * time.Minute
)

// Store is what a Rotator reads and writes its installation through; *Registry
// implements it. Update must be one durable (fsynced) transaction.
type Store interface {
	Get(teamID string) (Installation, bool, error)
	Update(teamID string, fn func(in *Installation, found bool) error) error
}

// RotatorOptions configures NewRotator.
type RotatorOptions struct {
	TeamID string
	Store  Store
	// OAuth carries the app's client ID and secret and Slack's address.
	OAuth slackapi.OAuthOptions
	// Now reads the clock (default time.Now). Waits use time's timers, so a test
	// fakes both at once with testing/synctest.
	Now func() time.Time
	// Logger gets one line per refresh and per failure, never a token. nil discards.
	Logger *slog.Logger
}

// Steps of a refresh, named for the kill test's hook (see testHook).
const (
	stepBeforeIntent = "before_intent" // nothing written yet
	stepAfterIntent  = "after_intent"  // PendingRefresh durable, no request yet
	stepAnswered     = "answered"      // Slack's answer in memory, not written
	stepWritten      = "written"       // new tokens durable, old token still in use
	stepSwapped      = "swapped"       // new token in use
)

// testHook, set only by this package's tests, runs at each step of a refresh. nil
// in production: one nil check per step.
var testHook func(step string)

func hook(step string) {
	if testHook != nil {
		testHook(step)
	}
}

// Rotator keeps one installation's rotating access token fresh (see the package doc
// for the protocol). Token is cheap and safe to call from any goroutine; Run, Expired
// and Recover may run concurrently (refreshes are serialised).
type Rotator struct {
	team  string
	store Store
	oauth slackapi.OAuthOptions
	now   func() time.Time
	log   *slog.Logger

	token atomic.Pointer[string]

	refreshMu sync.Mutex // held across a whole refresh

	mu        sync.Mutex // guards the fields below; never held across I/O
	rotating  bool
	expiresAt time.Time     // of the token in use; monotonic when measured here
	lifetime  time.Duration // of the token in use
	gen       uint64        // bumped at each swap
	failed    bool          // a final refresh failure: Run stops refreshing
	reason    string
	pending   bool // the record carries a PendingRefresh (a crash inside a refresh)
}

// NewRotator reads the installation of opts.TeamID from opts.Store. It makes no
// request: Token answers the stored access token at once. Errors: the record is
// missing or does not open.
func NewRotator(opts RotatorOptions) (*Rotator, error) {
	if opts.Store == nil {
		return nil, errors.New("rotator: no store")
	}
	in, found, err := opts.Store.Get(opts.TeamID)
	if err != nil {
		return nil, fmt.Errorf("rotator %s: %w", opts.TeamID, err)
	}
	if !found {
		return nil, fmt.Errorf("rotator %s: no such installation", opts.TeamID)
	}
	r := &Rotator{team: opts.TeamID, store: opts.Store, oauth: opts.OAuth, now: opts.Now, log: opts.Logger}
	if r.now == nil {
		r.now = time.Now
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	tok := string(in.BotToken)
	r.token.Store(&tok)
	r.rotating = in.RefreshToken != "" && !in.ExpiresAt.IsZero()
	r.expiresAt = in.ExpiresAt
	r.lifetime = TokenLifetime
	r.pending = in.Refresh != nil
	return r, nil
}

// Token returns the access token to send now. Lock-free.
func (r *Rotator) Token() string { return *r.token.Load() }

// State returns StateActive or StateRefreshFailed, and the reason of a failure (or of
// refreshes being retried while the token still works), "" when all is well.
func (r *Rotator) State() (state, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed {
		return StateRefreshFailed, r.reason
	}
	return StateActive, r.reason
}

// ExpiresAt returns when the token in use expires; zero without rotation.
func (r *Rotator) ExpiresAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.expiresAt
}

// refreshDue returns when the next refresh is due: half the token's life before it
// expires, or now when the stored expiry is further ahead than a token can live.
func (r *Rotator) refreshDue(now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.expiresAt.Sub(now) > TokenLifetime {
		return now
	}
	return r.expiresAt.Add(-r.lifetime / 2)
}

// Recover finishes a refresh that a crash interrupted: when the record carries a
// PendingRefresh, the exchange is tried once more with the stored refresh token. If
// Slack had not processed it, this is the refresh, done. If it had (answered, and the
// answer was lost with the process), Slack answers invalid_refresh_token: the state
// becomes refresh_failed with the deadline, and the stored access token keeps working
// until then. No pending refresh: nothing to do, nil. A transient failure is returned
// (the pending record stays; Run tries again).
func (r *Rotator) Recover(ctx context.Context) error {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	r.mu.Lock()
	pending := r.pending
	r.mu.Unlock()
	if !pending {
		return nil
	}
	return r.refresh(ctx)
}

// Expired is what a caller does on token_expired (slackapi.IsTokenExpired): one
// refresh now, unless another refresh swapped the token since the caller's call
// began — then nil at once, and the caller calls again with Token. After a final
// failure it returns the failure without a request.
func (r *Rotator) Expired(ctx context.Context) error {
	r.mu.Lock()
	gen := r.gen
	r.mu.Unlock()
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	r.mu.Lock()
	changed, failed, reason, rotating := r.gen != gen, r.failed, r.reason, r.rotating
	r.mu.Unlock()
	switch {
	case changed:
		return nil
	case !rotating:
		return fmt.Errorf("installation %s: token expired but it has no refresh token", r.team)
	case failed:
		return errors.New(reason)
	}
	return r.refresh(ctx)
}

// Run keeps the token fresh until ctx ends: first Recover, then a refresh whenever
// half the token's life is left (6 h of Slack's 12), transient failures retried with
// backoff (5 s doubling to 5 min, or Slack's Retry-After) while the token still works.
// After a final failure (refresh_failed) it only waits for ctx: a new Rotator over new
// tokens (re-install, PUT) starts over. Without rotation it just waits. It returns nil
// when ctx ends.
func (r *Rotator) Run(ctx context.Context) error {
	r.mu.Lock()
	rotating := r.rotating
	r.mu.Unlock()
	if !rotating {
		<-ctx.Done()
		return nil
	}
	backoff := time.Duration(0)
	retry := func(err error) {
		backoff = min(max(2*backoff, minBackoff), maxBackoff)
		wait := backoff
		var oe *slackapi.OAuthError
		if errors.As(err, &oe) && oe.RetryAfter > wait {
			wait = oe.RetryAfter
		}
		r.log.Warn("token refresh failed; retrying", "team_id", r.team, "error", err, "wait", wait)
		_ = sleep(ctx, wait)
	}
	for ctx.Err() == nil {
		if r.isFailed() {
			<-ctx.Done()
			break
		}
		if err := r.Recover(ctx); err != nil {
			if !r.isFailed() {
				retry(err)
			}
			continue
		}
		now := r.now()
		if due := r.refreshDue(now); due.After(now) {
			// Woken early or late, the loop looks again: Expired may have refreshed.
			_ = sleep(ctx, due.Sub(now))
			continue
		}
		r.refreshMu.Lock()
		err := r.refresh(ctx)
		r.refreshMu.Unlock()
		if err != nil && ctx.Err() == nil && !r.isFailed() {
			retry(err)
			continue
		}
		backoff = 0
	}
	return nil
}

func (r *Rotator) isFailed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// errNoRotation is refresh's answer for a record without a refresh token.
var errNoRotation = errors.New("the installation has no refresh token")

// refresh runs the write-ahead protocol once (caller holds refreshMu):
//
//  1. one transaction records PendingRefresh{StartedAt, Of: the refresh token};
//  2. oauth.v2.access;
//  3. on the answer, nothing else first: one transaction stores the new tokens and
//     ExpiresAt and clears PendingRefresh;
//  4. the new token replaces the old in memory.
func (r *Rotator) refresh(ctx context.Context) error {
	hook(stepBeforeIntent)
	var spend Secret
	var current Installation
	err := r.store.Update(r.team, func(in *Installation, found bool) error {
		if !found {
			return errors.New("the installation was removed")
		}
		if in.RefreshToken == "" {
			return errNoRotation
		}
		spend = in.RefreshToken
		in.Refresh = &PendingRefresh{StartedAt: r.now(), Of: spend}
		current = *in
		return nil
	})
	if err != nil {
		return fmt.Errorf("installation %s: recording the refresh: %w", r.team, err)
	}
	r.mu.Lock()
	recovering := r.pending
	r.pending = true
	r.mu.Unlock()
	hook(stepAfterIntent)

	sent := r.now()
	res, err := slackapi.RefreshToken(ctx, r.oauth, string(spend))
	hook(stepAnswered)
	if err != nil {
		return r.refreshFailed(err, current.ExpiresAt, recovering)
	}
	// Measured from before the request went out: the token cannot expire earlier
	// than Slack's clock says, and sent's monotonic reading is immune to clock steps.
	expires := sent.Add(res.ExpiresIn)
	err = r.store.Update(r.team, func(in *Installation, found bool) error {
		if !found {
			return errors.New("the installation was removed")
		}
		in.BotToken, in.RefreshToken = Secret(res.AccessToken), Secret(res.RefreshToken)
		in.ExpiresAt = expires.Round(0).UTC()
		in.Refresh = nil
		return nil
	})
	hook(stepWritten)
	// Swapped even when the write failed: the old refresh token is spent, and the new
	// access token is the one that will keep working longest.
	tok := res.AccessToken
	r.token.Store(&tok)
	r.mu.Lock()
	r.expiresAt, r.lifetime = expires, res.ExpiresIn
	r.gen++
	r.failed, r.reason = false, ""
	if err == nil {
		r.pending = false
	} else {
		// Nothing will bring these tokens back after a restart: say so loudly.
		r.failed = true
		r.reason = fmt.Sprintf("new tokens could not be stored (%v): the token in use works until %s; re-install the app in this workspace or PUT new tokens before then",
			err, expires.UTC().Format(time.RFC3339))
	}
	r.mu.Unlock()
	hook(stepSwapped)
	if err != nil {
		r.log.Error("token refreshed but not stored", "team_id", r.team, "error", err)
		return fmt.Errorf("installation %s: storing the new tokens: %w", r.team, err)
	}
	r.log.Info("token refreshed", "team_id", r.team, "expires_at", expires.UTC())
	return nil
}

// refreshFailed records a failed exchange and returns it. A Slack error code is final
// for this refresh token: refresh_failed with what to do and by when (the access
// token in use works until expiresAt). A transient failure leaves the state active;
// the pending record stays, since Slack may have processed the request.
func (r *Rotator) refreshFailed(err error, expiresAt time.Time, recovering bool) error {
	var oe *slackapi.OAuthError
	if !errors.As(err, &oe) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		// Stopped, not failed: the pending record stays, as after a crash.
		return err
	}
	if oe == nil || oe.Transient {
		r.mu.Lock()
		r.reason = fmt.Sprintf("token refresh retrying after a transient failure: %v", err)
		r.mu.Unlock()
		return fmt.Errorf("installation %s: %w", r.team, err)
	}
	deadline := expiresAt.UTC().Format(time.RFC3339)
	var why string
	switch {
	case oe.Code == slackapi.CodeInvalidRefreshToken && recovering:
		why = "a refresh was interrupted after Slack answered it, and the answer was lost: Slack spent the refresh token (invalid_refresh_token)"
	case oe.Code == slackapi.CodeInvalidRefreshToken:
		why = "Slack refused the refresh token (invalid_refresh_token: spent, or the app was uninstalled)"
	case oe.Code == "invalid_client_id" || oe.Code == "bad_client_secret":
		why = fmt.Sprintf("Slack refused the app's credentials (%s): check the client id and secret", oe.Code)
	default:
		why = fmt.Sprintf("Slack refused the refresh (%s)", oe.Code)
	}
	reason := fmt.Sprintf("%s; the access token in use works until %s: re-install the app in this workspace or PUT new tokens before %s", why, deadline, deadline)
	// Slack answered, so nothing is in flight any more: the marker goes.
	cerr := r.store.Update(r.team, func(in *Installation, found bool) error {
		if found {
			in.Refresh = nil
		}
		return nil
	})
	r.mu.Lock()
	r.failed, r.reason = true, reason
	r.pending = cerr != nil
	r.mu.Unlock()
	r.log.Error("token refresh failed", "team_id", r.team, "code", oe.Code, "expires_at", expiresAt)
	return fmt.Errorf("installation %s: %s", r.team, reason)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
