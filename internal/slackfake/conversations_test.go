package slackfake

import (
	"slices"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// workspace adds one conversation of every kind to s (C1 general exists already).
func workspace(t *testing.T, s *Server) {
	t.Helper()
	out := PublicChannel("C2", "outside")
	out.BotMember = false
	secret := PrivateChannel("G9", "secret")
	secret.BotMember = false
	for _, c := range []Conversation{
		out, PrivateChannel("C3", "private"), DirectMessage("D1", "U1"), GroupDM("G1", "mpdm-a--b-1"), secret,
	} {
		must(t, s.AddConversation(c))
	}
}

func TestConversationsInfoFlagsPerType(t *testing.T) {
	s, api := newFake(t, Options{})
	workspace(t, s)
	want := map[string]string{
		"C1": readmodel.TypePublicChannel, "C2": readmodel.TypePublicChannel,
		"C3": readmodel.TypePrivateChannel, "D1": readmodel.TypeIM, "G1": readmodel.TypeMPIM,
	}
	for id, typ := range want {
		ch, err := api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: id})
		must(t, err)
		if got := readmodel.TypeFromFlags(ch.IsIM, ch.IsMpIM, ch.IsPrivate); got != typ {
			t.Errorf("%s: type from flags = %s, want %s", id, got, typ)
		}
	}
	c2, _ := api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "C2"})
	if c2.IsMember || c2.Name != "outside" || !c2.IsChannel {
		t.Errorf("C2 = member %v name %q is_channel %v", c2.IsMember, c2.Name, c2.IsChannel)
	}
	d1, _ := api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "D1"})
	if d1.User != "U1" {
		t.Errorf("IM user = %q", d1.User)
	}

	must(t, s.Archive("C1"))
	c1, _ := api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "C1"})
	if !c1.IsArchived {
		t.Error("archived channel: is_archived false")
	}
	if _, err := s.Post("C1", "U1", "x"); err == nil {
		t.Error("posting to an archived channel succeeded")
	}
	must(t, s.Unarchive("C1"))
	c1, _ = api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "C1"})
	if c1.IsArchived {
		t.Error("unarchived channel: is_archived true")
	}

	_, err := api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "G9"})
	wantCode(t, err, "channel_not_found")
	_, err = api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "C404"})
	wantCode(t, err, "channel_not_found")
}

func TestConversationsListAndUsersConversations(t *testing.T) {
	s, api := newFake(t, Options{})
	workspace(t, s)
	all := []string{"public_channel", "private_channel", "im", "mpim"}
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		chans, next, err := api.GetConversations(&slack.GetConversationsParameters{Types: all, Limit: 2, Cursor: cursor})
		must(t, err)
		for _, c := range chans {
			ids = append(ids, c.ID)
		}
		if cursor = next; cursor == "" {
			break
		}
		if pages > 10 {
			t.Fatal("conversations.list does not end")
		}
	}
	if !slices.Equal(ids, []string{"C1", "C2", "C3", "D1", "G1"}) {
		t.Fatalf("conversations.list = %v, want every visible conversation (not G9)", ids)
	}

	chans, next, err := api.GetConversationsForUser(&slack.GetConversationsForUserParameters{Types: all})
	must(t, err)
	ids = nil
	for _, c := range chans {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []string{"C1", "C3", "D1", "G1"}) || next != "" {
		t.Fatalf("users.conversations = %v (cursor %q), want the bot's conversations", ids, next)
	}

	chans, _, err = api.GetConversationsForUser(&slack.GetConversationsForUserParameters{})
	must(t, err)
	if len(chans) != 1 || chans[0].ID != "C1" {
		t.Fatalf("users.conversations default types = %v, want public channels only", chans)
	}

	s.RevokeScope("im:read")
	_, _, err = api.GetConversationsForUser(&slack.GetConversationsForUserParameters{Types: []string{"im"}})
	wantCode(t, err, "missing_scope")
	if slackErr(err).Needed != "im:read" {
		t.Fatalf("needed = %q, want im:read", slackErr(err).Needed)
	}
}
