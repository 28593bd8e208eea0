package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackpoll/slackpoll/internal/mcp"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
	"github.com/slackpoll/slackpoll/internal/testsupport/testbin"
)

// demoStore makes the explorable demo's store: `demo --listen` writes a config and
// serves a generated workspace (every conversation type, threads, bots), `once`
// polls it, and the demo stops. It returns the config's path.
func demoStore(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	dir := filepath.Join(t.TempDir(), "demo")
	var demoOut, demoErr lockedBuffer
	demoDone := startCLI(ctx, &demoOut, &demoErr, "demo", "--listen", "127.0.0.1:0", "--api", freeAddr(t), "--dir", dir, "--messages", "400", "--every", "1h")
	cfg := filepath.Join(dir, "slackpoll.yaml")
	waitFor(t, "the demo's config", func() bool { _, err := os.Stat(cfg); return err == nil })
	if code, _, errOut := runCLI(t.Context(), "once", "--config", cfg); code != ExitOK {
		t.Fatalf("once on the demo workspace = %d: %s", code, errOut)
	}
	cancel()
	<-demoDone
	return cfg
}

// The demo's store answers an agent: `slackpoll mcp`, started as a subprocess by the
// SDK's own command transport as a desktop agent starts it, lists its tools and the
// conversations (no DM or group DM of the demo's workspace among them), searches,
// reads a thread and a message by its Slack link.
func TestMCPSubprocessAnswersFromTheDemoStore(t *testing.T) {
	bin := buildBinary(t)
	cfg := demoStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "mcp", "--config", cfg)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("start slackpoll mcp: %v\n%s", err, stderr.String())
	}
	defer func() {
		if err := cs.Close(); err != nil {
			t.Errorf("closing the session: %v", err)
		}
		if !strings.Contains(stderr.String(), "mcp: serving on stdio") {
			t.Errorf("slackpoll mcp's stderr lacks its start line:\n%s", stderr.String())
		}
	}()

	var tools []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool.Name)
	}
	for _, want := range []string{"list_conversations", "read_conversation", "read_thread", "get_message", "search_messages", "changes_since", "freshness"} {
		if !strings.Contains(strings.Join(tools, " "), want) {
			t.Errorf("tools %v lack %s", tools, want)
		}
	}

	// The demo's workspace has DMs and group DMs, polled into the store.
	code, out, _ := runCLI(t.Context(), "status", "--json", "--config", cfg)
	var rep status.Report
	if err := json.Unmarshal([]byte(out), &rep); code != ExitOK || err != nil {
		t.Fatalf("status --json = %d, %v", code, err)
	}
	private := 0
	for _, c := range rep.Conversations {
		if (c.Type == rm.TypeIM || c.Type == rm.TypeMPIM) && c.Messages > 0 {
			private++
		}
	}
	if private == 0 {
		t.Fatal("the demo store holds no DM or group DM messages: the exposure check below would prove nothing")
	}
	var convs mcp.ListConversationsOutput
	callTool(t, cs, "list_conversations", nil, &convs)
	if len(convs.Conversations) == 0 {
		t.Fatal("list_conversations: none")
	}
	var thread, plain *mcp.Message
	for _, c := range convs.Conversations {
		if c.Type == rm.TypeIM || c.Type == rm.TypeMPIM {
			t.Errorf("list_conversations shows %s, a %s", c.ID, c.Type)
		}
		var p mcp.ReadConversationOutput
		callTool(t, cs, "read_conversation", map[string]any{"channel": c.ID, "limit": 100}, &p)
		for i := range p.Messages {
			m := &p.Messages[i]
			if m.LastPolledAt == nil || m.Class == "" {
				t.Errorf("message %s %s lacks its freshness: %+v", m.Channel, m.TS, m.Freshness)
			}
			if thread == nil && m.ReplyCount > 0 {
				thread = m
			}
			if plain == nil && m.ReplyCount == 0 && m.Text != "" {
				plain = m
			}
		}
	}
	if thread == nil || plain == nil {
		t.Fatalf("the demo store has no thread (%v) or no plain message (%v)", thread, plain)
	}
	// Search finds the plain message by its first word, in its conversation and
	// second (the projection once left).
	word := strings.FieldsFunc(plain.Text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })[0]
	sec := plain.TS.Unix()
	var found mcp.SearchOutput
	callTool(t, cs, "search_messages", map[string]any{"query": word, "channel": plain.Channel,
		"after": fmt.Sprintf("%d.000000", sec-1), "before": fmt.Sprintf("%d.000000", sec+1)}, &found)
	if len(found.Hits) != 1 || found.Hits[0].TS != plain.TS || found.Hits[0].LastPolledAt == nil || found.Hits[0].Class == "" {
		t.Errorf("search_messages %q in %s around %s = %+v, want that message with its freshness", word, plain.Channel, plain.TS, found)
	}
	var th mcp.ReadThreadOutput
	callTool(t, cs, "read_thread", map[string]any{"channel": thread.Channel, "ts": string(thread.TS)}, &th)
	if th.Parent.TS != thread.TS || len(th.Replies) == 0 || th.Replies[0].ThreadTS != thread.TS {
		t.Errorf("read_thread %s %s = parent %s, %d replies", thread.Channel, thread.TS, th.Parent.TS, len(th.Replies))
	}
	link := "https://demo.slack.com/archives/" + plain.Channel + "/p" + strings.Replace(string(plain.TS), ".", "", 1)
	var got mcp.GetMessageOutput
	callTool(t, cs, "get_message", map[string]any{"link": link}, &got)
	if got.Message.TS != plain.TS || got.Message.Text != plain.Text {
		t.Errorf("get_message by link %s = %+v, want %s", link, got.Message, plain.TS)
	}
}

func buildBinary(t *testing.T) string { return testbin.Build(t) }
