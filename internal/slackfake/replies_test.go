package slackfake

import (
	"net/url"
	"slices"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// thread posts a parent by U1 and n replies alternating U2, U1 in C1.
func thread(t *testing.T, s *Server, n int) (readmodel.TS, []readmodel.TS) {
	t.Helper()
	parent := mustTS(t)(s.Post("C1", "U1", "parent"))
	replies := make([]readmodel.TS, n)
	for i := range replies {
		u := "U2"
		if i%2 == 1 {
			u = "U1"
		}
		replies[i] = mustTS(t)(s.Reply("C1", parent, u, "reply"))
	}
	return parent, replies
}

// allReplies walks a thread with slack-go and returns every page.
func allReplies(t *testing.T, api *slack.Client, parent readmodel.TS, limit int) [][]slack.Message {
	t.Helper()
	var pages [][]slack.Message
	cursor := ""
	for {
		msgs, hasMore, next, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{
			ChannelID: "C1", Timestamp: string(parent), Limit: limit, Cursor: cursor})
		must(t, err)
		pages = append(pages, msgs)
		if hasMore != (next != "") {
			t.Fatalf("has_more %v with next_cursor %q", hasMore, next)
		}
		if next == "" {
			return pages
		}
		if len(pages) > 100 {
			t.Fatal("replies pagination does not end")
		}
		cursor = next
	}
}

func TestRepliesParentFirstThenAscending(t *testing.T) {
	s, api := newFake(t, Options{})
	parent, replies := thread(t, s, 3)
	pages := allReplies(t, api, parent, 0)
	want := []string{string(parent), string(replies[0]), string(replies[1]), string(replies[2])}
	if len(pages) != 1 || !slices.Equal(tsList(pages[0]), want) {
		t.Fatalf("replies = %v, want one page %v", pages, want)
	}
	// Asking with a reply's ts returns the same thread.
	msgs, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: string(replies[1])})
	must(t, err)
	if !slices.Equal(tsList(msgs), want) {
		t.Fatalf("replies by a reply's ts = %v, want %v", tsList(msgs), want)
	}
	for _, m := range msgs[1:] {
		if m.ThreadTimestamp != string(parent) || m.ParentUserId != "U1" {
			t.Fatalf("reply %s: thread_ts %q parent_user_id %q", m.Timestamp, m.ThreadTimestamp, m.ParentUserId)
		}
	}
}

func TestRepliesOfAMessageWithoutThreadIsTheMessage(t *testing.T) {
	s, api := newFake(t, Options{})
	ts := post(t, s, "C1", 1)[0]
	msgs, hasMore, next, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: string(ts)})
	must(t, err)
	if !slices.Equal(tsList(msgs), []string{string(ts)}) || hasMore || next != "" {
		t.Fatalf("replies = %v (has_more %v, cursor %q), want just %s", tsList(msgs), hasMore, next, ts)
	}
}

func TestRepliesLimitDefaultMaxAndPagination(t *testing.T) {
	s, api := newFake(t, Options{})
	parent, replies := thread(t, s, 1100)
	pages := allReplies(t, api, parent, 0)
	if len(pages) != 2 || len(pages[0]) != 1000 || len(pages[1]) != 101 {
		t.Fatalf("no limit: pages of %v messages, want 1000 (parent + 999) then 101", pageLens(pages))
	}
	pages = allReplies(t, api, parent, 5000)
	if len(pages[0]) != 1000 {
		t.Fatalf("limit 5000: first page %d messages, want the maximum 1000", len(pages[0]))
	}
	var got []string
	for _, p := range pages {
		got = append(got, tsList(p)...)
	}
	want := []string{string(parent)}
	for _, r := range replies {
		want = append(want, string(r))
	}
	if !slices.Equal(got, want) {
		t.Fatal("walking all pages did not give the parent then every reply once, ascending")
	}
}

func TestRepliesPageCapAndNoRepeatedParent(t *testing.T) {
	s, api := newFake(t, Options{PageCap: 15})
	parent, _ := thread(t, s, 40)
	pages := allReplies(t, api, parent, 1000)
	if !slices.Equal(pageLens(pages), []int{15, 15, 11}) {
		t.Fatalf("pages %v, want 15 (parent + 14), 15, 11", pageLens(pages))
	}
	for i, p := range pages[1:] {
		if p[0].Timestamp == string(parent) {
			t.Fatalf("page %d repeats the parent without RepeatParentOnEveryPage", i+2)
		}
	}
}

func TestRepliesRepeatParentOnEveryPage(t *testing.T) {
	s, api := newFake(t, Options{PageCap: 15, RepeatParentOnEveryPage: true})
	parent, replies := thread(t, s, 40)
	pages := allReplies(t, api, parent, 1000)
	seen := map[string]int{}
	for i, p := range pages {
		if p[0].Timestamp != string(parent) {
			t.Fatalf("page %d starts with %s, want the parent %s", i+1, p[0].Timestamp, parent)
		}
		for _, m := range p[1:] {
			seen[m.Timestamp]++
		}
	}
	for _, r := range replies {
		if seen[string(r)] != 1 {
			t.Fatalf("reply %s seen %d times, want once", r, seen[string(r)])
		}
	}
}

func TestThreadParentFieldsAndLatestReplyMovesBackwards(t *testing.T) {
	s, api := newFake(t, Options{})
	parent, replies := thread(t, s, 3) // U2, U1, U2
	p := history(t, api, slack.GetConversationHistoryParameters{}).Messages[0]
	if p.ThreadTimestamp != string(parent) || p.ReplyCount != 3 || p.LatestReply != string(replies[2]) ||
		!slices.Equal(p.ReplyUsers, []string{"U2", "U1"}) {
		t.Fatalf("parent thread_ts %q reply_count %d latest_reply %q reply_users %v", p.ThreadTimestamp, p.ReplyCount, p.LatestReply, p.ReplyUsers)
	}
	r := rawCall(t, s, "conversations.history", url.Values{"channel": {"C1"}})
	if n := r.json["messages"].([]any)[0].(map[string]any)["reply_users_count"]; n != 2.0 {
		t.Fatalf("reply_users_count = %v, want 2", n)
	}

	must(t, s.Delete("C1", replies[2]))
	p = history(t, api, slack.GetConversationHistoryParameters{}).Messages[0]
	if p.LatestReply != string(replies[1]) || p.ReplyCount != 2 {
		t.Fatalf("after deleting the newest reply: latest_reply %q reply_count %d, want %s and 2", p.LatestReply, p.ReplyCount, replies[1])
	}
}

func TestDeletedParentBecomesTombstoneThenThreadNotFound(t *testing.T) {
	s, api := newFake(t, Options{})
	parent, replies := thread(t, s, 2)
	must(t, s.Delete("C1", parent))

	h := history(t, api, slack.GetConversationHistoryParameters{}).Messages
	if len(h) != 1 {
		t.Fatalf("history has %d messages, want the tombstone", len(h))
	}
	tomb := h[0]
	if tomb.SubType != "tombstone" || tomb.Timestamp != string(parent) || tomb.ThreadTimestamp != string(parent) ||
		tomb.User != "USLACKBOT" || tomb.Text != "This message was deleted." || !tomb.Hidden ||
		tomb.ReplyCount != 2 || tomb.LatestReply != string(replies[1]) {
		t.Fatalf("tombstone = %+v", tomb.Msg)
	}
	msgs, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: string(parent)})
	must(t, err)
	if len(msgs) != 3 || msgs[0].SubType != "tombstone" {
		t.Fatalf("replies of a tombstoned thread = %v, want tombstone + 2 replies", tsList(msgs))
	}

	must(t, s.Delete("C1", replies[0]))
	must(t, s.Delete("C1", replies[1]))
	_, _, _, err = api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: string(parent)})
	wantCode(t, err, "thread_not_found")
	if h := history(t, api, slack.GetConversationHistoryParameters{}).Messages; len(h) != 0 {
		t.Fatalf("history still has %v after the last reply of a tombstone went", tsList(h))
	}
}

func TestDeletedTopLevelMessageDisappears(t *testing.T) {
	s, api := newFake(t, Options{})
	ts := post(t, s, "C1", 2)
	must(t, s.Delete("C1", ts[0]))
	if got := tsList(history(t, api, slack.GetConversationHistoryParameters{}).Messages); !slices.Equal(got, []string{string(ts[1])}) {
		t.Fatalf("history = %v, want only %s", got, ts[1])
	}
	_, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: string(ts[0])})
	wantCode(t, err, "thread_not_found")
}

func TestThreadWithAllRepliesDeletedIsAPlainMessage(t *testing.T) {
	s, api := newFake(t, Options{})
	parent, replies := thread(t, s, 1)
	must(t, s.Delete("C1", replies[0]))
	p := history(t, api, slack.GetConversationHistoryParameters{}).Messages[0]
	if p.Timestamp != string(parent) || p.ReplyCount != 0 || p.LatestReply != "" || p.ThreadTimestamp != "" {
		t.Fatalf("parent without replies: %+v", p.Msg)
	}
}

func pageLens(pages [][]slack.Message) []int {
	out := make([]int, len(pages))
	for i, p := range pages {
		out[i] = len(p)
	}
	return out
}
