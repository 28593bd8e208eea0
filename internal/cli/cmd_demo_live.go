package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	boltstore "github.com/slackpoll/slackpoll/internal/bolt"
	"github.com/slackpoll/slackpoll/internal/demo"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// demoLive are the flags of the explorable demo, `slackpoll demo --listen ADDR`.
type demoLive struct {
	listen   string // where the fake Slack serves
	api      string // http.listen of the config written for `run`
	dir      string // where the config (and so the store) goes
	profile  string // demoProfiles key
	every    time.Duration
	faults   float64
	messages int
}

func (d *demoLive) flags(fs *pflag.FlagSet) {
	fs.StringVar(&d.listen, "listen", "", "serve the simulated workspace on `ADDR` (host:port) for slackpoll run to poll, changing it until Ctrl-C: the explorable demo")
	fs.StringVar(&d.api, "api", "127.0.0.1:8089", "with --listen: http.listen (`ADDR`) of the config written for run: its read API and /metrics")
	fs.StringVar(&d.dir, "dir", "slackpoll-demo", "with --listen: the `DIR` of the config written for run (slackpoll.yaml) and of its store")
	fs.StringVar(&d.profile, "profile", "fast", "with --listen: rates the fake enforces and the config uses: fast (600 a minute, pages of 200), internal (50 a minute, 999 a page) or non_marketplace (1 a minute, 15 a page)")
	fs.DurationVar(&d.every, "every", 2*time.Second, "with --listen: time between two changes of the workspace")
	fs.Float64Var(&d.faults, "faults", 0, "with --listen: share of requests that get an injected fault (429, 5xx, reset, bad body), e.g. 0.02")
	fs.IntVar(&d.messages, "messages", slackfake.Small.Messages, "with --listen: messages in the generated workspace (8 conversations)")
}

// demoProfile is what the fake enforces and the written config asks for.
type demoProfile struct {
	rateProfile string             // slack.rate_profile
	rates       map[string]float64 // slack.rates overrides, requests per minute
	pageCap     int
}

func (d *demoLive) profileOf() (demoProfile, error) {
	switch d.profile {
	case "fast":
		r := map[string]float64{}
		for _, m := range rm.Methods() {
			r[m] = 600
		}
		return demoProfile{rateProfile: rm.ProfileInternal, rates: r, pageCap: 200}, nil
	case rm.ProfileInternal:
		return demoProfile{rateProfile: rm.ProfileInternal}, nil
	case rm.ProfileNonMarketplace:
		return demoProfile{rateProfile: rm.ProfileNonMarketplace, pageCap: 15}, nil
	}
	return demoProfile{}, usageErr("demo: --profile %q: want fast, internal or non_marketplace", d.profile)
}

// fakeRates are the fake's limits: the profile's rates with its overrides.
func (p demoProfile) fakeRates() map[string]int {
	r, _ := rm.ProfileRates(p.rateProfile)
	out := map[string]int{}
	for m, v := range r {
		if o, ok := p.rates[m]; ok {
			v = o
		}
		out[m] = max(1, int(v))
	}
	return out
}

// demoConfigMarker starts every config the demo writes: a config without it is not
// the demo's, and is never overwritten.
const demoConfigMarker = "# Written by `slackpoll demo --listen`"

// cmdDemoLive is `slackpoll demo --listen ADDR`: a generated workspace served over
// HTTP and changed every --every until Ctrl-C, and a config (in --dir) that points
// `slackpoll run` at it, so that status, show, export, track, the read API and
// /metrics can be tried from other terminals. The workspace is generated anew on
// every start, so the store of an earlier start is removed (unless a run holds it).
func cmdDemoLive(ctx context.Context, c *cmdCtx) error {
	d := c.live
	prof, err := d.profileOf()
	if err != nil {
		return err
	}
	if d.every <= 0 {
		return usageErr("demo: --every %s: want a positive duration such as 2s", d.every)
	}
	if d.faults < 0 || d.faults > 0.5 {
		return usageErr("demo: --faults %v: want a share from 0 to 0.5", d.faults)
	}
	if d.messages < 0 {
		return usageErr("demo: --messages %d: want 0 or more", d.messages)
	}
	if sameAddr(d.listen, d.api) {
		return usageErr("demo: --listen and --api are both %s: the fake Slack and the read API need a port each", d.listen)
	}
	dir, err := filepath.Abs(d.dir)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(dir, "slackpoll.yaml")
	storePath := filepath.Join(dir, "slackpoll.db")
	if err := checkDemoDir(cfgPath, storePath); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", d.listen)
	if err != nil {
		return fmt.Errorf("demo: --listen %s: %w (is another program using the port?)", d.listen, err)
	}
	defer func() { _ = ln.Close() }() // Serve closed it already, unless it never ran
	live := demo.NewLive(demo.LiveOptions{
		Seed: c.seed, Size: slackfake.GenSize{Conversations: slackfake.Small.Conversations, Messages: d.messages, Users: slackfake.Small.Users},
		RatePerMinute: prof.fakeRates(), PageCap: prof.pageCap, ChangeEvery: d.every, FaultRate: d.faults, Out: c.env.Stdout,
	})
	apiURL := "http://" + ln.Addr().String() + "/api/"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.WriteFile(cfgPath, demoConfig(live, apiURL, d.api, prof), 0o600); err != nil {
		return fmt.Errorf("demo: writing the config for run: %w", err)
	}
	printDemoGuide(c, live, ln.Addr().String(), cfgPath, d)
	return live.Serve(ctx, ln)
}

// sameAddr reports whether two host:port addresses name the same port on the same
// (or every) interface.
func sameAddr(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb || pa == "0" {
		return false
	}
	return ha == hb || ha == "" || hb == ""
}

// checkDemoDir refuses to overwrite a config the demo did not write, and removes the
// store of an earlier demo: its messages belong to a workspace generated at another
// time. A store held by a running `slackpoll run` is an error.
func checkDemoDir(cfgPath, storePath string) error {
	old, err := os.ReadFile(cfgPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("demo: %w", err)
	case !bytes.HasPrefix(old, []byte(demoConfigMarker)):
		return fmt.Errorf("demo: %s exists and was not written by the demo: choose another --dir", cfgPath)
	}
	if _, err := os.Stat(storePath); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	s, err := boltstore.Open(storePath, boltstore.Options{ReadOnly: true, LockTimeout: readLockTimeout})
	if errors.Is(err, boltstore.ErrLocked) {
		return fmt.Errorf("demo: %w: stop the `slackpoll run` of the last demo first (the workspace is generated anew)", err)
	}
	if err == nil {
		_ = s.Close() // read-only, nothing written
	}
	if err := os.Remove(storePath); err != nil {
		return fmt.Errorf("demo: removing the store of the last demo: %w", err)
	}
	// Its feed mark too: the new store's feed starts afresh, for a new workspace.
	if err := os.Remove(boltstore.MarkPath(storePath)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("demo: removing the feed mark of the last demo: %w", err)
	}
	return nil
}

// demoConfig is the config `slackpoll run` needs to poll the live demo.
func demoConfig(live *demo.Live, apiURL, listen string, p demoProfile) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, for its simulated workspace; rewritten\n", demoConfigMarker)
	b.WriteString("# on every start. For a real workspace, write your own (see config/slackpoll.yaml).\n")
	b.WriteString("slack:\n")
	b.WriteString("  # The fake's token: not a real Slack token.\n")
	fmt.Fprintf(&b, "  token: %s\n", live.Token())
	fmt.Fprintf(&b, "  api_url: %s\n", apiURL)
	fmt.Fprintf(&b, "  rate_profile: %s\n", p.rateProfile)
	if len(p.rates) > 0 {
		b.WriteString("  # The fake allows these rates, so that the demo moves quickly.\n  rates:\n")
		for _, m := range slices.Sorted(maps.Keys(p.rates)) {
			fmt.Fprintf(&b, "    %s: %g\n", m, p.rates[m])
		}
	}
	b.WriteString("store:\n  path: slackpoll.db   # next to this file\n")
	b.WriteString("# Every conversation of the workspace; the bot cannot read some of them, as in\n# a real one: `slackpoll status` says why.\n")
	fmt.Fprintf(&b, "conversations: [%s]\n", strings.Join(live.ConversationIDs(), ", "))
	b.WriteString("tick:\n  interval: 10s\n")
	fmt.Fprintf(&b, "http:\n  listen: %s\n", listen)
	return []byte(b.String())
}

// printDemoGuide tells the user what to run in the other terminals.
func printDemoGuide(c *cmdCtx, live *demo.Live, addr, cfgPath string, d demoLive) {
	w := c.env.Stdout
	prog := programName()
	fmt.Fprintf(w, "slackpoll demo: fake Slack workspace (seed %d, %d conversations) on http://%s/api/, profile %s\n",
		c.seed, len(live.ConversationIDs()), addr, d.profile)
	fmt.Fprintf(w, "wrote %s for `run` (store next to it, read API on %s)\n\n", cfgPath, d.api)
	fmt.Fprintf(w, "In a second terminal, poll it:\n  export SLACKPOLL_CONFIG=%s\n  %s run\n\n", cfgPath, prog)
	fmt.Fprintf(w, "In a third, explore (export SLACKPOLL_CONFIG there too):\n")
	fmt.Fprintf(w, "  %s status\n", prog)
	fmt.Fprintf(w, "  %s export | head\n", prog)
	older := live.Messages(time.Now().Add(-72*time.Hour), 2)
	if len(older) > 0 {
		fmt.Fprintf(w, "  %s track --record ticket-1 %s %s   # older than the 72h a head read covers\n", prog, older[0].Channel, older[0].TS)
		fmt.Fprintf(w, "  %s show --record ticket-1                  # after the next tick\n", prog)
	}
	fmt.Fprintf(w, "  %s show CHANNEL TS                           # any change printed below\n", prog)
	fmt.Fprintf(w, "  curl -s http://%s/v1/status\n", apiHost(d.api))
	fmt.Fprintf(w, "  curl -s http://%s/metrics | grep ^slackpoll_\n\n", apiHost(d.api))
	fmt.Fprintf(w, "Changing the workspace every %s until Ctrl-C:\n", d.every)
}

// apiHost is the host:port a local client dials for a listen address.
func apiHost(listen string) string { return strings.TrimPrefix(apiBaseURL(listen), "http://") }

// programName is how the user started slackpoll, for the commands the demo prints:
// "go run ./cmd/slackpoll" for a binary `go run` built in a temporary directory.
func programName() string {
	p := os.Args[0]
	if strings.Contains(p, "go-build") || strings.HasSuffix(p, ".test") {
		return "go run ./cmd/slackpoll"
	}
	return p
}
