package mcp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackpoll/slackpoll/internal/mcp"
)

// headers sets fixed headers on every request.
type headers struct {
	set  map[string]string
	host string
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header.Set(k, v)
	}
	if h.host != "" {
		r.Host = h.host
	}
	return h.next.RoundTrip(r)
}

// /mcp is behind the read API's checks: the SDK's client is refused without the
// token (401), from a foreign Host (DNS rebinding) or a foreign Origin (a web page)
// (403), and served with the token.
func TestHTTPTransportIsBehindTheAPIsChecks(t *testing.T) {
	e := newEnv(t, mcp.Policy{})
	for _, tc := range []struct {
		name string
		h    headers
		want string // the refusal the client reports (401 Unauthorized, 403 Forbidden); "" connects
	}{
		{"no token", headers{}, "Unauthorized"},
		{"wrong token", headers{set: map[string]string{"Authorization": "Bearer nope"}}, "Unauthorized"},
		{"foreign Host", headers{set: map[string]string{"Authorization": "Bearer " + testToken}, host: "evil.example"}, "Forbidden"},
		{"foreign Origin", headers{set: map[string]string{"Authorization": "Bearer " + testToken, "Origin": "http://evil.example"}}, "Forbidden"},
		{"a web page of another site", headers{set: map[string]string{"Authorization": "Bearer " + testToken, "Sec-Fetch-Site": "cross-site"}}, "Forbidden"},
		{"token", headers{set: map[string]string{"Authorization": "Bearer " + testToken}}, ""},
	} {
		tc.h.next = http.DefaultTransport
		client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{
			Endpoint: e.api.URL + "/mcp", HTTPClient: &http.Client{Transport: tc.h},
		}, nil)
		if err == nil {
			_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "freshness"})
			_ = cs.Close()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want served", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want refused with %s", tc.name, err, tc.want)
		}
	}

	// The same, status by status, for a plain HTTP client.
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	for _, tc := range []struct {
		name, method string
		h            map[string]string
		host         string
		want         int
	}{
		{"no token", http.MethodPost, nil, "", http.StatusUnauthorized},
		{"foreign Host", http.MethodPost, map[string]string{"Authorization": "Bearer " + testToken}, "evil.example", http.StatusForbidden},
		{"foreign Origin", http.MethodPost, map[string]string{"Authorization": "Bearer " + testToken, "Origin": "http://evil.example"}, "", http.StatusForbidden},
		{"not JSON", http.MethodPost, map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "text/plain"}, "", http.StatusUnsupportedMediaType},
		{"GET: stateless, no stream", http.MethodGet, map[string]string{"Authorization": "Bearer " + testToken}, "", http.StatusMethodNotAllowed},
		{"initialize", http.MethodPost, map[string]string{"Authorization": "Bearer " + testToken}, "", http.StatusOK},
	} {
		req, err := http.NewRequest(tc.method, e.api.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range tc.h {
			req.Header.Set(k, v)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %s /mcp = %d, want %d", tc.name, tc.method, resp.StatusCode, tc.want)
		}
	}
}
