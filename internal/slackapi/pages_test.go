package slackapi

import (
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

func TestHistoryPaginatesOnResponseMetadataCursor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			if r.PostForm.Get("cursor") == "" {
				writeJSON(w, mustRead(t, "testdata/conversations.history.success.json"))
				return
			}
			// The last page: the key is present with "" (README, "How it works").
			writeJSON(w, `{"ok":true,"messages":[{"type":"message","user":"U1","text":"old","ts":"1512000000.000001"}],"has_more":false,"response_metadata":{"next_cursor":""}}`)
		})
		c := newTestClient(t, f, nil)
		p1, err := c.History(bg, readmodel.HistoryRequest{Channel: "C1", Oldest: "1500000000.000000", Limit: readmodel.HistoryPageLimit})
		if err != nil {
			t.Fatal(err)
		}
		if p1.NextCursor != "bmV4dF90czoxNTEyMDg1ODYxMDAwNTQz" || len(p1.Messages) != 2 {
			t.Fatalf("page 1: cursor %q, %d messages; want the fixture's cursor and 2", p1.NextCursor, len(p1.Messages))
		}
		p2, err := c.History(bg, readmodel.HistoryRequest{Channel: "C1", Oldest: "1500000000.000000", Limit: readmodel.HistoryPageLimit, Cursor: p1.NextCursor})
		if err != nil {
			t.Fatal(err)
		}
		if p2.NextCursor != "" || len(p2.Messages) != 1 {
			t.Errorf("page 2: cursor %q, %d messages; want \"\" and 1", p2.NextCursor, len(p2.Messages))
		}
		reqs := f.requests("conversations.history")
		for _, r := range reqs {
			if r.form.Get("limit") != "999" || r.form.Get("oldest") != "1500000000.000000" || r.form.Get("channel") != "C1" {
				t.Errorf("form %v, want channel C1, limit 999, the same oldest on every page", r.form)
			}
		}
		if reqs[1].form.Get("cursor") != p1.NextCursor {
			t.Errorf("page 2 cursor = %q", reqs[1].form.Get("cursor"))
		}
	})
}

func TestHistorySingleMessageReadIsInclusive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1700000000.000100", "")) })
		c := newTestClient(t, f, nil)
		ts := readmodel.TS("1700000000.000100")
		if _, err := c.History(bg, readmodel.HistoryRequest{Channel: "C1", Oldest: ts, Latest: ts, Inclusive: true, Limit: 1}); err != nil {
			t.Fatal(err)
		}
		form := f.requests("conversations.history")[0].form
		for k, want := range map[string]string{"oldest": string(ts), "latest": string(ts), "inclusive": "1", "limit": "1"} {
			if got := form.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
	})
}

func TestRepliesPageFromFixture(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.replies", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, mustRead(t, "testdata/conversations.replies.success.json"))
		})
		c := newTestClient(t, f, nil)
		page, err := c.Replies(bg, readmodel.RepliesRequest{Channel: "C1", TS: "1482960137.003543", Limit: readmodel.RepliesPageLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Messages) != 4 || page.NextCursor != "bmV4dF90czoxNDg0Njc4MjkwNTE3MDkx" {
			t.Fatalf("got %d messages, cursor %q", len(page.Messages), page.NextCursor)
		}
		parent := page.Messages[0]
		if parent.TS != parent.ThreadTS || parent.ReplyCount != 3 || parent.Channel != "C1" {
			t.Errorf("parent = %+v", parent)
		}
		form := f.requests("conversations.replies")[0].form
		if form.Get("ts") != "1482960137.003543" || form.Get("limit") != "1000" {
			t.Errorf("form = %v, want ts and limit 1000", form)
		}
	})
}

// badPage has one message slack-go cannot decode between two good ones.
func badPage(badField string) string {
	return `{"ok":true,"messages":[` +
		`{"type":"message","user":"U1","text":"one","ts":"1700000000.000100"},` +
		`{"type":"message","user":"U2","text":"bad","ts":"1700000000.000200",` + badField + `},` +
		`{"type":"message","user":"U3","text":"three","ts":"1700000000.000300","reactions":[{"name":"eyes","count":1,"users":["U1"]}]}` +
		`],"has_more":true,"response_metadata":{"next_cursor":"keep-me"}}`
}

func TestOneUndecodableMessageDoesNotLoseThePage(t *testing.T) {
	// latest_reply is a kept field: the message is skipped. display_as_bot is not:
	// slack-go fails on it, but the kept fields decode and the message is stored.
	for bad, want := range map[string][]readmodel.TS{
		`"latest_reply":1.5`:       {"1700000000.000100", "1700000000.000300"},
		`"display_as_bot":"false"`: {"1700000000.000100", "1700000000.000200", "1700000000.000300"},
	} {
		for _, method := range []string{readmodel.MethodHistory, readmodel.MethodReplies} {
			t.Run(method+" "+bad, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					f := newFake()
					f.handle(method, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, badPage(bad)) })
					c := newTestClient(t, f, nil)
					var page readmodel.Page
					var err error
					if method == readmodel.MethodHistory {
						page, err = c.History(bg, historyReq(""))
					} else {
						page, err = c.Replies(bg, readmodel.RepliesRequest{Channel: "C1", TS: "1700000000.000100", Limit: 1000})
					}
					if err != nil {
						t.Fatalf("err = %v, want the page", err)
					}
					if page.NextCursor != "keep-me" {
						t.Errorf("cursor = %q, want keep-me", page.NextCursor)
					}
					var got []readmodel.TS
					for _, m := range page.Messages {
						got = append(got, m.TS)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("kept %v, want %v", got, want)
					}
					if len(want) == 3 && len(page.Skipped) != 0 {
						t.Errorf("skipped = %+v, want none", page.Skipped)
					}
					if len(want) == 2 && (len(page.Skipped) != 1 || page.Skipped[0].TS != "1700000000.000200" || page.Skipped[0].Err == "") {
						t.Errorf("skipped = %+v, want the bad message's ts with an error", page.Skipped)
					}
					if r := page.Messages[len(page.Messages)-1].Reactions; len(r) != 1 || r[0].Name != "eyes" {
						t.Errorf("salvaged message reactions = %+v", r)
					}
					if n := len(f.requests(method)); n != 1 {
						t.Errorf("%d requests, want 1", n)
					}
				})
			})
		}
	}
}

func TestInvalidTSMessagesAreItemErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, `{"ok":true,"messages":[`+
				`{"type":"message","text":"no ts"},`+
				`{"type":"message","text":"float ts","ts":"1.5e9"},`+
				`{"type":"message","text":"bad thread","ts":"1700000000.000100","thread_ts":"x"},`+
				`{"type":"message","text":"fine","ts":"1700000000.000200"}`+
				`],"response_metadata":{"next_cursor":""}}`)
		})
		c := newTestClient(t, f, nil)
		page, err := c.History(bg, historyReq(""))
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Messages) != 1 || page.Messages[0].TS != "1700000000.000200" {
			t.Errorf("kept %+v, want only the valid message", page.Messages)
		}
		var skipped []readmodel.TS
		for _, s := range page.Skipped {
			skipped = append(skipped, s.TS)
		}
		if want := []readmodel.TS{"", "", "1700000000.000100"}; !reflect.DeepEqual(skipped, want) {
			t.Errorf("skipped ts = %q, want %q", skipped, want)
		}
	})
}

func TestSalvageWithNumericTSReportsEmptyTS(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, `{"ok":true,"messages":[{"ts":1700000000.0001,"text":"n"},{"ts":"1700000000.000300","text":"ok"}],"response_metadata":{"next_cursor":""}}`)
		})
		c := newTestClient(t, f, nil)
		page, err := c.History(bg, historyReq(""))
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Messages) != 1 || len(page.Skipped) != 1 || page.Skipped[0].TS != "" {
			t.Errorf("page = %+v, want 1 kept and 1 skipped with ts \"\"", page)
		}
	})
}

// TestConcurrentSalvageUsesEachCallsOwnBody runs history and replies at once, each
// with its own undecodable page: a capture shared between calls would mix them up.
func TestConcurrentSalvageUsesEachCallsOwnBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, strings.ReplaceAll(badPage(`"latest_reply":1.5`), "keep-me", "history-cursor"))
		})
		f.handle("conversations.replies", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, strings.ReplaceAll(badPage(`"display_as_bot":"false"`), "keep-me", "replies-cursor"))
		})
		c := newTestClient(t, f, nil)
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				p, err := c.History(bg, historyReq(""))
				if err != nil || p.NextCursor != "history-cursor" {
					t.Errorf("history: %v, cursor %q", err, p.NextCursor)
				}
			})
			wg.Go(func() {
				p, err := c.Replies(bg, readmodel.RepliesRequest{Channel: "C1", TS: "1700000000.000100", Limit: 1000})
				if err != nil || p.NextCursor != "replies-cursor" {
					t.Errorf("replies: %v, cursor %q", err, p.NextCursor)
				}
			})
		}
		wg.Wait()
	})
}
