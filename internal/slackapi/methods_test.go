package slackapi

import (
	"net/http"
	"reflect"
	"testing"
	"testing/synctest"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

func TestAuthTestReadsIdentityAndScopesHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("auth.test", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-OAuth-Scopes", "channels:history, groups:history ,im:history,")
			writeJSON(w, mustRead(t, "testdata/auth.test.success_with_bot_token.json"))
		})
		c := newTestClient(t, f, nil)
		id, err := c.AuthTest(bg)
		if err != nil {
			t.Fatal(err)
		}
		if id.TeamID != "T0G9PQBBK" || id.UserID != "W23456789" || id.BotID != "BZYBOTHED" {
			t.Errorf("identity = %+v", id)
		}
		if want := []string{"channels:history", "groups:history", "im:history"}; !reflect.DeepEqual(id.Scopes, want) {
			t.Errorf("scopes = %q, want %q", id.Scopes, want)
		}
		if id.CheckAt.IsZero() {
			t.Error("CheckAt not set")
		}
	})
}

func TestAuthTestInvalidAuthIsClassToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("auth.test", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, `{"ok":false,"error":"invalid_auth"}`) })
		c := newTestClient(t, f, nil)
		_, err := c.AuthTest(bg)
		if readmodel.ClassOf(err) != readmodel.ClassToken {
			t.Errorf("err = %v, want ClassToken", err)
		}
	})
}

func TestUserInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("users.info", func(w http.ResponseWriter, r *http.Request) {
			switch r.PostForm.Get("user") {
			case "W012A3CDE":
				writeJSON(w, mustRead(t, "testdata/users.info.success.json"))
			case "UOLD":
				writeJSON(w, `{"ok":true,"user":{"id":"UOLD","real_name":"Old Timer","deleted":true,"profile":{}}}`)
			case "UHIDDEN":
				writeJSON(w, `{"ok":false,"error":"user_not_visible"}`)
			default:
				writeJSON(w, `{"ok":false,"error":"user_not_found"}`)
			}
		})
		c := newTestClient(t, f, nil)
		u, err := c.UserInfo(bg, "W012A3CDE")
		if err != nil {
			t.Fatal(err)
		}
		if u.ID != "W012A3CDE" || u.DisplayName != "spengler" || u.RealName != "Egon Spengler" || u.Deleted || u.LookupError != "" {
			t.Errorf("user = %+v", u)
		}
		u, err = c.UserInfo(bg, "UOLD")
		if err != nil {
			t.Fatal(err)
		}
		if u.RealName != "Old Timer" || !u.Deleted || u.DisplayName != "" {
			t.Errorf("user without profile names = %+v, want real_name fallback and deleted", u)
		}
		for id, code := range map[string]string{"UGONE": "user_not_found", "UHIDDEN": "user_not_visible"} {
			u, err = c.UserInfo(bg, id)
			if err != nil || u.ID != id || u.LookupError != code {
				t.Errorf("UserInfo(%s) = %+v, %v; want LookupError %s and nil error", id, u, err, code)
			}
		}
	})
}

func TestConversationInfoFlags(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.info", func(w http.ResponseWriter, r *http.Request) {
			switch r.PostForm.Get("channel") {
			case "C012AB3CD":
				writeJSON(w, mustRead(t, "testdata/conversations.info.success.json"))
			case "D1":
				writeJSON(w, mustRead(t, "testdata/conversations.info.success_im.json"))
			default:
				writeJSON(w, `{"ok":true,"channel":{"id":"G1","name":"secret","is_private":true,"is_mpim":true,"is_archived":true,"is_member":true}}`)
			}
		})
		c := newTestClient(t, f, nil)
		info, err := c.ConversationInfo(bg, "C012AB3CD")
		if err != nil {
			t.Fatal(err)
		}
		if info.ID != "C012AB3CD" || info.Name != "general" || info.Type() != readmodel.TypePublicChannel || info.IsArchived {
			t.Errorf("public = %+v", info)
		}
		info, err = c.ConversationInfo(bg, "D1")
		if err != nil {
			t.Fatal(err)
		}
		if !info.IsIM || info.Type() != readmodel.TypeIM {
			t.Errorf("im = %+v", info)
		}
		info, err = c.ConversationInfo(bg, "G1")
		if err != nil {
			t.Fatal(err)
		}
		want := readmodel.ConversationInfo{ID: "G1", Name: "secret", IsMPIM: true, IsPrivate: true, IsArchived: true, IsMember: true}
		if info != want {
			t.Errorf("mpim = %+v, want %+v", info, want)
		}
	})
}

func TestMemberConversations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("users.conversations", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, mustRead(t, "testdata/users.conversations.success.json"))
		})
		c := newTestClient(t, f, nil)
		convs, next, err := c.MemberConversations(bg, []string{readmodel.TypePrivateChannel, readmodel.TypeIM}, "cur0")
		if err != nil {
			t.Fatal(err)
		}
		if len(convs) != 2 || convs[0].ID != "C012AB3CD" || convs[1].Name != "random" || !convs[0].IsMember {
			t.Errorf("conversations = %+v", convs)
		}
		if next != "dGVhbTpDMDYxRkE1UEI=" {
			t.Errorf("next = %q", next)
		}
		form := f.requests("users.conversations")[0].form
		for k, want := range map[string]string{"types": "private_channel,im", "limit": "200", "exclude_archived": "true", "cursor": "cur0"} {
			if got := form.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		if _, _, err := c.MemberConversations(bg, []string{"channel"}, ""); err == nil {
			t.Error("unknown type accepted")
		}
		if n := len(f.requests("users.conversations")); n != 1 {
			t.Errorf("%d requests, want 1 (no request for an unknown type)", n)
		}
	})
}

func TestMessageConversion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, `{"ok":true,"messages":[
 {"type":"message","user":"U1","text":"parent","ts":"1700000000.000100","thread_ts":"1700000000.000100",
  "reply_count":2,"latest_reply":"1700000050.000200","edited":{"user":"U1","ts":"1700000010.000000"},
  "reactions":[{"name":"thumbsup::skin-tone-2","count":3,"users":["U1","U2"]}]},
 {"type":"message","subtype":"bot_message","bot_id":"B1","username":"deploybot","text":"built","ts":"1700000001.000000","reactions":[]},
 {"type":"message","subtype":"bot_message","bot_id":"B2","bot_profile":{"id":"B2","name":"ci"},"text":"ok","ts":"1700000002.000000"},
 {"type":"message","subtype":"tombstone","user":"USLACKBOT","text":"This message was deleted.","ts":"1700000003.000000","thread_ts":"1700000003.000000","reply_count":1,"latest_reply":"1700000004.000000"}
],"response_metadata":{"next_cursor":""}}`)
		})
		c := newTestClient(t, f, nil)
		page, err := c.History(bg, historyReq(""))
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Messages) != 4 {
			t.Fatalf("%d messages", len(page.Messages))
		}
		want := readmodel.Message{
			Channel: "C1", TS: "1700000000.000100", ThreadTS: "1700000000.000100", User: "U1", Text: "parent",
			Edited:     &readmodel.Edited{User: "U1", TS: "1700000010.000000"},
			Reactions:  []readmodel.Reaction{{Name: "thumbsup::skin-tone-2", Count: 3, Users: []string{"U1", "U2"}}},
			ReplyCount: 2, LatestReply: "1700000050.000200",
		}
		if !reflect.DeepEqual(page.Messages[0], want) {
			t.Errorf("parent =\n%+v\nwant\n%+v", page.Messages[0], want)
		}
		bot := page.Messages[1]
		if bot.BotID != "B1" || bot.BotName != "deploybot" || bot.Subtype != "bot_message" || bot.Edited != nil {
			t.Errorf("bot message = %+v", bot)
		}
		if bot.Reactions == nil || len(bot.Reactions) != 0 {
			t.Errorf("reactions [] = %#v, want empty", bot.Reactions)
		}
		if page.Messages[2].BotName != "ci" {
			t.Errorf("bot_profile name = %q, want ci", page.Messages[2].BotName)
		}
		if page.Messages[2].Reactions != nil {
			t.Errorf("absent reactions = %#v, want nil", page.Messages[2].Reactions)
		}
		tomb := page.Messages[3]
		if tomb.Subtype != readmodel.SubtypeTombstone || tomb.ReplyCount != 1 || tomb.LatestReply != "1700000004.000000" {
			t.Errorf("tombstone = %+v", tomb)
		}
	})
}
