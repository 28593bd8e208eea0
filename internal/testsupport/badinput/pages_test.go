package badinput

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// The malformed pages of this file are shapes met when real Slack data (the public
// captures of ../shared/fixtures/realdata) was replayed through the poller: a
// capture that holds two different messages with one ts (slack-go's test messages
// share theirs), "reactions": {}, a thread_ts of another conversation's thread, and
// reaction counts of 0 or below. Each is served by the fake Slack, through the real
// client, poller and store.

// editor is a transport in front of the fake that lets edit change every successful
// answer of conversations.history and conversations.replies (its message objects,
// numbers kept exact) before the client sees it.
type editor struct {
	fake *slackfake.Server
	edit func(method, channel string, doc map[string]any)
}

func (e editor) RoundTrip(req *http.Request) (*http.Response, error) {
	method := path.Base(req.URL.Path)
	channel := req.URL.Query().Get("channel")
	if req.Body != nil {
		raw, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
		if form, err := url.ParseQuery(string(raw)); err == nil && form.Get("channel") != "" {
			channel = form.Get("channel")
		}
	}
	resp, err := e.fake.Transport().RoundTrip(req)
	if err != nil || (method != history && method != replies) {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	body = editJSON(body, func(doc map[string]any) { e.edit(method, channel, doc) })
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

// messagesOf returns the message objects of a page.
func messagesOf(doc map[string]any) []map[string]any {
	raw, _ := doc["messages"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, r := range raw {
		if m, ok := r.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// ticks runs n ticks a minute apart through rt and returns their summaries.
func (w *world) ticks(t *testing.T, rt http.RoundTripper, n int) []rm.TickSummary {
	t.Helper()
	var out []rm.TickSummary
	for range n {
		sum, panicked, err := w.tick(rt)
		if panicked != nil || err != nil {
			t.Fatalf("tick: %v, panic %v", err, panicked)
		}
		out = append(out, sum)
		time.Sleep(time.Minute)
	}
	return out
}

// changes returns the change feed after seq after.
func (w *world) changes(t *testing.T, after uint64) []rm.Change {
	t.Helper()
	var out []rm.Change
	if err := w.store.View(func(tx rm.Tx) error {
		return tx.Changes(after, func(c rm.Change) error { out = append(out, c); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func (w *world) lastSeq(t *testing.T) uint64 {
	t.Helper()
	var last uint64
	if err := w.store.View(func(tx rm.Tx) error {
		var err error
		_, last, err = tx.ChangeBounds()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return last
}

func (w *world) message(t *testing.T, ch string, ts rm.TS) rm.Message {
	t.Helper()
	var m rm.Message
	var ok bool
	if err := w.store.View(func(tx rm.Tx) error {
		var err error
		m, ok, err = tx.Message(ch, ts)
		return err
	}); err != nil || !ok {
		t.Fatalf("message %s/%s: stored %v, %v", ch, ts, ok, err)
	}
	return m
}

// readable returns two conversations the poller reads (status ok), and an author.
func (w *world) readable(t *testing.T) (a, b, user string) {
	t.Helper()
	lines := w.export(t)
	var ok []string
	for _, c := range lines.Conversations {
		if c.Status == rm.StatusOK && !c.IsArchived {
			ok = append(ok, c.ID)
		}
	}
	for _, m := range lines.Messages {
		if m.User != "" && !strings.HasPrefix(m.User, "B") {
			user = m.User
			break
		}
	}
	if len(ok) < 2 || user == "" {
		t.Fatalf("the world has %d readable conversations, author %q", len(ok), user)
	}
	return ok[0], ok[1], user
}

func flagged(sums []rm.TickSummary, want string) bool {
	for _, s := range sums {
		for _, e := range s.Errors {
			if strings.Contains(e, want) {
				return true
			}
		}
	}
	return false
}

func countKind(cs []rm.Change, kind, channel string, ts rm.TS) int {
	n := 0
	for _, c := range cs {
		if c.Kind == kind && c.Channel == channel && c.TS == ts {
			n++
		}
	}
	return n
}

// Two different messages with one ts in a page were both stored, one after the
// other, on every read: four message_edited a tick, for ever. One is kept — the one
// edited last, else the last in the page — and the page is flagged.
func TestTwoMessagesWithOneTSInAPageAreStoredOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		ch, _, user := w.readable(t)
		target, err := w.fake.Post(ch, user, "Hello world")
		if err != nil {
			t.Fatal(err)
		}
		rt := editor{fake: w.fake, edit: func(method, channel string, doc map[string]any) {
			if method != history || channel != ch {
				return
			}
			var msgs []any
			for _, m := range messagesOf(doc) {
				if m["ts"] == string(target) {
					// Before it in the page, a copy of the ts with other content,
					// edited: it is the one kept, though not the last.
					msgs = append(msgs, map[string]any{"type": "message", "subtype": "me_message", "user": user,
						"text": "is doing that thing", "ts": string(target),
						"edited": map[string]any{"user": user, "ts": string(target)}})
				}
				msgs = append(msgs, m)
			}
			doc["messages"] = msgs
		}}
		first := w.ticks(t, rt, 1)
		after := w.lastSeq(t)
		sums := w.ticks(t, rt, 3)
		if n := countKind(w.changes(t, after), rm.ChangeMessageEdited, ch, target); n != 0 {
			t.Errorf("%d message_edited of %s/%s in 3 ticks after the first: the two copies are stored in turn", n, ch, target)
		}
		if m := w.message(t, ch, target); m.Text != "is doing that thing" || m.Subtype != "me_message" {
			t.Errorf("stored %q (%s), want the copy edited last", m.Text, m.Subtype)
		}
		if !flagged(append(first, sums...), "different messages with this ts") {
			t.Errorf("the page with two messages of one ts is not flagged: %v", sums[0].Errors)
		}
	})
}

// "reactions": {} made a message undecodable: a new thread parent became an empty
// placeholder whose thread was never read, and a reply was lost while its thread was
// read again twice a tick. An empty object names no reaction: it is read as none,
// and flagged.
func TestAnEmptyReactionsObjectIsReadAsNoReactions(t *testing.T) {
	for _, on := range []string{"parent", "reply"} {
		t.Run("on a new thread's "+on, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				ch, _, user := w.readable(t)
				parent, err := w.fake.Post(ch, user, "a new thread")
				if err != nil {
					t.Fatal(err)
				}
				reply, err := w.fake.Reply(ch, parent, user, "its reply")
				if err != nil {
					t.Fatal(err)
				}
				odd := map[string]rm.TS{"parent": parent, "reply": reply}[on]
				rt := editor{fake: w.fake, edit: func(_, channel string, doc map[string]any) {
					for _, m := range messagesOf(doc) {
						if channel == ch && m["ts"] == string(odd) {
							m["reactions"] = map[string]any{}
						}
					}
				}}
				sums := w.ticks(t, rt, 2)
				w.fake.ResetRequests()
				sums = append(sums, w.ticks(t, rt, 3)...)
				p := w.message(t, ch, parent)
				if p.LastPolledAt == nil || p.Text != "a new thread" || len(p.Reactions) != 0 {
					t.Errorf("parent stored as %+v, want it read, with no reactions", p)
				}
				if p.ReplyWatermark != p.LatestReply || p.LatestReply != reply {
					t.Errorf("parent's thread: watermark %q, latest_reply %q; want both %q (read whole)", p.ReplyWatermark, p.LatestReply, reply)
				}
				if r := w.message(t, ch, reply); r.LastPolledAt == nil || r.Text != "its reply" || r.ThreadTS != parent {
					t.Errorf("reply stored as %+v, want it read, in its thread", r)
				}
				reads := 0
				for _, r := range w.fake.Requests() {
					if r.Method == replies && r.Params.Get("ts") == string(parent) {
						reads++
					}
				}
				if reads > 3 {
					t.Errorf("the thread, read whole and unchanged, was read %d times in the 3 ticks after: more than its rotation", reads)
				}
				if !flagged(sums, "empty object") {
					t.Errorf("the empty reactions object is not flagged")
				}
			})
		})
	}
}

// A message in a conversation's history with the thread_ts of another conversation's
// thread was stored as a reply of a thread the conversation does not have: shown by
// `show` and reported as reply_added, but in no export. History returns a timeline:
// it is a timeline message, everywhere.
func TestAHistoryReplyOfAnotherConversationsThreadIsATimelineMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a, b, user := w.readable(t)
		other, err := w.fake.Post(b, user, "a thread in another conversation")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.fake.Reply(b, other, user, "its reply"); err != nil {
			t.Fatal(err)
		}
		stray := rm.TSFromUnix(time.Now().Unix()) // newer than the baseline: news
		rt := editor{fake: w.fake, edit: func(method, channel string, doc map[string]any) {
			if method != history || channel != a {
				return
			}
			doc["messages"] = append(doc["messages"].([]any), map[string]any{"type": "message", "user": user,
				"text": "cross-posted", "ts": string(stray), "thread_ts": string(other)})
		}}
		after := w.lastSeq(t)
		sums := w.ticks(t, rt, 3)
		m := w.message(t, a, stray)
		if !m.InTimeline() || m.IsReply() {
			t.Errorf("stored with thread_ts %q: in the timeline %v, a reply %v; want a timeline message", m.ThreadTS, m.InTimeline(), m.IsReply())
		}
		exported := false
		for _, l := range w.export(t).Messages {
			exported = exported || l.Channel == a && l.TS == stray
		}
		if !exported {
			t.Errorf("%s/%s is not in the export", a, stray)
		}
		cs := w.changes(t, after)
		if n := countKind(cs, rm.ChangeReplyAdded, a, stray); n != 0 {
			t.Errorf("reported as reply_added %d times", n)
		}
		if n := countKind(cs, rm.ChangeMessagePosted, a, stray); n != 1 {
			t.Errorf("reported as message_posted %d times, want once", n)
		}
		if !flagged(sums, "names no thread of this conversation") {
			t.Errorf("not flagged")
		}
	})
}

// A reaction count of 0 or below passed as it was. The users listed are the reaction;
// one that lists none is not stored; both are flagged.
func TestReactionCountsOfZeroOrBelowAreFlagged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		ch, _, user := w.readable(t)
		target, err := w.fake.Post(ch, user, "counted")
		if err != nil {
			t.Fatal(err)
		}
		rt := editor{fake: w.fake, edit: func(_, channel string, doc map[string]any) {
			for _, m := range messagesOf(doc) {
				if channel == ch && m["ts"] == string(target) {
					m["reactions"] = []any{
						map[string]any{"name": "eyes", "count": json.Number("0"), "users": []any{}},
						map[string]any{"name": "tada", "count": json.Number("-2"), "users": []any{user}},
					}
				}
			}
		}}
		sums := w.ticks(t, rt, 1)
		got := w.message(t, ch, target).Reactions
		if len(got) != 1 || got[0].Name != "tada" || got[0].Count != 1 || len(got[0].Users) != 1 {
			t.Errorf("stored reactions %+v, want tada counted 1 (its one user) and no eyes", got)
		}
		if !flagged(sums, "count 0 or below") {
			t.Errorf("not flagged: %v", sums[0].Errors)
		}
	})
}
