package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/mcp"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// private are the strings that give a DM or group DM away: their IDs and the word
// every one of their messages holds.
var private = []string{readfixture.DM, readfixture.GroupDM, readfixture.DMKeyword, readfixture.DMRecord}

// everyAnswer calls every tool and reads every resource an agent could reach
// without naming a private conversation, plus the calls that name one, and returns
// every answer's text (tool errors included).
func everyAnswer(t *testing.T, e *env, cs *sdk.ClientSession) map[string]string {
	t.Helper()
	f := e.f
	ctx := context.Background()
	out := map[string]string{}
	call := func(label, tool string, args map[string]any) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			out[label] = "error: " + err.Error()
			return
		}
		raw, _ := json.Marshal(res)
		out[label] = string(raw)
	}
	call("list_conversations", "list_conversations", map[string]any{"limit": 1000})
	call("freshness", "freshness", nil)
	call("changes_since", "changes_since", map[string]any{"seq": 0, "limit": 500})
	call("changes_since kinds", "changes_since", map[string]any{"seq": 0, "kinds": []string{"reaction_added", "message_edited"}})
	for _, ch := range []string{readfixture.DM, readfixture.GroupDM} {
		call("read_conversation "+ch, "read_conversation", map[string]any{"channel": ch})
		call("changes_since channel "+ch, "changes_since", map[string]any{"channel": ch})
		call("resource "+ch, "", nil)
	}
	call("changes_since record", "changes_since", map[string]any{"record": readfixture.DMRecord})
	call("search_messages", "search_messages", map[string]any{"query": readfixture.DMKeyword, "limit": 100})
	call("search_messages salary", "search_messages", map[string]any{"query": "salary"})
	call("search_messages in the DM", "search_messages", map[string]any{"query": readfixture.DMKeyword, "channel": readfixture.DM})
	call("get_message by ts", "get_message", map[string]any{"channel": readfixture.DM, "ts": string(f.DMParent)})
	call("get_message by link", "get_message", map[string]any{"link": link(readfixture.DM, f.DMReply)})
	call("get_message by record", "get_message", map[string]any{"record": readfixture.DMRecord})
	call("read_thread by record", "read_thread", map[string]any{"record": readfixture.DMRecord})
	call("read_thread by link", "read_thread", map[string]any{"link": link(readfixture.DM, f.DMReply)})
	call("read_thread of the group DM", "read_thread", map[string]any{"channel": readfixture.GroupDM, "ts": string(f.GroupDMMessage)})
	delete(out, "resource "+readfixture.DM)
	delete(out, "resource "+readfixture.GroupDM)
	for _, uri := range []string{
		"slackpoll://conversations/" + readfixture.DM,
		"slackpoll://conversations/" + readfixture.GroupDM,
		"slackpoll://conversations/" + readfixture.DM + "/messages/" + string(f.DMParent),
		"slackpoll://conversations/" + readfixture.General,
		"slackpoll://conversations/" + readfixture.General + "/messages/" + string(f.Parent),
	} {
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil {
			out["resource "+uri] = "error: " + err.Error()
			continue
		}
		raw, _ := json.Marshal(res)
		out["resource "+uri] = string(raw)
	}
	var templates []string
	for rt, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, rt.URITemplate)
	}
	out["resource templates"] = strings.Join(templates, " ")
	return out
}

// With the default policy a DM or group DM never appears: not in any tool's answer,
// resource, change or thread, even when named by ID, link or record key; and the
// same calls show them once the policy lists them (so the first half can fail).
func TestDMsAreNeverExposedUnlessListed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  mcp.Policy
		exposed bool
	}{
		{"default policy", mcp.Policy{}, false},
		{"listed", mcp.Policy{Conversations: []string{readfixture.General, readfixture.DM, readfixture.GroupDM}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.policy)
			e.changeTheWorkspace(t)
			// The feed does hold changes of the DM and the group DM.
			var held int
			_ = e.f.Store.View(func(tx rm.Tx) error {
				p, err := changefeed.Read(tx, 0, 1000, rm.ChangeFilter{Channels: []string{readfixture.DM, readfixture.GroupDM}})
				held = len(p.Changes)
				return err
			})
			if held == 0 {
				t.Fatal("the tick recorded no change of the DM or the group DM: the test would prove nothing")
			}
			for _, tr := range transports {
				cs := e.connect(t, tr, nil)
				answers := everyAnswer(t, e, cs)
				leaked := map[string]bool{}
				for label, text := range answers {
					for _, p := range private {
						if strings.Contains(text, p) && !strings.Contains(label, p) && !isRefusal(text) {
							leaked[p] = true
							if !tc.exposed {
								t.Errorf("%s: %s shows %q:\n%.600s", tr, label, p, text)
							}
						}
					}
				}
				if tc.exposed {
					for _, p := range []string{readfixture.DM, readfixture.GroupDM, readfixture.DMKeyword} {
						if !leaked[p] {
							t.Errorf("%s: with the DMs listed, no answer shows %q", tr, p)
						}
					}
					for _, label := range []string{"read_thread by record", "get_message by link", "changes_since channel " + readfixture.DM, "search_messages in the DM"} {
						if isRefusal(answers[label]) {
							t.Errorf("%s: with the DMs listed, %s is refused: %.300s", tr, label, answers[label])
						}
					}
				} else {
					for label, text := range answers {
						if (strings.Contains(label, readfixture.DM) || strings.Contains(label, "by record") ||
							strings.Contains(label, "link") || strings.Contains(label, "group DM") || strings.Contains(label, "by ts")) && !isRefusal(text) {
							t.Errorf("%s: %s is answered, want it refused: %.300s", tr, label, text)
						}
					}
				}
			}
		})
	}
}

// isRefusal reports whether an answer is a tool error, a protocol error or a
// resource not found.
func isRefusal(text string) bool {
	return strings.HasPrefix(text, "error: ") || strings.Contains(text, `"isError":true`)
}

// A DM cannot be subscribed to; a subscribed channel's resources are notified when
// the feed records a change of them, and a change of a DM notifies nothing.
func TestSubscriptionsNotifyChangesOfExposedConversationsOnly(t *testing.T) {
	e := newEnv(t, mcp.Policy{})
	f := e.f
	updated := make(chan string, 16)
	cs := e.connect(t, "stdio", &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	ctx := context.Background()
	dmURI := "slackpoll://conversations/" + readfixture.DM
	// The server refuses it. (Under protocol 2026-07-28 the SDK's client does not
	// return the refusal of a subscriptions/listen: what counts is that nothing of
	// the DM is ever notified, checked below.)
	_ = cs.Subscribe(ctx, &sdk.SubscribeParams{URI: dmURI})
	general := "slackpoll://conversations/" + readfixture.General
	plain := general + "/messages/" + string(f.Plain)
	own := general + "/messages/" + string(f.Own)
	for _, uri := range []string{general, plain, own} {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	time.Sleep(100 * time.Millisecond) // the follower notes where the feed stands
	e.changeTheWorkspace(t)            // a reaction on Plain, changes in the DMs
	got := map[string]bool{}
	deadline := time.After(10 * time.Second)
	for !got[general] || !got[plain] {
		select {
		case uri := <-updated:
			got[uri] = true
		case <-deadline:
			t.Fatalf("notified of %v, want %s and %s", got, general, plain)
		}
	}
	time.Sleep(200 * time.Millisecond)
	close(updated)
	for uri := range updated {
		got[uri] = true
	}
	for uri := range got {
		if uri != general && uri != plain {
			t.Errorf("notified of %s, which did not change or is not subscribed", uri)
		}
	}
}
