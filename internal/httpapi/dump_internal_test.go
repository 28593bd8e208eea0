package httpapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// goneClient is a ResponseWriter whose client hung up: every write fails.
type goneClient struct{ h http.Header }

func (g *goneClient) Header() http.Header       { return g.h }
func (g *goneClient) WriteHeader(int)           {}
func (g *goneClient) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// `slackpoll export | head` closes the stream early: that is the client's choice, not
// a failure of the daemon, so nothing is logged as an error and nothing panics.
func TestStreamToAClientThatWentAwayIsNoError(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	a := &api{store: f.Store, configured: f.Configured, log: log, spooler: spooler{log: log}}
	for name, h := range map[string]http.HandlerFunc{"export": a.export, "backup": a.backup} {
		h(&goneClient{h: http.Header{}}, httptest.NewRequest(http.MethodGet, "/v1/"+name, nil))
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a client that went away was logged as an error:\n%s", logs.String())
	}
}
