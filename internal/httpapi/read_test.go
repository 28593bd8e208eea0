package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

type messagePage struct {
	Items      []export.MessageLine `json:"items"`
	NextCursor string               `json:"next_cursor"`
}

func TestConversationsListsStoredAndConfigured(t *testing.T) {
	e := newEnv(t, envOpts{})
	var page struct {
		Items      []export.ConversationLine `json:"items"`
		NextCursor *string                   `json:"next_cursor"`
	}
	e.get(t, "/v1/conversations", http.StatusOK, &page)
	var got [][3]string
	for _, c := range page.Items {
		got = append(got, [3]string{c.Kind, c.ID, c.Status})
	}
	want := [][3]string{
		{"conversation", readfixture.General, rm.StatusOK},
		{"conversation", readfixture.Outside, rm.StatusNotInChannel},
		{"conversation", readfixture.Secret, rm.StatusMissingScope},
	}
	if !slices.Equal(got, want) {
		t.Errorf("conversations = %v, want %v", got, want)
	}
	if page.Items[2].NeededScope != "groups:history" {
		t.Errorf("needed_scope = %q, want groups:history", page.Items[2].NeededScope)
	}
	if page.NextCursor == nil || *page.NextCursor != "" {
		t.Errorf("next_cursor = %v, want present and empty", page.NextCursor)
	}
}

func TestMessagesPagesThroughTheTimelineInTSOrder(t *testing.T) {
	e := newEnv(t, envOpts{})
	f := e.f
	all := []rm.TS{readfixture.NeverPolled, f.Parent, f.Plain, f.Own}
	var got []rm.TS
	path := "/v1/conversations/" + readfixture.General + "/messages?limit=3"
	var p1, p2 messagePage
	e.get(t, path, http.StatusOK, &p1)
	if len(p1.Items) != 3 || p1.NextCursor == "" {
		t.Fatalf("page 1: %d items, next_cursor %q; want 3 and a cursor", len(p1.Items), p1.NextCursor)
	}
	e.get(t, path+"&cursor="+url.QueryEscape(p1.NextCursor), http.StatusOK, &p2)
	if p2.NextCursor != "" {
		t.Errorf("page 2 next_cursor = %q, want \"\" on the last page", p2.NextCursor)
	}
	for _, m := range append(p1.Items, p2.Items...) {
		got = append(got, m.TS)
	}
	if !slices.Equal(got, all) {
		t.Fatalf("paged timeline = %v, want %v", got, all)
	}
	// A page that ends exactly at the last message says so with an empty cursor.
	var exact messagePage
	e.get(t, "/v1/conversations/"+readfixture.General+"/messages?limit=4", http.StatusOK, &exact)
	if len(exact.Items) != 4 || exact.NextCursor != "" {
		t.Errorf("limit=4: %d items, next_cursor %q; want 4 and \"\"", len(exact.Items), exact.NextCursor)
	}
	// The parent's line carries its thread; the reply is not a timeline line.
	parent := p1.Items[1]
	if parent.Kind != export.KindMessage || len(parent.Replies) != 1 || parent.Replies[0].TS != f.Reply {
		t.Errorf("parent line = %+v, want kind message with the one reply %s", parent, f.Reply)
	}
}

// order=desc pages from the newest message back, within latest (inclusive), and its
// cursor goes on before the last ts it returned.
func TestMessagesNewestFirstPagesBackInTime(t *testing.T) {
	e := newEnv(t, envOpts{})
	f := e.f
	path := "/v1/conversations/" + readfixture.General + "/messages?order=desc&limit=2"
	var got []rm.TS
	for cursor, pages := "", 0; ; pages++ {
		var p messagePage
		e.get(t, path+"&cursor="+url.QueryEscape(cursor), http.StatusOK, &p)
		for _, m := range p.Items {
			got = append(got, m.TS)
		}
		if cursor = p.NextCursor; cursor == "" || pages > 5 {
			break
		}
	}
	if want := []rm.TS{f.Own, f.Plain, f.Parent, readfixture.NeverPolled}; !slices.Equal(got, want) {
		t.Errorf("order=desc pages = %v, want %v", got, want)
	}
	var p messagePage
	e.get(t, path+"&latest="+string(f.Plain), http.StatusOK, &p)
	if len(p.Items) != 2 || p.Items[0].TS != f.Plain || p.Items[1].TS != f.Parent || p.NextCursor == "" {
		t.Errorf("order=desc latest=Plain = %+v, want Plain then Parent and a cursor", p)
	}
	wantErr(t, e, http.MethodGet, "/v1/conversations/"+readfixture.General+"/messages?order=sideways", nil, http.StatusBadRequest, "order")
}

func TestMessagesOldestLatestAreInclusive(t *testing.T) {
	e := newEnv(t, envOpts{})
	var page messagePage
	e.get(t, "/v1/conversations/"+readfixture.General+"/messages?oldest="+string(e.f.Parent)+"&latest="+string(e.f.Plain), http.StatusOK, &page)
	var got []rm.TS
	for _, m := range page.Items {
		got = append(got, m.TS)
	}
	if want := []rm.TS{e.f.Parent, e.f.Plain}; !slices.Equal(got, want) {
		t.Errorf("oldest..latest = %v, want %v", got, want)
	}
}

func TestMessagesLimitAboveMaxIsCapped(t *testing.T) {
	e := newEnv(t, envOpts{})
	var page messagePage
	e.get(t, "/v1/conversations/"+readfixture.General+"/messages?limit=5000", http.StatusOK, &page)
	if len(page.Items) != 4 {
		t.Errorf("limit=5000 returned %d items, want all 4", len(page.Items))
	}
}

func TestMessagesRejectsBadParameters(t *testing.T) {
	e := newEnv(t, envOpts{})
	base := "/v1/conversations/" + readfixture.General + "/messages"
	for _, tc := range []struct{ query, mention string }{
		{"?oldest=yesterday", "oldest"},
		{"?latest=1.2.3", "latest"},
		{"?limit=0", "limit"},
		{"?limit=ten", "limit"},
		{"?cursor=not-a-cursor", "cursor"},
		{"?cursor=" + url.QueryEscape("dHMxOmFiYw"), "cursor"}, // base64 of "ts1:abc"
	} {
		wantErr(t, e, http.MethodGet, base+tc.query, nil, http.StatusBadRequest, tc.mention)
	}
}

func TestMessagesOfUnknownAndPendingConversations(t *testing.T) {
	e := newEnv(t, envOpts{})
	wantErr(t, e, http.MethodGet, "/v1/conversations/C0NOWHERE/messages", nil, http.StatusNotFound, "C0NOWHERE")
	var page messagePage
	e.get(t, "/v1/conversations/"+readfixture.Outside+"/messages", http.StatusOK, &page)
	if len(page.Items) != 0 || page.Items == nil {
		t.Errorf("messages of a configured conversation never read = %v, want []", page.Items)
	}
}

func TestMessageReturnsTheExportLineWithItsThread(t *testing.T) {
	e := newEnv(t, envOpts{})
	f := e.f
	var m export.MessageLine
	e.get(t, "/v1/conversations/"+readfixture.General+"/messages/"+string(f.Parent), http.StatusOK, &m)
	if m.Text != "Deploy finished (v2)" || m.Edited == nil || m.Record != readfixture.Record || m.UserLabel != "avery" {
		t.Errorf("parent = %+v, want edited text, record and label avery", m)
	}
	if len(m.Reactions) != 1 || m.Reactions[0].Count != 2 {
		t.Errorf("reactions = %+v, want white_check_mark ×2", m.Reactions)
	}
	if len(m.Replies) != 1 || m.Replies[0].UserLabel != "Bee Example" || m.Replies[0].Text != "thanks!" {
		t.Errorf("replies = %+v, want Bee Example's edited reply", m.Replies)
	}

	var own export.MessageLine
	e.get(t, "/v1/conversations/"+readfixture.General+"/messages/"+string(f.Own), http.StatusOK, &own)
	if !own.OwnPost {
		t.Errorf("own post = false for the token's bot message")
	}

	var reply export.MessageLine
	e.get(t, "/v1/conversations/"+readfixture.General+"/messages/"+string(f.Reply), http.StatusOK, &reply)
	if reply.ThreadTS != f.Parent || reply.Text != "thanks!" {
		t.Errorf("reply line = %+v, want thread_ts %s", reply, f.Parent)
	}

	wantErr(t, e, http.MethodGet, "/v1/conversations/"+readfixture.General+"/messages/1600000000.000000", nil, http.StatusNotFound, "1600000000.000000")
	wantErr(t, e, http.MethodGet, "/v1/conversations/"+readfixture.General+"/messages/abc", nil, http.StatusBadRequest, "abc")
}

func TestRecordAndUser(t *testing.T) {
	e := newEnv(t, envOpts{})
	var m export.MessageLine
	e.get(t, "/v1/records/"+readfixture.Record, http.StatusOK, &m)
	if m.Channel != readfixture.General || m.TS != e.f.Parent {
		t.Errorf("record %s → %s %s, want %s %s", readfixture.Record, m.Channel, m.TS, readfixture.General, e.f.Parent)
	}
	wantErr(t, e, http.MethodGet, "/v1/records/ticket-0", nil, http.StatusNotFound, "ticket-0")

	var u export.UserLine
	e.get(t, "/v1/users/"+readfixture.Bee, http.StatusOK, &u)
	if u.Kind != export.KindUser || u.Label != "Bee Example" {
		t.Errorf("user = %+v, want label Bee Example", u)
	}
	wantErr(t, e, http.MethodGet, "/v1/users/U0NOBODY0", nil, http.StatusNotFound, "U0NOBODY0")
}

func TestUnknownRouteAndWrongMethodAnswerJSON(t *testing.T) {
	e := newEnv(t, envOpts{})
	wantErr(t, e, http.MethodGet, "/v2/nothing", nil, http.StatusNotFound, "no such endpoint")
	wantErr(t, e, http.MethodDelete, "/v1/conversations", nil, http.StatusMethodNotAllowed, "GET")
}
