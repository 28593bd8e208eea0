package workspace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"sync"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/poller"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
)

// Options configure a Supervisor.
type Options struct {
	// Dir holds the store files, <Dir>/<team_id>.db (store.dir).
	Dir string
	// Store is the template of every store's options.
	Store boltstore.Options
	// Slack is the template of every workspace's client: Token, TokenSource and
	// Pacing are set per workspace (its credentials, its store). Share one
	// HTTPClient: its connections are reused across workspaces.
	Slack slackapi.Options
	// Poller is the template of every workspace's poller: Conversations, Discover,
	// ClockSkew, OnTick and OnChanges are set per workspace (OnTick and OnChanges
	// below get the workspace's).
	Poller poller.Config
	// Logger's lines of a workspace carry its team_id.
	Logger *slog.Logger
	// OnTick, if set, gets every workspace's tick summaries (metrics).
	OnTick func(u *Unit, s rm.TickSummary)
	// OnChanges, if set, is called after a workspace's commit appended changes to
	// its feed, with the last seq (the unit's Notifier is published first).
	OnChanges func(u *Unit, last uint64)
	// Attach, if set, starts what runs beside a workspace's poller (its webhook
	// deliveries, feed retention, SQL projection) once its store is open; the
	// returned stop is called when the workspace stops, before its store closes.
	Attach func(ctx context.Context, u *Unit) (stop func())
}

// Supervisor runs workspaces, each on its own goroutines. Its methods are safe for
// concurrent use.
type Supervisor struct {
	ctx  context.Context
	opts Options

	mu     sync.Mutex
	units  map[string]*Unit // by Spec.TeamID ("" for the one-workspace config)
	closed bool
}

// New returns a Supervisor whose workspaces run until ctx ends or Close.
func New(ctx context.Context, opts Options) *Supervisor {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Supervisor{ctx: ctx, opts: opts, units: map[string]*Unit{}}
}

// teamIDPattern is a Slack team ID (T… or, for an org-wide install, E…): it names
// a store file, so nothing else may pass.
var teamIDPattern = regexp.MustCompile(`^[TE][A-Z0-9]{2,}$`)

// ValidTeamID reports whether id looks like a Slack team ID (T or E, then
// uppercase letters and digits).
func ValidTeamID(id string) bool { return teamIDPattern.MatchString(id) }

// StorePath is the store file of a workspace in dir.
func StorePath(dir, teamID string) string { return filepath.Join(dir, teamID+".db") }

// Start runs spec, replacing (stopping first) a workspace of the same team_id. A
// store that cannot be opened is not an error of Start: the workspace is listed
// Damaged with the reason, and the others go on. The error is for a spec that
// cannot run at all (a bad team_id, a stopped supervisor).
func (s *Supervisor) Start(spec Spec) (*Unit, error) {
	if spec.TeamID != "" && !ValidTeamID(spec.TeamID) {
		return nil, fmt.Errorf("team_id %q: want a Slack team ID (T or E, then uppercase letters and digits)", spec.TeamID)
	}
	if spec.TeamID == "" && spec.StorePath == "" {
		return nil, errors.New("workspace without team_id needs a store path")
	}
	if spec.Credentials == nil {
		return nil, fmt.Errorf("workspace %s has no token", spec.TeamID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ctx.Err() != nil {
		return nil, errors.New("the daemon is stopping")
	}
	if old := s.units[spec.TeamID]; old != nil {
		if err := old.stop(); err != nil {
			// The replaced store's last sync: the new unit reopens the file, and the
			// failure is the operator's to see.
			old.log.Error("replacing the workspace: closing its store failed", "err", err)
		}
	}
	u := s.open(spec)
	s.units[spec.TeamID] = u
	return u, nil
}

// open builds the unit of spec and starts it, or returns it Damaged or Paused.
func (s *Supervisor) open(spec Spec) *Unit {
	path := spec.StorePath
	if path == "" {
		path = StorePath(s.opts.Dir, spec.TeamID)
	}
	log := s.opts.Logger
	if spec.TeamID != "" {
		log = log.With("team_id", spec.TeamID)
	}
	u := &Unit{spec: spec, path: path, log: log, state: Active, team: spec.TeamID, done: make(chan struct{})}
	if spec.Paused {
		u.state, u.reason = Paused, "paused: registered, not polled"
		close(u.done)
		return u
	}
	so := s.opts.Store
	so.Logger = log
	store, err := boltstore.Open(path, so)
	if err != nil {
		u.state, u.reason = Damaged, fmt.Sprintf("opening the store: %v", err)
		log.Error("workspace not started", "err", err)
		close(u.done)
		return u
	}
	u.store, u.model, u.feed = store, projection.Watch(store), &changefeed.Notifier{}
	sc := s.opts.Slack
	// Every call reads the token of that moment: a rotated token takes effect at
	// the next call, with the limiters and pacing state kept.
	sc.Token, sc.TokenSource, sc.Pacing, sc.Logger = "", spec.Credentials.Token, slackapi.StorePacing(store), log
	if src, err := slackapi.New(sc); err != nil {
		u.state, u.reason = Damaged, fmt.Sprintf("building the Slack client: %v", err)
		_ = store.Close() // the configuration error is the one to report
		u.store = nil
		close(u.done)
		return u
	} else {
		u.src = src
	}
	pc := s.opts.Poller
	pc.Conversations, pc.Discover, pc.Logger = slices.Clone(spec.Conversations), spec.Discover, log
	pc.ClockSkew = u.src.ClockSkew
	pc.OnTick = func(t rm.TickSummary) {
		u.onTick(t)
		if s.opts.OnTick != nil {
			s.opts.OnTick(u, t)
		}
	}
	pc.OnChanges = func(last uint64) {
		u.feed.Publish(last)
		if s.opts.OnChanges != nil {
			s.opts.OnChanges(u, last)
		}
	}
	u.poll = poller.New(u.model, u.src, pc)
	ctx, cancel := context.WithCancel(s.ctx)
	u.cancel = cancel
	var detach func()
	if s.opts.Attach != nil {
		detach = s.opts.Attach(ctx, u)
	}
	go func() {
		// done closes after detach: the store closes only once nothing of the
		// workspace (a delivery, the projection) reads it any more.
		defer close(u.done)
		u.run(ctx)
		if detach != nil {
			detach()
		}
	}()
	return u
}

// stop ends the unit's goroutines and closes its store. Callers hold s.mu.
func (u *Unit) stop() error {
	if u.cancel != nil {
		u.cancel()
	}
	<-u.done
	if u.store == nil {
		return nil
	}
	// The field stays: a request that still holds the unit reads a closed store (an
	// error), never a nil one.
	if err := u.store.Close(); err != nil {
		return fmt.Errorf("closing store %s: %w", u.path, err)
	}
	return nil
}

// Unit returns the workspace of team_id. For the one-workspace config, its
// auth.test team_id finds it too.
func (s *Supervisor) Unit(teamID string) (*Unit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.units[teamID]; ok {
		return u, true
	}
	if u, ok := s.units[""]; ok && teamID != "" && u.TeamID() == teamID {
		return u, true
	}
	return nil, false
}

// Only returns the workspace when the supervisor runs exactly one: the one that
// the routes without a team_id address.
func (s *Supervisor) Only() (*Unit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.units) != 1 {
		return nil, false
	}
	for _, u := range s.units {
		return u, true
	}
	return nil, false
}

// Len is the number of workspaces.
func (s *Supervisor) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.units)
}

// Units returns the workspaces, by team_id.
func (s *Supervisor) Units() []*Unit {
	s.mu.Lock()
	out := make([]*Unit, 0, len(s.units))
	for _, u := range s.units {
		out = append(out, u)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *Unit) int { return cmp.Compare(a.TeamID(), b.TeamID()) })
	return out
}

// Statuses lists every workspace, by team_id.
func (s *Supervisor) Statuses() []Status {
	units := s.Units()
	out := make([]Status, len(units))
	for i, u := range units {
		out[i] = u.Status()
	}
	return out
}

// Stop ends a workspace and closes its store (kept on disk). It reports false
// when no workspace has that team_id.
func (s *Supervisor) Stop(teamID string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.units[teamID]
	if !ok {
		return false, nil
	}
	delete(s.units, teamID)
	return true, u.stop()
}

// Purge ends a workspace and removes its store file: its messages, change feed and
// outbox rows are in it and nowhere else in the daemon's files. A store of that
// team_id in Dir is removed even when no workspace of it runs (an earlier stop).
func (s *Supervisor) Purge(teamID string) error {
	if !ValidTeamID(teamID) {
		return fmt.Errorf("team_id %q: want a Slack team ID", teamID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := StorePath(s.opts.Dir, teamID)
	if u, ok := s.units[teamID]; ok {
		delete(s.units, teamID)
		if err := u.stop(); err != nil {
			return err
		}
		path = u.path
	}
	if err := boltstore.Remove(path); err != nil {
		return fmt.Errorf("purging %s: %w", teamID, err)
	}
	return nil
}

// Close stops every workspace and closes their stores; the error joins the stores'
// close errors. Start fails after it.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var wg sync.WaitGroup
	errs := make([]error, 0, len(s.units))
	var emu sync.Mutex
	for _, u := range s.units {
		if u.cancel != nil {
			u.cancel() // all at once: a slow shutdown of one does not delay the others' cancel
		}
	}
	for _, u := range s.units {
		wg.Go(func() {
			if err := u.stop(); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
