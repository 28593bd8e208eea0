package slackapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// A Slack API answer that redirects (307 keeps the POST body, token included) to
// another host is not followed: the other host never sees the token.
func TestRedirectToAnotherHostIsNotFollowed(t *testing.T) {
	var leaked atomic.Bool
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), testToken) || strings.Contains(r.Header.Get("Authorization"), testToken) {
			leaked.Store(true)
		}
		writeJSON(w, okPage("1.000001", ""))
	}))
	defer evil.Close()
	// "localhost" and "127.0.0.1" are different hosts to the client.
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, evilURL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer slack.Close()
	c, err := New(Options{Token: testToken, APIURL: slack.URL + "/api/", Rates: map[string]float64{readmodel.MethodHistory: 6000}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.History(bg, historyReq(""))
	if leaked.Load() {
		t.Fatal("the token was sent to the host the redirect named")
	}
	if err == nil {
		t.Error("a redirected call succeeded")
	} else if strings.Contains(err.Error(), testToken) {
		t.Errorf("error shows the token: %v", err)
	}
}
