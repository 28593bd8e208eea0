package badinput

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/slackpoll/slackpoll/internal/converge"
	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// slackCase is one bad answer. For the requests of method, before may change the form
// the fake sees, after replaces the fake's answer. The tick must return without error
// and report want (a substring of its skipped items and stop reason); the store must
// hold the same data as before (check, when set, replaces that comparison).
type slackCase struct {
	name   string
	method string
	before func(form url.Values)
	after  func(form url.Values, status int, body []byte) (int, []byte)
	want   string
	check  func(t *testing.T, w *world, before, after converge.Lines, sum rm.TickSummary)
}

const (
	history = rm.MethodHistory
	replies = rm.MethodReplies
	// Reported for a message skipped alone (README, "Replace on read").
	itemSkip = "undecodable"
)

// wrongTypes are a value of the wrong JSON type for every message field slackpoll
// reads; slack-go cannot decode the message.
var wrongTypes = []struct {
	field string
	value any
}{
	{"ts", json.Number("1754467200.1")},
	{"thread_ts", json.Number("1754467200.1")},
	{"user", json.Number("42")},
	{"text", []any{"a", "b"}},
	{"edited", "yes"},
	{"reactions", map[string]any{"name": "tada", "count": 1}},
	{"reply_count", "3"},
	{"latest_reply", json.Number("1.5")},
	{"bot_id", true},
	{"subtype", json.Number("7")},
}

// notTS are strings in the place of a ts that are not one.
var notTS = []string{"yesterday", "", "1754467200.1234567", "12.34.56", "-1.000000", "1754467200."}

// setFirst makes the first message of every page carry value in field.
func setFirst(field string, value any) func(url.Values, int, []byte) (int, []byte) {
	return setMessage(field, value, false)
}

// setMessage makes the first (or last) message of every page carry value in field.
// In a replies page the first is the parent, the last a reply.
func setMessage(field string, value any, last bool) func(url.Values, int, []byte) (int, []byte) {
	return func(_ url.Values, status int, body []byte) (int, []byte) {
		return status, editJSON(body, func(doc map[string]any) {
			if m := pageMessage(doc, last); m != nil {
				m[field] = value
			}
		})
	}
}

// kind names the JSON type of a value.
func kind(v any) string {
	switch v.(type) {
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// setTop sets a top-level key of every successful answer.
func setTop(key string, value any) func(url.Values, int, []byte) (int, []byte) {
	return func(_ url.Values, status int, body []byte) (int, []byte) {
		return status, editJSON(body, func(doc map[string]any) { doc[key] = value })
	}
}

// answer replaces every answer with status and body.
func answer(status int, body string) func(url.Values, int, []byte) (int, []byte) {
	return func(url.Values, int, []byte) (int, []byte) { return status, []byte(body) }
}

const htmlPage = "<!DOCTYPE html><html><head><title>Slack is down</title></head><body><h1>Bad gateway</h1></body></html>\n"

func catalog() []slackCase {
	var cs []slackCase
	for _, m := range []string{history, replies} {
		for _, wt := range wrongTypes {
			cs = append(cs, slackCase{name: fmt.Sprintf("%s/%s is %s", m, wt.field, kind(wt.value)), method: m,
				after: setFirst(wt.field, wt.value), want: itemSkip})
			if m == replies {
				cs = append(cs, slackCase{name: fmt.Sprintf("%s/reply %s is %s", m, wt.field, kind(wt.value)), method: m,
					after: setMessage(wt.field, wt.value, true), want: itemSkip})
			}
		}
		for _, s := range notTS {
			cs = append(cs, slackCase{name: fmt.Sprintf("%s/ts %q", m, s), method: m, after: setFirst("ts", s), want: itemSkip})
		}
		cs = append(cs, unknownBlockElement(m, false))
		if m == replies {
			cs = append(cs, unknownBlockElement(m, true))
		}
		cs = append(cs,
			slackCase{name: m + "/ok is a string", method: m, after: setTop("ok", "true"), want: "malformed"},
			slackCase{name: m + "/ok false without error", method: m, after: answer(200, `{"ok":false}`), want: "malformed"},
			slackCase{name: m + "/next_cursor is a number", method: m,
				after: setTop("response_metadata", map[string]any{"next_cursor": json.Number("5")}), want: "malformed"},
			slackCase{name: m + "/messages is an object", method: m, after: setTop("messages", map[string]any{}), want: "malformed"},
			slackCase{name: m + "/truncated JSON", method: m, after: func(_ url.Values, st int, b []byte) (int, []byte) {
				return st, b[:len(b)/2]
			}, want: "malformed"},
			slackCase{name: m + "/HTML with 200", method: m, after: answer(http.StatusOK, htmlPage), want: "malformed"},
			slackCase{name: m + "/HTML with 502", method: m, after: answer(http.StatusBadGateway, htmlPage), want: "502"},
			slackCase{name: m + "/empty body", method: m, after: answer(http.StatusOK, ""), want: "malformed"},
			selfLoop(m),
			twoCycle(m),
		)
	}
	for _, m := range []string{rm.MethodUsersInfo, rm.MethodConversationInfo} {
		object := map[string]string{rm.MethodUsersInfo: "user", rm.MethodConversationInfo: "channel"}[m]
		cs = append(cs,
			slackCase{name: m + "/ok false without error", method: m, after: answer(200, `{"ok":false}`), want: "malformed"},
			slackCase{name: m + "/" + object + " is a string", method: m, after: setTop(object, "x"), want: "undecodable"},
			// ok:true with no object: slack-go returns a zero User / Channel.
			slackCase{name: m + "/" + object + " is null", method: m, after: setTop(object, nil), want: "malformed"},
			slackCase{name: m + "/" + object + " is missing", method: m, after: func(_ url.Values, st int, b []byte) (int, []byte) {
				return st, editJSON(b, func(doc map[string]any) { delete(doc, object) })
			}, want: "malformed"},
			slackCase{name: m + "/HTML with 502", method: m, after: answer(http.StatusBadGateway, htmlPage), want: "502"},
			slackCase{name: m + "/truncated JSON", method: m, after: func(_ url.Values, st int, b []byte) (int, []byte) {
				return st, b[:len(b)/2]
			}, want: "malformed"},
		)
	}
	return append(cs, largePage())
}

// TestBadSlackAnswers serves each bad answer of the catalog to the real client and
// poller over a store that holds data: the tick goes on (a per-item skip or a
// transient failure, reported), nothing panics, and the stored data stays as it was.
func TestBadSlackAnswers(t *testing.T) {
	for _, c := range catalog() {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				before := w.export(t)
				sum, panicked, err := w.tick(rewriter{fake: w.fake, method: c.method, before: c.before, after: c.after})
				if panicked != nil {
					t.Fatalf("tick panicked: %v", panicked)
				}
				if err != nil {
					t.Fatalf("tick failed: %v; a bad answer must be skipped, not stop the tick", err)
				}
				if sum.Calls[c.method] == 0 {
					t.Fatalf("no %s call: the bad answer was never served", c.method)
				}
				reported := strings.Join(sum.Errors, "\n") + "\nstop: " + sum.StopReason
				if !strings.Contains(reported, c.want) {
					t.Errorf("tick reported:\n%s\nwant it to mention %q", reported, c.want)
				}
				after := w.export(t)
				if c.check != nil {
					c.check(t, w, before, after, sum)
				} else if d := sameData(before, after); d != "" {
					t.Errorf("stored data changed (-before +after):\n%s", d)
				}
			})
		})
	}
}

// isPage reports whether a request reads pages that may carry a cursor: a replies
// call, or a bulk-window history read (a tail read asks for one message, latest =
// oldest).
func isPage(method string, form url.Values) bool {
	return method == replies || form.Get("latest") == ""
}

// loop answers every page request with the first page and next_cursor next(cursor),
// dropping the made-up cursors before the fake sees them.
func loop(name, method string, next func(cursor string) string, want string) slackCase {
	return slackCase{
		name: method + "/" + name, method: method, want: want,
		before: func(form url.Values) {
			if strings.HasPrefix(form.Get("cursor"), "LOOP") {
				form.Del("cursor")
			}
		},
		after: func(form url.Values, status int, body []byte) (int, []byte) {
			if !isPage(method, form) {
				return status, body
			}
			return status, editJSON(body, func(doc map[string]any) {
				doc["has_more"] = true
				doc["response_metadata"] = map[string]any{"next_cursor": next(form.Get("cursor"))}
			})
		},
	}
}

// selfLoop: next_cursor is the cursor just sent. The poller notices and gives up
// the walk (nothing proven, nothing lost).
func selfLoop(method string) slackCase {
	return loop("cursor repeats itself", method, func(string) string { return "LOOP1" }, "returned the cursor it was given")
}

// twoCycle: the cursors alternate A, B, A, B, ... The poller cannot tell; its budget
// ends the walk.
func twoCycle(method string) slackCase {
	c := loop("cursors cycle A B A", method, func(cur string) string {
		if cur == "LOOP1" {
			return "LOOP2"
		}
		return "LOOP1"
	}, "budget:")
	c.check = func(t *testing.T, w *world, before, after converge.Lines, sum rm.TickSummary) {
		if d := sameData(before, after); d != "" {
			t.Errorf("stored data changed (-before +after):\n%s", d)
		}
		limit := map[string]int{history: budget.HistoryCalls, replies: budget.RepliesCalls}[method]
		if sum.Calls[method] > limit {
			t.Errorf("%d %s calls, over the budget %d", sum.Calls[method], method, limit)
		}
	}
	return c
}

// largePage adds 10,000 messages to the first bulk-window page of one conversation.
// They are all stored; nothing else changes.
func largePage() slackCase {
	const n = 10000
	var channel string
	return slackCase{
		name: "history/10000 more messages in a page", method: history, want: "stop:",
		after: func(form url.Values, status int, body []byte) (int, []byte) {
			// The first head read of a readable conversation (a conversation in
			// error is retried in its turn, and answers with an error).
			if channel == "" && status == http.StatusOK && bytes.Contains(body, []byte(`"ok":true`)) &&
				form.Get("latest") == "" && form.Get("cursor") == "" {
				channel = form.Get("channel")
			}
			if form.Get("channel") != channel || form.Get("latest") != "" || form.Get("cursor") != "" {
				return status, body
			}
			return status, editJSON(body, func(doc map[string]any) {
				// Seconds into the window, where no generated message is.
				sec, _, _ := strings.Cut(form.Get("oldest"), ".")
				base, _ := strconv.ParseInt(sec, 10, 64)
				msgs, _ := doc["messages"].([]any)
				for i := range n {
					msgs = append(msgs, map[string]any{"type": "message", "user": "U0EXTRA00",
						"text": fmt.Sprintf("extra %d", i), "ts": fmt.Sprintf("%d.%06d", base+1, i)})
				}
				doc["messages"] = msgs
			})
		},
		check: func(t *testing.T, w *world, before, after converge.Lines, _ rm.TickSummary) {
			extra := 0
			rest := converge.Lines{Conversations: after.Conversations, Users: before.Users}
			for _, m := range after.Messages {
				if m.Channel == channel && m.User == "U0EXTRA00" {
					extra++
					continue
				}
				rest.Messages = append(rest.Messages, m)
			}
			if extra != n {
				t.Errorf("%d of the %d extra messages stored", extra, n)
			}
			// The extra messages' author is looked up too; the rest is unchanged.
			rest.Users = slices.DeleteFunc(slices.Clone(after.Users), func(u export.UserLine) bool { return u.ID == "U0EXTRA00" })
			if d := sameData(before, rest); d != "" {
				t.Errorf("stored data changed besides the extra messages (-before +after):\n%s", d)
			}
		},
	}
}

// unknownBlockElement gives the first (or last) message of every page an actions and a
// context block with element types slack-go v0.35 rejects. slackpoll keeps no block,
// so the message is read from its kept fields: nothing is skipped, nothing changes.
func unknownBlockElement(method string, last bool) slackCase {
	where := "first"
	if last {
		where = "reply"
	}
	blocks := []any{
		map[string]any{"type": "actions", "elements": []any{map[string]any{"type": "brand_new_element"}}},
		map[string]any{"type": "context", "elements": []any{map[string]any{"type": "rich_text_list", "elements": []any{}}}},
	}
	return slackCase{
		name: fmt.Sprintf("%s/%s message has block elements slack-go does not know", method, where), method: method,
		after: setMessage("blocks", blocks, last),
		check: func(t *testing.T, _ *world, before, after converge.Lines, sum rm.TickSummary) {
			for _, e := range sum.Errors {
				if strings.Contains(e, itemSkip) {
					t.Errorf("tick skipped a message: %s", e)
				}
			}
			if d := sameData(before, after); d != "" {
				t.Errorf("stored data changed (-before +after):\n%s", d)
			}
		},
	}
}
