package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/export"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
)

// Reader is where the server reads the model: StoreReader, or (in `slackpoll mcp`
// while the daemon holds the store) the daemon's HTTP API. Every method answers from
// one consistent read (one transaction, or one API request).
type Reader interface {
	// Report is the status report without the feed and the outbox
	// (status.BuildCoverage): the conversations with their types, the team, the
	// coverage and the last tick.
	Report(ctx context.Context) (status.Report, error)
	// Timeline returns a page of channel's timeline as export lines (thread parents
	// with their replies) and whether more follow (readmodel.TimelineLines). A
	// conversation the model does not know fails with ErrNotFound.
	Timeline(ctx context.Context, channel string, q export.TimelineQuery) ([]export.MessageLine, bool, error)
	// Message returns the line of one stored message: a thread parent with its
	// replies, a reply on its own. ok is false when it is not stored.
	Message(ctx context.Context, ref rm.Ref) (line export.MessageLine, ok bool, err error)
	// Record returns the message a record key is attached to; ok is false when none
	// is.
	Record(ctx context.Context, key string) (ref rm.Ref, ok bool, err error)
	// Changes returns up to limit changes after the seq after that pass f
	// (changefeed.Read), with the feed's bounds. It fails with a
	// *changefeed.GoneError or *changefeed.AheadError as Read does, with the page's
	// bounds set.
	Changes(ctx context.Context, after uint64, limit int, f rm.ChangeFilter) (changefeed.Page, error)
	// Search searches the SQL projection (projection.Target.Search), each hit's
	// freshness from f. It fails with ErrNoSearch when there is no projection, and
	// with an error matching projection.ErrBadQuery or ErrBadCursor for a query or
	// cursor that cannot be searched.
	Search(ctx context.Context, q projection.Query, f projection.Freshness) (projection.Page, error)
}

// ErrNotFound is matched by the errors of a read of something the model does not
// hold.
var ErrNotFound = errors.New("not found")

// StoreReader reads the store directly: in the daemon, and in `slackpoll mcp` when
// no daemon holds the store.
type StoreReader struct {
	Store rm.Store
	// Configured are the configured conversations (listed as pending until read);
	// CurrentConfigured, if set, overrides it with those configured now (a SIGHUP
	// reload changes them in the daemon).
	Configured        []string
	CurrentConfigured func() []string
	// Interval is tick.interval, for the staleness figures.
	Interval time.Duration
	// DaemonRunning is true in the daemon (status.Report.DaemonRunning).
	DaemonRunning bool
	// Now is the clock of the report; nil is time.Now.
	Now func() time.Time
	// Searcher searches the SQL projection: the daemon's projection.Runner, or the
	// projection's database opened read-only. Nil, or an error matching
	// projection.ErrNoProjection (none open, or its file not made yet): Search fails
	// with ErrNoSearch.
	Searcher func(ctx context.Context, q projection.Query, f projection.Freshness) (projection.Page, error)
}

func (r *StoreReader) configured() []string {
	if r.CurrentConfigured != nil {
		return r.CurrentConfigured()
	}
	return r.Configured
}

func (r *StoreReader) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Report implements Reader.
func (r *StoreReader) Report(ctx context.Context) (rep status.Report, err error) {
	err = r.Store.View(func(tx rm.Tx) error {
		rep, err = status.BuildCoverage(tx, status.Input{
			Configured: r.configured(), Interval: r.Interval, Now: r.now(), DaemonRunning: r.DaemonRunning,
		})
		return err
	})
	return rep, err
}

// Timeline implements Reader.
func (r *StoreReader) Timeline(ctx context.Context, channel string, q export.TimelineQuery) (lines []export.MessageLine, more bool, err error) {
	err = r.Store.View(func(tx rm.Tx) error {
		if ok, err := export.KnownConversation(tx, r.configured(), channel); err != nil || !ok {
			if err == nil {
				err = ErrNotFound
			}
			return err
		}
		lines, more, err = export.TimelineLines(tx, channel, q)
		return err
	})
	return lines, more, err
}

// Message implements Reader.
func (r *StoreReader) Message(ctx context.Context, ref rm.Ref) (export.MessageLine, bool, error) {
	return export.MessageLineAt(r.Store, ref)
}

// Record implements Reader.
func (r *StoreReader) Record(ctx context.Context, key string) (ref rm.Ref, ok bool, err error) {
	err = r.Store.View(func(tx rm.Tx) error {
		ref, ok, err = tx.Record(key)
		return err
	})
	return ref, ok, err
}

// Changes implements Reader.
func (r *StoreReader) Changes(ctx context.Context, after uint64, limit int, f rm.ChangeFilter) (p changefeed.Page, err error) {
	err = r.Store.View(func(tx rm.Tx) error {
		p, err = changefeed.Read(tx, after, limit, f)
		return err
	})
	return p, err
}

// Search implements Reader.
func (r *StoreReader) Search(ctx context.Context, q projection.Query, f projection.Freshness) (projection.Page, error) {
	if r.Searcher == nil {
		return projection.Page{}, ErrNoSearch
	}
	page, err := r.Searcher(ctx, q, f)
	if errors.Is(err, projection.ErrNoProjection) {
		err = fmt.Errorf("%w: %v", ErrNoSearch, err)
	}
	return page, err
}
