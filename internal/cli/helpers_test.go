package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// cfgOpts are the config keys the read-command tests vary.
type cfgOpts struct {
	store  string
	listen string
	token  string
	apiURL string
	slack  string // slack.token, with apiURL
	convs  []string
	extra  string // more YAML
}

// writeConfig writes a config file into a temp dir and returns its path.
func writeConfig(t *testing.T, o cfgOpts) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "store:\n  path: %q\n", o.store)
	fmt.Fprintf(&b, "conversations: [%s]\n", strings.Join(o.convs, ", "))
	fmt.Fprintf(&b, "http:\n  listen: %q\n  token: %q\n", o.listen, o.token)
	if o.apiURL != "" {
		fmt.Fprintf(&b, "slack:\n  token: %q\n  api_url: %q\n  rates: {conversations.history: 6000, conversations.replies: 6000, conversations.info: 6000, users.info: 6000, auth.test: 6000, users.conversations: 6000}\n", o.slack, o.apiURL)
	}
	b.WriteString(o.extra)
	path := filepath.Join(t.TempDir(), "slackpoll.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runCLI runs the command line and returns the exit status, stdout and stderr.
func runCLI(ctx context.Context, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Main(ctx, args, Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }})
	return code, out.String(), errOut.String()
}

// daemonAPI serves the read API over the fixture's store, which the fixture keeps
// open read-write: to the CLI the store is locked exactly as by `slackpoll run`.
func daemonAPI(t *testing.T, f *readfixture.Fixture, token string) string {
	t.Helper()
	srv := httptest.NewServer(httpapi.New(httpapi.Options{
		Store: f.Store, Configured: f.Configured, Interval: readfixture.Interval, Token: token, Now: f.Clock.Now,
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// closedStore returns a fixture whose store is closed again, so the CLI opens it.
func closedStore(t *testing.T) *readfixture.Fixture {
	t.Helper()
	f := readfixture.New(t, readfixture.Options{})
	if err := f.Store.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

func wantContains(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}
