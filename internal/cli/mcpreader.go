package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/export"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/mcp"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
)

// mcpLockTimeout is how long `slackpoll mcp` waits for the store's lock before it
// asks the daemon: a daemon holds the lock for as long as it runs, so a request
// waits only when the daemon does not answer (the lock is then a short command's:
// track, once).
const mcpLockTimeout = time.Millisecond

// mcpOpener returns the MCP server's Options.Open for `slackpoll mcp`: per request,
// the store read-only, or the daemon's API while it holds the store (openStoreOrAPI,
// as the read commands choose). The store is opened and closed again for every
// request, so that `slackpoll mcp`, which an agent keeps running for hours, never
// keeps `slackpoll run` from starting.
func mcpOpener(cfg *config.Config) func(context.Context) (mcp.Reader, func(), error) {
	return func(ctx context.Context) (mcp.Reader, func(), error) {
		r, err := openStoreOrAPI(cfg, true, "slackpoll mcp", mcpLockTimeout, nil)
		if err == nil && r.api != nil && !r.api.healthy(ctx) {
			// Nobody answers: the lock is a short command's. Wait for it as the
			// read commands do; the API's error says what to do if it is not.
			r, err = openStoreOrAPI(cfg, true, "slackpoll mcp", readLockTimeout, nil)
		}
		if err != nil {
			return nil, nil, err
		}
		if r.api != nil {
			return &apiReader{c: r.api}, func() {}, nil
		}
		sr := &mcp.StoreReader{Store: r.store, Configured: cfg.Conversations, Interval: cfg.Tick.Interval.D(),
			Searcher: func(ctx context.Context, q projection.Query, f projection.Freshness) (projection.Page, error) {
				page, _, err := searchProjection(ctx, cfg, r.store, q, f)
				return page, err
			}}
		return sr, func() { _ = r.Close() }, nil // read-only: nothing to lose on close
	}
}

// healthy reports whether the daemon's API answers /healthz.
func (c *apiClient) healthy(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, apiDialTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// apiReader is mcp.Reader over the daemon's HTTP read API.
type apiReader struct {
	c *apiClient
}

func (a *apiReader) get(ctx context.Context, path string, v any) error {
	return a.c.doCtx(ctx, http.MethodGet, path, nil, v)
}

// Report implements mcp.Reader: GET /v1/status.
func (a *apiReader) Report(ctx context.Context) (rep status.Report, err error) {
	err = a.get(ctx, "/v1/status", &rep)
	return rep, err
}

// Timeline implements mcp.Reader: GET /v1/conversations/{id}/messages.
func (a *apiReader) Timeline(ctx context.Context, channel string, q export.TimelineQuery) ([]export.MessageLine, bool, error) {
	v := url.Values{"limit": {strconv.Itoa(q.Limit)}}
	if q.Oldest != "" {
		v.Set("oldest", string(q.Oldest))
	}
	if q.Latest != "" {
		v.Set("latest", string(q.Latest))
	}
	if q.NewestFirst {
		v.Set("order", "desc")
		if q.Before != "" {
			v.Set("cursor", httpapi.MessagesCursor(q.Before))
		}
	} else if q.After != "" {
		v.Set("cursor", httpapi.MessagesCursor(q.After))
	}
	var page struct {
		Items      []export.MessageLine `json:"items"`
		NextCursor string               `json:"next_cursor"`
	}
	err := a.get(ctx, "/v1/conversations/"+url.PathEscape(channel)+"/messages?"+v.Encode(), &page)
	if errors.Is(err, errAPINotFound) {
		return nil, false, fmt.Errorf("%w: %v", mcp.ErrNotFound, err)
	}
	return page.Items, page.NextCursor != "", err
}

// Message implements mcp.Reader: GET /v1/conversations/{id}/messages/{ts}.
func (a *apiReader) Message(ctx context.Context, ref rm.Ref) (export.MessageLine, bool, error) {
	var line export.MessageLine
	err := a.get(ctx, "/v1/conversations/"+url.PathEscape(ref.Channel)+"/messages/"+url.PathEscape(string(ref.TS)), &line)
	if errors.Is(err, errAPINotFound) {
		return line, false, nil
	}
	return line, err == nil, err
}

// Record implements mcp.Reader: GET /v1/records/{key}.
func (a *apiReader) Record(ctx context.Context, key string) (rm.Ref, bool, error) {
	var line export.MessageLine
	err := a.get(ctx, "/v1/records/"+url.PathEscape(key), &line)
	if errors.Is(err, errAPINotFound) {
		return rm.Ref{}, false, nil
	}
	return rm.Ref{Channel: line.Channel, TS: line.TS}, err == nil, err
}

// Changes implements mcp.Reader: GET /v1/changes; a 410 or 409 comes back as the
// feed's own error, with the bounds the API's body gives.
func (a *apiReader) Changes(ctx context.Context, after uint64, limit int, f rm.ChangeFilter) (changefeed.Page, error) {
	q := changefeed.FilterQuery(f)
	q.Set("after", strconv.FormatUint(after, 10))
	q.Set("limit", strconv.Itoa(limit))
	var p changefeed.Page
	err := a.get(ctx, "/v1/changes?"+q.Encode(), &p)
	var ae *apiError
	if errors.As(err, &ae) {
		var b struct {
			Oldest uint64 `json:"oldest"`
			Last   uint64 `json:"last"`
		}
		_ = json.Unmarshal(ae.body, &b) // best effort: the message stands on its own
		switch ae.code {
		case http.StatusGone:
			return changefeed.Page{Oldest: b.Oldest}, &changefeed.GoneError{After: after, Oldest: b.Oldest}
		case http.StatusConflict:
			return changefeed.Page{Last: b.Last}, &changefeed.AheadError{After: after, Last: b.Last}
		}
	}
	return p, err
}

// Search implements mcp.Reader: GET /v1/search, the exposed conversations as
// channel (or only the one asked for, which the server checked is exposed). A 400
// is the projection's bad query or cursor.
func (a *apiReader) Search(ctx context.Context, q projection.Query, _ projection.Freshness) (projection.Page, error) {
	var page projection.Page
	err := a.get(ctx, "/v1/search?"+searchValues(q).Encode(), &page)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.code == http.StatusBadRequest:
		return page, fmt.Errorf("%w: %s", projection.ErrBadQuery, ae.msg)
	case errors.As(err, &ae) && ae.code == http.StatusServiceUnavailable:
		return page, fmt.Errorf("%w (the daemon says: %s)", mcp.ErrNoSearch, ae.msg)
	}
	return page, err
}
