package mcp_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slackpoll/slackpoll/internal/mcp"
	"github.com/slackpoll/slackpoll/internal/projection"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// hitChannels returns the conversations of a search's hits, sorted and without
// repeats.
func hitChannels(hits []mcp.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Channel)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Search hits come from the exposed conversations only. The projection holds the
// DM's and the group DM's messages (a search the server does not restrict finds
// them), yet search_messages returns none of them unless the policy lists the
// conversation: not for a word only they hold, nor for one they share with a
// channel, nor when the conversation is named; a listed DM is searched like a
// channel. Over both transports.
func TestSearchHitsComeFromExposedConversationsOnly(t *testing.T) {
	const shared = "deploy" // in General's parent and in the group DM's message
	for _, tc := range []struct {
		name   string
		policy mcp.Policy
		// keyword and shared are the conversations search_messages finds each in.
		keyword, shared []string
	}{
		{"default policy", mcp.Policy{}, nil, []string{readfixture.General}},
		{"DM listed", mcp.Policy{Conversations: []string{readfixture.General, readfixture.DM}},
			[]string{readfixture.DM}, []string{readfixture.General}},
		{"both listed", mcp.Policy{Conversations: []string{readfixture.General, readfixture.DM, readfixture.GroupDM}},
			[]string{readfixture.DM, readfixture.GroupDM}, []string{readfixture.General, readfixture.GroupDM}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.policy)
			// Unrestricted, the projection finds the private messages: what follows
			// can fail.
			for q, want := range map[string][]string{
				readfixture.DMKeyword: {readfixture.DM, readfixture.GroupDM},
				shared:                {readfixture.General, readfixture.GroupDM},
			} {
				p, err := e.proj.Search(context.Background(), projection.Query{Q: q, Limit: 100}, projection.Freshness{})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, h := range p.Items {
					got = append(got, h.Channel)
				}
				slices.Sort(got)
				if got = slices.Compact(got); !slices.Equal(got, want) {
					t.Fatalf("the projection finds %q in %v, want %v: the test would prove nothing", q, got, want)
				}
			}
			for _, tr := range transports {
				cs := e.connect(t, tr, nil)
				s := toolSchemas(t, cs)
				for q, want := range map[string][]string{readfixture.DMKeyword: tc.keyword, shared: tc.shared} {
					var out mcp.SearchOutput
					s.call(t, cs, "search_messages", map[string]any{"query": q, "limit": 100}, &out)
					if got := hitChannels(out.Hits); !slices.Equal(got, want) {
						t.Errorf("%s: search_messages %q finds hits in %v, want %v", tr, q, got, want)
					}
				}
				for _, ch := range []string{readfixture.DM, readfixture.GroupDM} {
					args := map[string]any{"query": readfixture.DMKeyword, "channel": ch}
					if slices.Contains(tc.keyword, ch) {
						var out mcp.SearchOutput
						s.call(t, cs, "search_messages", args, &out)
						if got := hitChannels(out.Hits); !slices.Equal(got, []string{ch}) {
							t.Errorf("%s: search_messages in %s, listed, finds hits in %v", tr, ch, got)
						}
						continue
					}
					if got := callErr(t, cs, "search_messages", args); !strings.Contains(got, "not available") || strings.Contains(got, readfixture.DMKeyword+" ") {
						t.Errorf("%s: search_messages in %s, not listed: %q, want it refused as unknown", tr, ch, got)
					}
				}
			}
		})
	}
}

// The server keeps to the exposed conversations whatever the search beneath it
// does: a searcher that drops the conversations the server asks for (as an older
// daemon's GET /v1/search would ignore several channels) still gives the agent no
// hit of a DM.
func TestSearchHitsAreFilteredWhateverTheSearcherReturns(t *testing.T) {
	var asked [][]string
	e := newEnvSearching(t, mcp.Policy{}, func(next searcher) searcher {
		return func(ctx context.Context, q projection.Query, f projection.Freshness) (projection.Page, error) {
			asked = append(asked, q.Channels)
			q.Channel, q.Channels = "", nil
			return next(ctx, q, f)
		}
	})
	for _, tr := range transports {
		cs := e.connect(t, tr, nil)
		s := toolSchemas(t, cs)
		var plain mcp.SearchOutput
		s.call(t, cs, "search_messages", map[string]any{"query": "deploy", "limit": 100}, &plain)
		if got := hitChannels(plain.Hits); !slices.Equal(got, []string{readfixture.General}) {
			t.Errorf("%s: search_messages deploy, unrestricted beneath, finds hits in %v, want [%s]", tr, got, readfixture.General)
		}
	}
	for _, chans := range asked {
		if len(chans) == 0 || slices.Contains(chans, readfixture.DM) || slices.Contains(chans, readfixture.GroupDM) {
			t.Errorf("the server asked the searcher for %v: want the exposed conversations, no DM", chans)
		}
	}
}

// With no SQL projection to search (none configured, or its file not made yet),
// search_messages says what it needs, and every other tool still answers.
func TestSearchWithoutAProjectionSaysWhatItNeeds(t *testing.T) {
	e := newEnvSearching(t, mcp.Policy{}, func(searcher) searcher {
		return func(context.Context, projection.Query, projection.Freshness) (projection.Page, error) {
			return projection.Page{}, fmt.Errorf("%w: /srv/slackpoll.sqlite: no such file", projection.ErrNoProjection)
		}
	})
	for _, tr := range transports {
		cs := e.connect(t, tr, nil)
		s := toolSchemas(t, cs)
		if got := callErr(t, cs, "search_messages", map[string]any{"query": "deploy"}); !strings.Contains(got, "needs the SQL projection") || !strings.Contains(got, "no such file") {
			t.Errorf("%s: search_messages with no projection: %q, want it to say it needs the SQL projection, and why none is open", tr, got)
		}
		var convs mcp.ListConversationsOutput
		s.call(t, cs, "list_conversations", nil, &convs)
	}
}
