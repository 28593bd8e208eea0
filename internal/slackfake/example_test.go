package slackfake_test

import (
	"fmt"

	"github.com/slack-go/slack"

	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// A fake workspace driven through the real slack-go client, in memory.
func Example() {
	fake := slackfake.New(slackfake.Options{PageCap: 15})
	fake.AddConversation(slackfake.PublicChannel("C0AAAAAAA", "deploys"))
	fake.AddUser(slackfake.User{ID: "U0AAAAAAA", DisplayName: "avery"})
	parent, _ := fake.Post("C0AAAAAAA", "U0AAAAAAA", "Deploy finished")
	fake.Reply("C0AAAAAAA", parent, "U0AAAAAAA", "thanks")

	api := slack.New(fake.Token(),
		slack.OptionAPIURL("http://slack.fake/api/"), // any URL ending in "/"
		slack.OptionHTTPClient(fake.Client()))
	resp, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C0AAAAAAA", Limit: 999})
	if err != nil {
		panic(err)
	}
	m := resp.Messages[0]
	fmt.Println(m.Text, m.ReplyCount, m.LatestReply != "", resp.ResponseMetaData.NextCursor == "")

	fake.RemoveBot("C0AAAAAAA")
	_, err = api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C0AAAAAAA"})
	fmt.Println(err)
	// Output:
	// Deploy finished 1 true true
	// not_in_channel
}
