package slackfake

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

// benchServer returns a Medium generated workspace and its busiest readable
// conversation.
func benchServer(b *testing.B, opts Options) (*Server, string) {
	b.Helper()
	c := &clock{t: t0}
	opts.Now, opts.ReactionUsersCap = c.now, 10
	s := New(opts)
	Generate(s, 1, Medium)
	best, n := "", -1
	for _, cv := range s.Truth().Conversations {
		if cv.Status != "ok" {
			continue
		}
		if l := len(s.convs[cv.ID].timeline); l > n {
			best, n = cv.ID, l
		}
	}
	return s, best
}

// BenchmarkHistory serves conversations.history through the in-memory transport, as
// slack-go sends it (form POST), one page per request, walking the whole conversation
// by cursor and starting over. Reports req/s.
func BenchmarkHistory(b *testing.B) {
	for _, limit := range []int{15, 100, 999} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			s, ch := benchServer(b, Options{})
			rt := s.Transport()
			form := url.Values{"token": {s.Token()}, "channel": {ch}, "limit": {fmt.Sprint(limit)},
				"inclusive": {"0"}, "include_all_metadata": {"0"}}
			cursor, n, total := "", 0, int64(0)
			var buf bytes.Buffer
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if n%1000 == 0 {
					s.ResetRequests()
				}
				form.Set("cursor", cursor)
				if cursor == "" {
					form.Del("cursor")
				}
				req, _ := http.NewRequest(http.MethodPost, apiURL+"conversations.history", strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				resp, err := rt.RoundTrip(req)
				if err != nil || resp.StatusCode != 200 {
					b.Fatal(err, resp)
				}
				buf.Reset()
				buf.ReadFrom(resp.Body)
				resp.Body.Close()
				total += int64(buf.Len())
				cursor = nextCursorOf(buf.Bytes())
				n++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "req/s")
			b.ReportMetric(float64(total)/float64(n), "B/resp")
		})
	}
}

// nextCursorOf extracts response_metadata.next_cursor without decoding the body.
func nextCursorOf(body []byte) string {
	key := []byte(`"next_cursor":"`)
	i := bytes.LastIndex(body, key)
	if i < 0 {
		return ""
	}
	rest := body[i+len(key):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

// BenchmarkHistorySlackGo is the same walk through the real slack-go client, decoding
// included: the cost a test or the demo pays per page.
// Blocks are most of slack-go's decoding cost; OmitBlocks shows the difference.
func BenchmarkHistorySlackGo(b *testing.B) {
	for _, omit := range []bool{false, true} {
		b.Run(fmt.Sprintf("omitBlocks=%v", omit), func(b *testing.B) {
			s, ch := benchServer(b, Options{OmitBlocks: omit})
			api := clientFor(s)
			cursor, n := "", 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if n%1000 == 0 {
					s.ResetRequests()
				}
				resp, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: ch, Limit: 100, Cursor: cursor})
				if err != nil {
					b.Fatal(err)
				}
				cursor = resp.ResponseMetaData.NextCursor
				n++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// BenchmarkReplies serves whole threads of the busiest conversation.
func BenchmarkReplies(b *testing.B) {
	s, ch := benchServer(b, Options{})
	var parents []string
	for _, m := range s.convs[ch].timeline {
		if len(m.replies) > 0 && m.parent == nil {
			parents = append(parents, string(m.ts))
		}
	}
	rt := s.Transport()
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if n%1000 == 0 {
			s.ResetRequests()
		}
		form := url.Values{"token": {s.Token()}, "channel": {ch}, "ts": {parents[n%len(parents)]}, "limit": {"1000"}}
		req, _ := http.NewRequest(http.MethodPost, apiURL+"conversations.replies", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "req/s")
}
