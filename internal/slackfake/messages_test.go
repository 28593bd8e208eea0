package slackfake

import (
	"net/url"
	"slices"
	"testing"

	"github.com/slack-go/slack"
)

func TestEditKeepsTSAndSetsEdited(t *testing.T) {
	c := &clock{t: t0}
	s, api := newFake(t, Options{Now: c.now})
	ts := post(t, s, "C1", 1)[0]
	c.advance(90e9)
	must(t, s.Edit("C1", ts, "fixed typo"))
	m := history(t, api, slack.GetConversationHistoryParameters{}).Messages[0]
	if m.Timestamp != string(ts) || m.Text != "fixed typo" {
		t.Fatalf("edited message ts %q text %q", m.Timestamp, m.Text)
	}
	if m.Edited == nil || m.Edited.User != "U1" || m.Edited.Timestamp != "1796032890.000000" {
		t.Fatalf("edited = %+v, want {U1 1796032890.000000}", m.Edited)
	}
}

func TestReactionsSkinTonesTruncationAndAbsentKey(t *testing.T) {
	s, api := newFake(t, Options{ReactionUsersCap: 3})
	ts := post(t, s, "C1", 1)[0]

	r := rawCall(t, s, "conversations.history", url.Values{"channel": {"C1"}})
	if _, ok := r.json["messages"].([]any)[0].(map[string]any)["reactions"]; ok {
		t.Fatal("a message without reactions has a reactions key")
	}

	for _, u := range []string{"U1", "U2", "U3", "U4", "U5"} {
		must(t, s.React("C1", ts, u, "thumbsup"))
	}
	must(t, s.React("C1", ts, s.BotUserID(), "thumbsup")) // 6th: beyond the cap
	must(t, s.React("C1", ts, "U2", "thumbsup::skin-tone-2"))
	must(t, s.React("C1", ts, "U2", "thumbsup::skin-tone-2")) // twice: no-op
	m := history(t, api, slack.GetConversationHistoryParameters{}).Messages[0]
	if len(m.Reactions) != 2 {
		t.Fatalf("reactions = %+v, want thumbsup and thumbsup::skin-tone-2", m.Reactions)
	}
	up, tone := m.Reactions[0], m.Reactions[1]
	if up.Name != "thumbsup" || up.Count != 6 || !slices.Equal(up.Users, []string{"U1", "U2", s.BotUserID()}) {
		t.Fatalf("thumbsup = %+v, want count 6 and 3 users ending with the own bot user", up)
	}
	if tone.Name != "thumbsup::skin-tone-2" || tone.Count != 1 || !slices.Equal(tone.Users, []string{"U2"}) {
		t.Fatalf("skin tone = %+v", tone)
	}

	must(t, s.Unreact("C1", ts, "U2", "thumbsup::skin-tone-2"))
	must(t, s.Unreact("C1", ts, "U1", "thumbsup"))
	m = history(t, api, slack.GetConversationHistoryParameters{}).Messages[0]
	if len(m.Reactions) != 1 || m.Reactions[0].Count != 5 {
		t.Fatalf("after unreact: %+v, want thumbsup with count 5", m.Reactions)
	}
	for _, u := range []string{"U2", "U3", "U4", "U5", s.BotUserID()} {
		must(t, s.Unreact("C1", ts, u, "thumbsup"))
	}
	r = rawCall(t, s, "conversations.history", url.Values{"channel": {"C1"}})
	if _, ok := r.json["messages"].([]any)[0].(map[string]any)["reactions"]; ok {
		t.Fatal("the reactions key stays after the last reaction was removed")
	}
}

func TestBotMessageShapes(t *testing.T) {
	s, api := newFake(t, Options{})
	must(t, s.AddBot(Bot{ID: "B1", UserID: "UB1", Name: "deploybot", AppID: "A1"}))
	must(t, s.AddBot(Bot{ID: "B2", Name: "webhook"}))
	app := mustTS(t)(s.PostAsAppBot("C1", "B1", "deployed"))
	classic := mustTS(t)(s.PostAsClassicBot("C1", "B2", "jenkins", "build green"))
	own := mustTS(t)(s.PostAsAppBot("C1", s.BotID(), "from us"))

	byTS := map[string]slack.Message{}
	for _, m := range history(t, api, slack.GetConversationHistoryParameters{}).Messages {
		byTS[m.Timestamp] = m
	}
	a := byTS[string(app)]
	if a.User != "UB1" || a.BotID != "B1" || a.SubType != "" || a.BotProfile == nil || a.BotProfile.Name != "deploybot" {
		t.Fatalf("app bot message = %+v", a.Msg)
	}
	c := byTS[string(classic)]
	if c.User != "" || c.BotID != "B2" || c.SubType != "bot_message" || c.Username != "jenkins" {
		t.Fatalf("classic bot message = %+v", c.Msg)
	}
	o := byTS[string(own)]
	if o.BotID != s.BotID() || o.User != s.BotUserID() {
		t.Fatalf("own bot message = %+v", o.Msg)
	}
	if _, err := s.PostAsAppBot("C1", "B2", "x"); err == nil {
		t.Fatal("PostAsAppBot with a classic bot succeeded")
	}
}

func TestUsersInfoNamesRenameAndDeactivation(t *testing.T) {
	s, api := newFake(t, Options{})
	u, err := api.GetUserInfo("U1")
	must(t, err)
	if u.Profile.DisplayName != "avery" || u.Profile.RealName != "Avery Example" || u.RealName != "Avery Example" || u.Deleted {
		t.Fatalf("users.info U1 = %+v", u)
	}
	must(t, s.RenameUser("U1", "ave", "Avery Renamed"))
	u, err = api.GetUserInfo("U1")
	must(t, err)
	if u.Profile.DisplayName != "ave" || u.Profile.RealName != "Avery Renamed" {
		t.Fatalf("after rename: %+v", u.Profile)
	}

	must(t, s.DeactivateUser("U2"))
	r := rawCall(t, s, "users.info", url.Values{"user": {"U2"}})
	user := r.json["user"].(map[string]any)
	if user["deleted"] != true {
		t.Fatalf("deactivated user: deleted = %v", user["deleted"])
	}
	if _, ok := user["real_name"]; ok {
		t.Fatalf("deactivated user has a top-level real_name: %s", r.body)
	}
	if user["profile"].(map[string]any)["real_name"] != "Bee Example" {
		t.Fatalf("deactivated user's profile lost its real_name: %s", r.body)
	}

	_, err = api.GetUserInfo("U404")
	wantCode(t, err, "user_not_found")
	_, err = api.GetUserInfo(s.BotID())
	wantCode(t, err, "user_not_found")
}

func TestAuthTestIdentityAndScopesHeader(t *testing.T) {
	s, api := newFake(t, Options{})
	a, err := api.AuthTest()
	must(t, err)
	if a.UserID != s.BotUserID() || a.BotID != s.BotID() || a.TeamID != s.TeamID() {
		t.Fatalf("auth.test = %+v", a)
	}
	if got := a.Header.Get("X-OAuth-Scopes"); got != "channels:history,channels:read,groups:history,groups:read,im:history,im:read,mpim:history,mpim:read,reactions:read,users:read" {
		t.Fatalf("X-OAuth-Scopes = %q", got)
	}
	s.RevokeScope("im:history")
	a, err = api.AuthTest()
	must(t, err)
	if got := a.Header.Get("X-OAuth-Scopes"); got != "channels:history,channels:read,groups:history,groups:read,im:read,mpim:history,mpim:read,reactions:read,users:read" {
		t.Fatalf("after RevokeScope: X-OAuth-Scopes = %q", got)
	}
}

func TestUserMessagesCarryBlocksUnlessOmitted(t *testing.T) {
	for _, omit := range []bool{false, true} {
		s, api := newFake(t, Options{OmitBlocks: omit})
		post(t, s, "C1", 1)
		m := history(t, api, slack.GetConversationHistoryParameters{}).Messages[0]
		if got := len(m.Blocks.BlockSet) > 0; got == omit {
			t.Fatalf("OmitBlocks %v: blocks present = %v", omit, got)
		}
		if !omit && m.ClientMsgID == "" {
			t.Fatal("a user message without client_msg_id")
		}
	}
}
