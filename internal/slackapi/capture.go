package slackapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxBodyBytes caps a captured response body. A 999-message history page with blocks
// and files is a few MB; anything far larger is not a Slack API answer.
const maxBodyBytes = 64 << 20

// capture records the raw HTTP response of one attempt: slack-go decodes into its own
// types and keeps nothing raw, but we need the body to salvage a page with one
// undecodable message, and the Retry-After header when slack-go cannot parse it.
// One capture belongs to one attempt (it travels in the request context), so
// concurrent calls never share one.
type capture struct {
	got     bool // a response arrived
	status  int
	header  http.Header
	body    []byte
	arrived time.Time
	sent    time.Time // when this attempt's request went out, after pacing
}

type captureKey struct{}

func withCapture(ctx context.Context, c *capture) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

// captureDoer is the HTTP client handed to slack-go (slack.OptionHTTPClient). It reads
// the whole body inside Do — so a reset or timeout mid-body is an error of the attempt,
// not a truncated decode — records it in the request's capture, and gives slack-go an
// in-memory copy.
type captureDoer struct {
	client *http.Client
}

// Do implements slack-go's httpClient interface.
func (d captureDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	_ = resp.Body.Close() // fully read above
	if err != nil {
		return nil, fmt.Errorf("read %s response body: %w", req.URL.Path, err)
	}
	if len(body) > maxBodyBytes {
		return nil, fmt.Errorf("read %s response body: larger than %d bytes", req.URL.Path, maxBodyBytes)
	}
	if c, ok := req.Context().Value(captureKey{}).(*capture); ok {
		c.got = true
		c.status = resp.StatusCode
		c.header = resp.Header.Clone()
		c.body = body
		c.arrived = time.Now()
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}
