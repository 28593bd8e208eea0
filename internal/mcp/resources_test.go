package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackpoll/slackpoll/internal/mcp"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// The two resource templates are listed; a conversation resource holds its newest
// messages, a message resource its thread; a URI of neither shape, or of a message
// the model lacks, is not found.
func TestResourcesByURITemplate(t *testing.T) {
	e := newEnv(t, mcp.Policy{})
	f := e.f
	ctx := context.Background()
	for _, tr := range transports {
		cs := e.connect(t, tr, nil)
		var templates []string
		for rt, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			templates = append(templates, rt.URITemplate)
			if rt.MIMEType != "application/json" {
				t.Errorf("%s: template %s has MIME type %q", tr, rt.URITemplate, rt.MIMEType)
			}
		}
		if want := []string{"slackpoll://conversations/{channel}", "slackpoll://conversations/{channel}/messages/{ts}"}; !slices.Equal(templates, want) {
			t.Errorf("%s: templates = %v, want %v", tr, templates, want)
		}

		var conv mcp.ConversationResource
		readJSON(t, cs, "slackpoll://conversations/"+readfixture.General, &conv)
		if conv.Conversation.ID != readfixture.General || !slices.Equal(tsOf(conv.Messages), []rm.TS{f.Own, f.Plain, f.Parent, readfixture.NeverPolled}) {
			t.Errorf("%s: conversation resource = %+v", tr, conv)
		}
		var msg mcp.MessageResource
		readJSON(t, cs, "slackpoll://conversations/"+readfixture.General+"/messages/"+string(f.Parent), &msg)
		if msg.Message.TS != f.Parent || !slices.Equal(tsOf(msg.Replies), []rm.TS{f.Reply}) || msg.Truncated || msg.Replies[0].LastPolledAt == nil {
			t.Errorf("%s: message resource = %+v", tr, msg)
		}
		for _, uri := range []string{
			"slackpoll://conversations/" + readfixture.General + "/messages/1600000000.000001",
			"slackpoll://conversations/C0NOWHERE",
			"slackpoll://elsewhere/" + readfixture.General,
			"file:///etc/passwd",
		} {
			if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil {
				t.Errorf("%s: reading %s succeeded, want not found", tr, uri)
			}
		}
	}
}

func readJSON(t *testing.T, cs *sdk.ClientSession, uri string, v any) {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 || res.Contents[0].URI != uri {
		t.Fatalf("read %s: contents %+v", uri, res.Contents)
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), v); err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
}
