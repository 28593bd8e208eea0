package slackapi

import (
	"context"
	"net/http"
	"os"
	"testing"
	"testing/synctest"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// FuzzHistoryPage serves an arbitrary body (HTTP 200) as a conversations.history page
// to the real client. It must never panic, and either fail or return a page whose
// messages all have valid keys (ts, and thread_ts and latest_reply when set) and whose
// skipped items carry a valid ts or none. In virtual time: a body the client cannot
// read is retried with backoff.
func FuzzHistoryPage(f *testing.F) {
	for _, s := range []string{
		`{"ok":true,"messages":[{"type":"message","user":"U1","text":"hi","ts":"1754467200.000100"}],"has_more":false,"response_metadata":{"next_cursor":""}}`,
		`{"ok":true,"messages":[{"ts":"1754467200.000100","thread_ts":"1754467200.000100","reply_count":2,"latest_reply":"1754467300.000001","reactions":[{"name":"tada","count":1,"users":["U1"]}]},{"ts":"x"},{"ts":"1754467100.000001","latest_reply":1.5}],"response_metadata":{"next_cursor":"bmV4dA=="}}`,
		`{"ok":true,"messages":[{"ts":"1754467200.000100","edited":{"user":"U1","ts":"1754467201.000000"},"subtype":"tombstone","bot_id":"B1"}]}`,
		`{"ok":false,"error":"not_in_channel"}`,
		`{"ok":false}`,
		`{"ok":true,"messages":{}}`,
		`<html>502</html>`,
		``,
	} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile("testdata/conversations.history.success.json"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		synctest.Test(t, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(body)
			})
			c, err := New(Options{Token: testToken, APIURL: "http://slack.fake/api/",
				HTTPClient: &http.Client{Transport: handlerTransport{h}},
				Rates:      map[string]float64{readmodel.MethodHistory: 6000}})
			if err != nil {
				t.Fatal(err)
			}
			page, err := c.History(context.Background(), readmodel.HistoryRequest{Channel: "C1", Limit: 999})
			if err != nil {
				return
			}
			for _, m := range page.Messages {
				if m.Channel != "C1" || !m.TS.Valid() || (m.ThreadTS != "" && !m.ThreadTS.Valid()) || (m.LatestReply != "" && !m.LatestReply.Valid()) {
					t.Fatalf("page returned a message with a bad key: %+v", m)
				}
			}
			for _, s := range page.Skipped {
				if s.TS != "" && !s.TS.Valid() || s.Err == "" {
					t.Fatalf("skipped item %+v: want a valid ts or none, and a reason", s)
				}
			}
		})
	})
}
