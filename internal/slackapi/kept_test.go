package slackapi

import (
	"compress/gzip"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// unknownElementPage has a thread parent whose actions and context blocks carry
// element types slack-go v0.35 rejects, between two messages it decodes.
const unknownElementPage = `{"ok":true,"messages":[` +
	`{"type":"message","user":"U1","text":"one","ts":"1700000000.000100"},` +
	`{"type":"message","user":"U2","text":"parent","ts":"1700000000.000200","thread_ts":"1700000000.000200",` +
	`"reply_count":2,"latest_reply":"1700000000.000900","edited":{"user":"B0BOT","ts":"1700000001.000000"},` +
	`"bot_id":"B0BOT","bot_profile":{"name":"Polly","icons":{"x":1}},"display_as_bot":"false",` +
	`"reactions":[{"name":"eyes","count":2,"users":["U1","U3"]}],` +
	`"blocks":[{"type":"actions","elements":[{"type":"brand_new_element","x":1}]},` +
	`{"type":"context","elements":[{"type":"rich_text_list","elements":[]}]}]},` +
	`{"type":"message","user":"U3","text":"three","ts":"1700000000.000300"}` +
	`],"has_more":false,"response_metadata":{"next_cursor":""}}`

func TestMessageSlackGoCannotDecodeKeepsItsFields(t *testing.T) {
	for _, method := range []string{readmodel.MethodHistory, readmodel.MethodReplies} {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.handle(method, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, unknownElementPage) })
				c := newTestClient(t, f, nil)
				var page readmodel.Page
				var err error
				if method == readmodel.MethodHistory {
					page, err = c.History(bg, historyReq(""))
				} else {
					page, err = c.Replies(bg, readmodel.RepliesRequest{Channel: "C1", TS: "1700000000.000200", Limit: 1000})
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Skipped) != 0 {
					t.Errorf("skipped %+v, want none: the message has a usable ts", page.Skipped)
				}
				if len(page.Messages) != 3 {
					t.Fatalf("kept %d messages, want 3", len(page.Messages))
				}
				want := readmodel.Message{
					Channel: "C1", TS: "1700000000.000200", ThreadTS: "1700000000.000200", User: "U2",
					BotID: "B0BOT", BotName: "Polly", Text: "parent", ReplyCount: 2, LatestReply: "1700000000.000900",
					Edited:    &readmodel.Edited{User: "B0BOT", TS: "1700000001.000000"},
					Reactions: []readmodel.Reaction{{Name: "eyes", Count: 2, Users: []string{"U1", "U3"}}},
				}
				if d := cmp.Diff(want, page.Messages[1]); d != "" {
					t.Errorf("message (-want +got):\n%s", d)
				}
			})
		})
	}
}

// TestRealDataEveryMessageWithATSDecodes replays the messages captured from real
// Slack workspaces (../shared/fixtures/realdata beside the repository; skipped where
// absent) as one history page each: every message with a valid ts is kept, none
// skipped.
func TestRealDataEveryMessageWithATSDecodes(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "fixtures", "realdata", "dataset.json.gz")
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("real data not present: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Conversations []struct {
			ID       string            `json:"id"`
			Messages []json.RawMessage `json:"messages"`
		} `json:"conversations"`
	}
	if err := json.NewDecoder(zr).Decode(&d); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, conv := range d.Conversations {
		body, err := json.Marshal(map[string]any{"ok": true, "messages": conv.Messages, "response_metadata": map[string]string{"next_cursor": ""}})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Test(t, func(t *testing.T) {
			fk := newFake()
			fk.handle(readmodel.MethodHistory, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, string(body)) })
			c := newTestClient(t, fk, nil)
			page, err := c.History(bg, readmodel.HistoryRequest{Channel: conv.ID, Limit: 999})
			if err != nil {
				t.Fatalf("%s: %v", conv.ID, err)
			}
			for _, s := range page.Skipped {
				t.Errorf("%s: message %q skipped: %s", conv.ID, s.TS, s.Err)
			}
			total += len(page.Messages)
		})
	}
	t.Logf("%d messages kept", total)
	if total < 1000 {
		t.Errorf("%d messages kept, want all ~1,041", total)
	}
}

func TestReactionsGetMessageSlackGoCannotDecodeKeepsItsFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle(readmodel.MethodReactionsGet, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, `{"ok":true,"type":"message","channel":"C1","message":{"type":"message","user":"U2","text":"hi",`+
				`"ts":"1700000000.000200","reactions":[{"name":"eyes","count":1,"users":["U1"]}],`+
				`"blocks":[{"type":"actions","elements":[{"type":"brand_new_element"}]}]}}`)
		})
		c := newTestClient(t, f, nil)
		m, err := c.ReactionsGet(bg, readmodel.Ref{Channel: "C1", TS: "1700000000.000200"})
		if err != nil {
			t.Fatalf("err = %v, want the message", err)
		}
		want := readmodel.Message{Channel: "C1", TS: "1700000000.000200", User: "U2", Text: "hi",
			Reactions: []readmodel.Reaction{{Name: "eyes", Count: 1, Users: []string{"U1"}}}}
		if d := cmp.Diff(want, m); d != "" {
			t.Errorf("message (-want +got):\n%s", d)
		}
	})
}

// A file_comment message's author is only in comment.user (Slack's older shape): it
// is the message's user, so the message has an author and a label.
func TestFileCommentAuthorIsTheCommentsUser(t *testing.T) {
	for name, extra := range map[string]string{"slack-go decodes it": ``, "slack-go fails on it": `,"display_as_bot":"false"`} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.handle(readmodel.MethodHistory, func(w http.ResponseWriter, r *http.Request) {
					writeJSON(w, `{"ok":true,"messages":[{"type":"message","subtype":"file_comment","ts":"1433316360.000009",`+
						`"text":"<@U2147483697|tester> commented on a file: another comment",`+
						`"comment":{"id":"xyz","created":1433316360,"timestamp":1433316360,"user":"U2147483697","comment":"another comment"}`+extra+`}],`+
						`"response_metadata":{"next_cursor":""}}`)
				})
				c := newTestClient(t, f, nil)
				page, err := c.History(bg, historyReq(""))
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Messages) != 1 || page.Messages[0].User != "U2147483697" {
					t.Errorf("page = %+v, want the message with user U2147483697", page)
				}
			})
		})
	}
}
