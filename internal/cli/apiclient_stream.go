package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"

	"github.com/slackpoll/slackpoll/internal/httpapi"
)

// stream GETs path from the daemon's API and copies the answer to w as it arrives,
// for answers as large as the store (GET /v1/export, GET /v1/backup). Unlike get, no
// timeout bounds the whole request, only the connection. A stream the daemon cut
// short is an error (the body ends before its length). The answer's header is
// returned with it.
func (c *apiClient) stream(path string, w io.Writer) (int64, http.Header, error) {
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Timeout: apiDialTimeout}).DialContext}}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, nil, fmt.Errorf("store %s is locked by another process (is \"slackpoll run\" running?), and the daemon's HTTP API at %s did not answer (%v): is http.listen the address the daemon listens on?",
			c.store, c.base, err)
	}
	defer func() { _ = resp.Body.Close() }() // read in full below
	if resp.StatusCode == http.StatusUnauthorized {
		return 0, nil, &apiError{resp.StatusCode, fmt.Sprintf("the daemon's HTTP API at %s refused the token: set http.token to the daemon's http.token", c.base), nil}
	}
	if resp.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10)) // the error body is best effort
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = resp.Status
		}
		if resp.StatusCode == http.StatusNotFound {
			e.Error += " (is the daemon an older slackpoll, without " + path + "?)"
		}
		return 0, nil, &apiError{resp.StatusCode, e.Error, data}
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, nil, fmt.Errorf("the daemon's HTTP API at %s cut the answer short after %d bytes: %w", c.base, n, err)
	}
	return n, resp.Header, nil
}

// undecodableOf returns the records an answer's Slackpoll-Undecodable-Records header
// names (GET /v1/export), nil when it has none.
func undecodableOf(h http.Header) ([]string, error) {
	v := h.Get(httpapi.UndecodableHeader)
	if v == "" {
		return nil, nil
	}
	var records []string
	if err := json.Unmarshal([]byte(v), &records); err != nil {
		return nil, fmt.Errorf("the daemon's answer names undecodable records this slackpoll cannot read (%v): %q", err, v)
	}
	return records, nil
}
