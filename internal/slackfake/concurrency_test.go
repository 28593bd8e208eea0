package slackfake

import (
	"sync"
	"testing"

	"github.com/slack-go/slack"
)

// TestConcurrentRequestsAndMutations drives requests and mutations at once; run with
// -race to check the locking.
func TestConcurrentRequestsAndMutations(t *testing.T) {
	c := &clock{t: t0}
	s := New(Options{Now: c.now, PageCap: 50})
	Generate(s, 3, Small)
	ids := s.ConversationIDs()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			api := clientFor(s)
			for i := 0; i < 50; i++ {
				ch := ids[(w+i)%len(ids)]
				resp, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: ch})
				if err == nil {
					for _, m := range resp.Messages {
						if m.ReplyCount > 0 {
							api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: ch, Timestamp: m.Timestamp})
							break
						}
					}
				}
				s.Truth()
			}
		}()
	}
	m := NewMutator(s, 1)
	m.Disruptive = true
	for i := 0; i < 500; i++ {
		m.Step()
	}
	wg.Wait()
}
