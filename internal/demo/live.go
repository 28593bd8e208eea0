package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/slackpoll/slackpoll/internal/ctxsleep"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// LiveOptions configure NewLive: a simulated workspace served over HTTP for as long
// as its caller wants, changing all the time, for a real `slackpoll run` to poll.
type LiveOptions struct {
	Seed int64
	Size slackfake.GenSize
	// RatePerMinute is the fake's limit per method (HTTP 429 with Retry-After above
	// it); nil or a missing method is unlimited.
	RatePerMinute map[string]int
	// PageCap caps the fake's page sizes (15 for a non-Marketplace app); 0 = none.
	PageCap int
	// ChangeEvery is the pause between two changes of the workspace (default 2s).
	ChangeEvery time.Duration
	// FaultRate is the probability that a request gets an injected fault (the kinds
	// of the self-checking demo); 0 = none.
	FaultRate float64
	// Out receives one line per change ("reply C0… 1764612345.000100"); nil discards.
	Out io.Writer
}

// Live is a generated workspace, served by Serve.
type Live struct {
	o    LiveOptions
	fake *slackfake.Server
}

// NewLive generates the workspace of o.Seed and o.Size (default slackfake.Small).
func NewLive(o LiveOptions) *Live {
	if o.Size == (slackfake.GenSize{}) {
		o.Size = slackfake.Small
	}
	if o.ChangeEvery <= 0 {
		o.ChangeEvery = 2 * time.Second
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	fake := slackfake.New(slackfake.Options{
		PageCap: o.PageCap, RatePerMinute: o.RatePerMinute, ReactionUsersCap: 8, Seed: o.Seed,
	})
	slackfake.Generate(fake, o.Seed, o.Size)
	return &Live{o: o, fake: fake}
}

// Token is the bot token the fake accepts.
func (l *Live) Token() string { return l.fake.Token() }

// ConversationIDs are every conversation of the workspace, the ones the bot cannot
// read included (they show their status: not_in_channel, channel_not_found, …).
func (l *Live) ConversationIDs() []string { return l.fake.ConversationIDs() }

// Messages returns up to n top-level messages of readable conversations posted
// before cut, spread over the workspace: messages worth `slackpoll track`, since a
// head read only reads the bulk window.
func (l *Live) Messages(before time.Time, n int) []rm.Ref {
	truth := l.fake.Truth()
	ok := map[string]bool{}
	for _, c := range truth.Conversations {
		ok[c.ID] = c.Status == rm.StatusOK
	}
	cut := rm.TSFromUnix(before.Unix())
	var older []rm.Ref
	for _, m := range truth.Messages {
		if ok[m.Channel] && m.TS.Before(cut) && m.Subtype == "" {
			older = append(older, rm.Ref{Channel: m.Channel, TS: m.TS})
		}
	}
	if n <= 0 || len(older) == 0 {
		return nil
	}
	var out []rm.Ref
	step := max(1, len(older)/n)
	for i := 0; i < len(older) && len(out) < n; i += step {
		out = append(out, older[i])
	}
	return slices.Clip(out)
}

// Serve serves the Slack Web API on ln (at /api/<method>, like slack.com) and changes
// the workspace every ChangeEvery until ctx ends; then it shuts the server down and
// returns nil. A failing server is returned as an error.
func (l *Live) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: l.fake, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx) // the demo ends; a request cut short is of no consequence
	}()
	l.fake.SetFaultRate(demoFaults, l.o.FaultRate)
	mut := slackfake.NewMutator(l.fake, l.o.Seed)
	for {
		if err := ctxsleep.Sleep(ctx, l.o.ChangeEvery); err != nil {
			return nil
		}
		select {
		case err := <-served:
			if errors.Is(err, http.ErrServerClosed) {
				return nil
			}
			return fmt.Errorf("fake Slack stopped: %w", err)
		default:
		}
		fmt.Fprintln(l.o.Out, time.Now().Format("15:04:05"), mut.Step())
		// Nobody reads the request log of a live demo: keep it from growing for hours.
		l.fake.ResetRequests()
	}
}
