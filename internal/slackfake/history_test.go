package slackfake

import (
	"net/url"
	"slices"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

func TestHistoryNewestFirst(t *testing.T) {
	s, api := newFake(t, Options{})
	ts := post(t, s, "C1", 5)
	got := tsList(history(t, api, slack.GetConversationHistoryParameters{}).Messages)
	want := []string{string(ts[4]), string(ts[3]), string(ts[2]), string(ts[1]), string(ts[0])}
	if !slices.Equal(got, want) {
		t.Fatalf("history order = %v, want newest first %v", got, want)
	}
}

func TestNewTSStrictlyIncreasingOnAStoppedClock(t *testing.T) {
	s, _ := newFake(t, Options{}) // the clock never moves
	ts := post(t, s, "C1", 3)
	if ts[0] != "1796032800.000000" || ts[1] != "1796032800.000001" || ts[2] != "1796032800.000002" {
		t.Fatalf("ts = %v, want now, now+1µs, now+2µs formatted %%d.%%06d", ts)
	}
}

func TestHistoryOldestLatestExclusiveUnlessInclusive(t *testing.T) {
	s, api := newFake(t, Options{})
	ts := post(t, s, "C1", 5)
	cases := []struct {
		name string
		p    slack.GetConversationHistoryParameters
		want []readmodel.TS
	}{
		{"oldest exclusive", slack.GetConversationHistoryParameters{Oldest: string(ts[2])}, []readmodel.TS{ts[4], ts[3]}},
		{"latest exclusive", slack.GetConversationHistoryParameters{Latest: string(ts[2])}, []readmodel.TS{ts[1], ts[0]}},
		{"both inclusive", slack.GetConversationHistoryParameters{Oldest: string(ts[1]), Latest: string(ts[3]), Inclusive: true}, []readmodel.TS{ts[3], ts[2], ts[1]}},
		{"single message inclusive", slack.GetConversationHistoryParameters{Oldest: string(ts[2]), Latest: string(ts[2]), Inclusive: true, Limit: 1}, []readmodel.TS{ts[2]}},
		{"single message without inclusive", slack.GetConversationHistoryParameters{Oldest: string(ts[2]), Latest: string(ts[2]), Limit: 1}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := history(t, api, tc.p)
			got := tsList(resp.Messages)
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = string(w)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("messages = %v, want %v", got, want)
			}
			if resp.HasMore || resp.ResponseMetaData.NextCursor != "" {
				t.Fatalf("has_more = %v, next_cursor = %q, want false and empty", resp.HasMore, resp.ResponseMetaData.NextCursor)
			}
		})
	}
}

func TestHistoryLimitDefaultMaxAndCap(t *testing.T) {
	s, api := newFake(t, Options{})
	post(t, s, "C1", 1200)
	if n := len(history(t, api, slack.GetConversationHistoryParameters{}).Messages); n != 100 {
		t.Errorf("no limit: %d messages, want the default 100", n)
	}
	if n := len(history(t, api, slack.GetConversationHistoryParameters{Limit: 5000}).Messages); n != 999 {
		t.Errorf("limit 5000: %d messages, want the maximum 999", n)
	}
	if n := len(history(t, api, slack.GetConversationHistoryParameters{Limit: 7}).Messages); n != 7 {
		t.Errorf("limit 7: %d messages", n)
	}

	capped, capi := newFake(t, Options{PageCap: 15})
	post(t, capped, "C1", 40)
	resp := history(t, capi, slack.GetConversationHistoryParameters{Limit: 999})
	if len(resp.Messages) != 15 || !resp.HasMore || resp.ResponseMetaData.NextCursor == "" {
		t.Errorf("PageCap 15, limit 999: %d messages, has_more %v, cursor %q; want 15, true, a cursor",
			len(resp.Messages), resp.HasMore, resp.ResponseMetaData.NextCursor)
	}
}

func TestHistoryCursorPagination(t *testing.T) {
	s, api := newFake(t, Options{PageCap: 15})
	ts := post(t, s, "C1", 50)
	oldest := string(ts[4]) // window: ts[5..49], 45 messages, 3 pages of 15
	var got []string
	cursor, pages := "", 0
	for {
		resp := history(t, api, slack.GetConversationHistoryParameters{Oldest: oldest, Limit: 999, Cursor: cursor})
		pages++
		got = append(got, tsList(resp.Messages)...)
		cursor = resp.ResponseMetaData.NextCursor
		if (cursor != "") != resp.HasMore {
			t.Fatalf("page %d: has_more %v but next_cursor %q", pages, resp.HasMore, cursor)
		}
		if cursor == "" {
			break
		}
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
	}
	if pages != 3 || len(got) != 45 {
		t.Fatalf("%d pages, %d messages; want 3 pages of 15", pages, len(got))
	}
	for i, g := range got {
		if g != string(ts[49-i]) {
			t.Fatalf("message %d = %s, want %s (newest first, each once)", i, g, ts[49-i])
		}
	}

	// The last page carries the key with "".
	r := rawCall(t, s, "conversations.history", url.Values{"channel": {"C1"}, "oldest": {string(ts[44])}})
	meta, ok := r.json["response_metadata"].(map[string]any)
	if !ok || meta["next_cursor"] != "" {
		t.Fatalf("last page response_metadata = %v, want {\"next_cursor\":\"\"}", r.json["response_metadata"])
	}
}

func TestHistoryGarbageCursorIsInvalidCursor(t *testing.T) {
	s, api := newFake(t, Options{})
	post(t, s, "C1", 3)
	for _, c := range []string{"garbage", "bmV4dF90czp4eXo=" /* next_ts:xyz */, "dGVhbTpDMQ==" /* team:C1 */} {
		_, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1", Cursor: c})
		wantCode(t, err, "invalid_cursor")
	}
}

func TestHistoryBadTimestamps(t *testing.T) {
	_, api := newFake(t, Options{})
	_, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1", Oldest: "yesterday"})
	wantCode(t, err, "invalid_ts_oldest")
	_, err = api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1", Latest: "1.2.3"})
	wantCode(t, err, "invalid_ts_latest")
}

func TestHistoryShowsBroadcastsNotPlainReplies(t *testing.T) {
	s, api := newFake(t, Options{})
	parent := post(t, s, "C1", 1)[0]
	plain := mustTS(t)(s.Reply("C1", parent, "U2", "in thread only"))
	bc := mustTS(t)(s.ReplyBroadcast("C1", parent, "U2", "also in channel"))
	got := tsList(history(t, api, slack.GetConversationHistoryParameters{}).Messages)
	if !slices.Equal(got, []string{string(bc), string(parent)}) {
		t.Fatalf("history = %v, want the broadcast %s and the parent %s, not the plain reply %s", got, bc, parent, plain)
	}
	msgs, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: string(parent)})
	must(t, err)
	if !slices.Equal(tsList(msgs), []string{string(parent), string(plain), string(bc)}) {
		t.Fatalf("replies = %v, want parent, plain reply, broadcast", tsList(msgs))
	}
	b := msgs[2]
	if b.SubType != "thread_broadcast" || b.ThreadTimestamp != string(parent) {
		t.Fatalf("broadcast in thread: subtype %q thread_ts %q", b.SubType, b.ThreadTimestamp)
	}
}

func TestHiddenMessagesAreNeverReturned(t *testing.T) {
	s, api := newFake(t, Options{})
	ts := post(t, s, "C1", 4)
	must(t, s.Edit("C1", ts[0], "edited"))
	must(t, s.Delete("C1", ts[1]))
	r := mustTS(t)(s.Reply("C1", ts[2], "U2", "reply"))
	must(t, s.Delete("C1", r))
	for _, m := range history(t, api, slack.GetConversationHistoryParameters{}).Messages {
		if m.Hidden || m.SubType == "message_changed" || m.SubType == "message_deleted" || m.SubType == "message_replied" {
			t.Fatalf("history returned a hidden message: %+v", m.Msg)
		}
		if m.Timestamp == string(ts[1]) {
			t.Fatalf("history returned the deleted message %s", ts[1])
		}
	}
}
