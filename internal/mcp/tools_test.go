package mcp_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackpoll/slackpoll/internal/mcp"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

func link(channel string, ts rm.TS) string {
	return "https://acme.slack.com/archives/" + channel + "/p" + strings.Replace(string(ts), ".", "", 1)
}

func tsOf(ms []mcp.Message) []rm.TS {
	out := []rm.TS{}
	for _, m := range ms {
		out = append(out, m.TS)
	}
	return out
}

// The server lists its tools, each read-only, with input and output schemas.
func TestToolsAreListedReadOnlyWithSchemas(t *testing.T) {
	e := newEnv(t, mcp.Policy{})
	for _, tr := range transports {
		cs := e.connect(t, tr, nil)
		var names []string
		for tool, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
			if tool.InputSchema == nil || tool.OutputSchema == nil {
				t.Errorf("%s: tool %s lacks an input or output schema", tr, tool.Name)
			}
			if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
				t.Errorf("%s: tool %s is not annotated read-only", tr, tool.Name)
			}
		}
		slices.Sort(names)
		want := []string{"changes_since", "freshness", "get_message", "list_conversations", "read_conversation", "read_thread", "search_messages"}
		if !slices.Equal(names, want) {
			t.Errorf("%s: tools = %v, want %v", tr, names, want)
		}
	}
}

// Every tool with good input, on both transports: the answers match the output
// schemas (checked by call) and say what the store holds, with each message's
// freshness.
func TestToolsAnswerFromTheModel(t *testing.T) {
	e := newEnv(t, mcp.Policy{})
	f := e.f
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := e.connect(t, tr, nil)
			s := toolSchemas(t, cs)

			var convs mcp.ListConversationsOutput
			s.call(t, cs, "list_conversations", nil, &convs)
			var ids []string
			for _, c := range convs.Conversations {
				ids = append(ids, c.ID)
			}
			if want := []string{readfixture.General, readfixture.Outside, readfixture.Secret}; !slices.Equal(ids, want) || convs.TeamID != f.Fake.TeamID() {
				t.Errorf("list_conversations = %v of team %q, want %v of %s", ids, convs.TeamID, want, f.Fake.TeamID())
			}
			var page1 mcp.ListConversationsOutput
			s.call(t, cs, "list_conversations", map[string]any{"limit": 2, "team_id": f.Fake.TeamID()}, &page1)
			var page2 mcp.ListConversationsOutput
			s.call(t, cs, "list_conversations", map[string]any{"limit": 2, "cursor": page1.NextCursor}, &page2)
			if len(page1.Conversations) != 2 || page1.NextCursor == "" || len(page2.Conversations) != 1 || page2.NextCursor != "" {
				t.Errorf("list_conversations by 2: %d + %d (cursors %q, %q), want 2 + 1", len(page1.Conversations), len(page2.Conversations), page1.NextCursor, page2.NextCursor)
			}

			// Newest first, paged by a cursor, bounded by oldest and latest.
			var all []rm.TS
			cursor := ""
			for range 5 {
				var p mcp.ReadConversationOutput
				args := map[string]any{"channel": readfixture.General, "limit": 3}
				if cursor != "" {
					args["cursor"] = cursor
				}
				s.call(t, cs, "read_conversation", args, &p)
				all = append(all, tsOf(p.Messages)...)
				if cursor = p.NextCursor; cursor == "" {
					break
				}
			}
			if want := []rm.TS{f.Own, f.Plain, f.Parent, readfixture.NeverPolled}; !slices.Equal(all, want) {
				t.Errorf("read_conversation pages = %v, want %v", all, want)
			}
			var bounded mcp.ReadConversationOutput
			s.call(t, cs, "read_conversation", map[string]any{"channel": readfixture.General, "oldest": string(f.Parent), "latest": string(f.Plain)}, &bounded)
			if got := tsOf(bounded.Messages); !slices.Equal(got, []rm.TS{f.Plain, f.Parent}) {
				t.Errorf("read_conversation oldest..latest = %v, want Plain, Parent", got)
			}
			parent := bounded.Messages[1]
			if parent.Record != readfixture.Record || parent.Class != mcp.ClassWatched || parent.LastPolledAt == nil ||
				parent.ReplyCount != 1 || parent.Text != "Deploy finished (v2)" || parent.UserLabel != "avery" || len(parent.Reactions) != 1 {
				t.Errorf("the parent in read_conversation = %+v", parent)
			}
			if plain := bounded.Messages[0]; plain.Class != mcp.ClassTracked || plain.LastPolledAt == nil {
				t.Errorf("a tracked message: class %q, last_polled_at %v", plain.Class, plain.LastPolledAt)
			}

			// One message, three ways of naming it.
			for _, args := range []map[string]any{
				{"channel": readfixture.General, "ts": string(f.Parent)},
				{"link": link(readfixture.General, f.Parent)},
				{"record": readfixture.Record},
			} {
				var m mcp.GetMessageOutput
				s.call(t, cs, "get_message", args, &m)
				if m.Message.TS != f.Parent || m.Message.Class != mcp.ClassWatched || m.Message.URI != "slackpoll://conversations/"+readfixture.General+"/messages/"+string(f.Parent) {
					t.Errorf("get_message(%v) = %+v", args, m.Message)
				}
			}
			// A reply is its own message, refreshed with its thread: its class is its
			// parent's.
			var reply mcp.GetMessageOutput
			s.call(t, cs, "get_message", map[string]any{"link": link(readfixture.General, f.Reply) + "?thread_ts=" + string(f.Parent)}, &reply)
			if reply.Message.TS != f.Reply || reply.Message.ThreadTS != f.Parent || reply.Message.Class != mcp.ClassWatched || reply.Message.LastPolledAt == nil {
				t.Errorf("get_message of the reply = %+v", reply.Message)
			}

			// A thread, named by its parent or by a reply's link.
			for _, args := range []map[string]any{
				{"channel": readfixture.General, "ts": string(f.Parent)},
				{"link": link(readfixture.General, f.Reply)},
				{"record": readfixture.Record, "limit": 1},
			} {
				var th mcp.ReadThreadOutput
				s.call(t, cs, "read_thread", args, &th)
				if th.Parent.TS != f.Parent || th.ThreadTS != f.Parent || !slices.Equal(tsOf(th.Replies), []rm.TS{f.Reply}) ||
					th.Replies[0].Text != "thanks!" || th.Replies[0].LastPolledAt == nil || th.Replies[0].Class != mcp.ClassWatched || th.NextCursor != "" {
					t.Errorf("read_thread(%v) = %+v", args, th)
				}
			}

			var fr mcp.FreshnessOutput
			s.call(t, cs, "freshness", nil, &fr)
			if len(fr.Classes) != 3 || fr.Classes[0].Class != mcp.ClassWatched || fr.Classes[0].Messages == nil || !fr.DaemonRunning || len(fr.Conversations) != 3 {
				t.Errorf("freshness = %+v", fr)
			}

			var found mcp.SearchOutput
			s.call(t, cs, "search_messages", map[string]any{"query": "deploy"}, &found)
			if len(found.Hits) != 1 || found.Hits[0].TS != f.Parent || found.Hits[0].Class != mcp.ClassWatched ||
				found.Hits[0].LastPolledAt == nil || !strings.Contains(found.Hits[0].Snippet, "«Deploy»") || found.NextCursor != "" {
				t.Errorf("search_messages deploy = %+v", found)
			}
			var byUser mcp.SearchOutput
			s.call(t, cs, "search_messages", map[string]any{"query": "thanks", "user": "Bee Example", "channel": readfixture.General,
				"after": "2026-01-01", "before": string(f.Plain)}, &byUser)
			if len(byUser.Hits) != 1 || byUser.Hits[0].TS != f.Reply || byUser.Hits[0].ThreadTS != f.Parent {
				t.Errorf("search_messages thanks by Bee = %+v", byUser)
			}

			var ch mcp.ChangesSinceOutput
			s.call(t, cs, "changes_since", map[string]any{"seq": 0}, &ch)
			var last uint64
			_ = f.Store.View(func(tx rm.Tx) error { _, last, _ = tx.ChangeBounds(); return nil })
			if ch.LastSeq != last || ch.NextSeq != last {
				t.Errorf("changes_since(0) = next %d, last %d; want the whole feed read, to %d", ch.NextSeq, ch.LastSeq, last)
			}
		})
	}
}

// A thread's replies page oldest first; search hits newest first.
func TestReadThreadAndSearchPage(t *testing.T) {
	e := newEnv(t, mcp.Policy{})
	f := e.f
	var want []rm.TS
	for _, text := range []string{"release two", "release three", "release four"} {
		ts, err := f.Fake.Reply(readfixture.General, f.Parent, readfixture.Bee, text)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ts)
	}
	e.tick(t)
	newest := slices.Clone(want)
	slices.Reverse(newest)
	want = append([]rm.TS{f.Reply}, want...)
	for _, tr := range transports {
		cs := e.connect(t, tr, nil)
		s := toolSchemas(t, cs)
		var got []rm.TS
		cursor := ""
		for range 5 {
			args := map[string]any{"record": readfixture.Record, "limit": 3}
			if cursor != "" {
				args["cursor"] = cursor
			}
			var th mcp.ReadThreadOutput
			s.call(t, cs, "read_thread", args, &th)
			got = append(got, tsOf(th.Replies)...)
			if th.StoredReplies != 4 {
				t.Errorf("%s: stored_replies = %d, want 4", tr, th.StoredReplies)
			}
			if cursor = th.NextCursor; cursor == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: read_thread pages = %v, want %v", tr, got, want)
		}
		// Search pages too, newest first.
		var hits []rm.TS
		cursor = ""
		for range 5 {
			args := map[string]any{"query": "release", "limit": 2}
			if cursor != "" {
				args["cursor"] = cursor
			}
			var p mcp.SearchOutput
			s.call(t, cs, "search_messages", args, &p)
			for _, h := range p.Hits {
				hits = append(hits, h.TS)
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		if !slices.Equal(hits, newest) {
			t.Errorf("%s: search_messages pages = %v, want %v", tr, hits, newest)
		}
	}
}

// Once the ticks tell the rotation, every message carries its class's worst-case
// staleness, the one freshness reports.
func TestMessagesCarryTheirClassStaleness(t *testing.T) {
	e := newEnv(t, mcp.Policy{})
	for range 3 {
		e.f.Clock.Advance(readfixture.Interval)
		if _, err := e.f.Poller.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	cs := e.connect(t, "stdio", nil)
	s := toolSchemas(t, cs)
	var fr mcp.FreshnessOutput
	s.call(t, cs, "freshness", nil, &fr)
	watched, tracked := fr.Classes[0].WorstCaseStalenessSeconds, fr.Classes[1].WorstCaseStalenessSeconds
	if watched == nil || tracked == nil {
		t.Fatalf("after 4 ticks the staleness is still unknown: %+v", fr.Classes)
	}
	var p mcp.ReadConversationOutput
	s.call(t, cs, "read_conversation", map[string]any{"channel": readfixture.General}, &p)
	for _, m := range p.Messages {
		want := tracked
		if m.Class == mcp.ClassWatched {
			want = watched
		}
		if m.StalenessSeconds == nil || *m.StalenessSeconds != *want {
			t.Errorf("message %s (%s): staleness %v, want %v", m.TS, m.Class, m.StalenessSeconds, *want)
		}
	}
	if p.Freshness.TrackedStalenessSeconds == nil || *p.Freshness.TrackedStalenessSeconds != *tracked {
		t.Errorf("the answer's tracked staleness = %v, want %v", p.Freshness.TrackedStalenessSeconds, *tracked)
	}
}

// Bad input gets a tool error that says what is wrong, on both transports, and
// leaves the session usable.
func TestToolsRefuseBadInput(t *testing.T) {
	e := newEnv(t, mcp.Policy{})
	f := e.f
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := e.connect(t, tr, nil)
			for _, tc := range []struct {
				tool string
				args map[string]any
				want string
			}{
				{"list_conversations", map[string]any{"limit": 0}, "minimum"},
				{"list_conversations", map[string]any{"cursor": "junk"}, "invalid cursor"},
				{"list_conversations", map[string]any{"team_id": "T0OTHER00"}, "not a workspace this slackpoll serves"},
				{"list_conversations", map[string]any{"unknown": 1}, "unknown"},
				{"read_conversation", map[string]any{}, "channel"},
				{"read_conversation", map[string]any{"channel": "C0NOWHERE"}, "not available"},
				{"read_conversation", map[string]any{"channel": readfixture.General, "oldest": "yesterday"}, "not a Slack ts"},
				{"read_conversation", map[string]any{"channel": readfixture.General, "limit": 101}, "maximum"},
				{"read_conversation", map[string]any{"channel": readfixture.General, "limit": "ten"}, "integer"},
				{"read_conversation", map[string]any{"channel": readfixture.General, "cursor": "junk"}, "invalid cursor"},
				{"get_message", map[string]any{}, "name the message"},
				{"get_message", map[string]any{"channel": readfixture.General}, "name the message"},
				{"get_message", map[string]any{"channel": readfixture.General, "ts": "1796032800"}, "has no microseconds"},
				{"get_message", map[string]any{"channel": "general", "ts": string(f.Parent)}, "not a Slack conversation ID"},
				{"get_message", map[string]any{"link": "https://acme.slack.com/archives/" + readfixture.General}, "not a message link"},
				{"get_message", map[string]any{"link": link(readfixture.General, f.Parent), "record": readfixture.Record}, "one way only"},
				{"get_message", map[string]any{"record": "ticket-0"}, "no message is tracked as record"},
				{"get_message", map[string]any{"channel": readfixture.General, "ts": "1600000000.000001"}, "not in the model"},
				{"read_thread", map[string]any{}, "name the message"},
				{"read_thread", map[string]any{"channel": readfixture.General, "ts": string(f.Parent), "cursor": "junk"}, "invalid cursor"},
				{"read_thread", map[string]any{"record": readfixture.Record, "limit": 201}, "maximum"},
				{"changes_since", map[string]any{"kinds": []string{"reaction_exploded"}}, "reaction_exploded"},
				{"changes_since", map[string]any{"seq": 1 << 40}, "past the last seq"},
				{"changes_since", map[string]any{"seq": -1}, "minimum"},
				{"changes_since", map[string]any{"channel": "C0NOWHERE"}, "not available"},
				{"freshness", map[string]any{"team_id": "T0OTHER00"}, "not a workspace this slackpoll serves"},
				{"search_messages", map[string]any{}, "query"},
				{"search_messages", map[string]any{"query": ""}, "minLength"},
				{"search_messages", map[string]any{"query": "!!! ???"}, "bad search query"},
				{"search_messages", map[string]any{"query": "deploy", "after": "yesterday"}, "after"},
				{"search_messages", map[string]any{"query": "deploy", "cursor": "junk"}, "cursor"},
				{"search_messages", map[string]any{"query": "deploy", "limit": 101}, "maximum"},
				{"search_messages", map[string]any{"query": "deploy", "channel": "C0NOWHERE"}, "not available"},
				{"post_message", map[string]any{"channel": readfixture.General, "text": "hi"}, "post_message"},
			} {
				if got := callErr(t, cs, tc.tool, tc.args); !strings.Contains(got, tc.want) {
					t.Errorf("%s(%v): error %q, want it to say %q", tc.tool, tc.args, got, tc.want)
				}
			}
			// The session still answers.
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "freshness"})
			if err != nil || res.IsError {
				t.Errorf("freshness after the bad calls: %v %v", err, res)
			}
		})
	}
}
