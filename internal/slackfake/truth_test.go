package slackfake

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/slackpoll/slackpoll/internal/export"
)

var update = flag.Bool("update", false, "rewrite testdata/truth.jsonl")

// truthScenario builds a small workspace touching every rule of Truth.
func truthScenario(t *testing.T) *Server {
	t.Helper()
	s, _ := newFake(t, Options{ReactionUsersCap: 2})
	workspace(t, s) // C2 public non-member, C3 private, D1 IM, G1 MPIM, G9 hidden
	must(t, s.AddConversation(PublicChannel("C4", "old")))
	must(t, s.Archive("C4"))
	s.RevokeScope("mpim:history")
	must(t, s.AddBot(Bot{ID: "B1", UserID: "UB1", Name: "deploybot", AppID: "A1"}))
	must(t, s.AddBot(Bot{ID: "B2", Name: "ci-webhook"}))
	must(t, s.AddUser(User{ID: "U3"}))

	m1 := mustTS(t)(s.Post("C1", "U1", "hello"))
	must(t, s.Edit("C1", m1, "hello, world"))
	for _, u := range []string{"U2", "U404", "U3"} {
		must(t, s.React("C1", m1, u, "thumbsup::skin-tone-2"))
	}
	p := mustTS(t)(s.Post("C1", "U2", "parent"))
	r1 := mustTS(t)(s.Reply("C1", p, "U1", "first"))
	mustTS(t)(s.ReplyBroadcast("C1", p, "U3", "broadcast"))
	must(t, s.React("C1", r1, "U2", "eyes"))
	q := mustTS(t)(s.Post("C1", "U3", "doomed parent"))
	mustTS(t)(s.Reply("C1", q, "U1", "survivor"))
	must(t, s.Delete("C1", q))
	gone := mustTS(t)(s.Post("C1", "U1", "deleted"))
	must(t, s.Delete("C1", gone))
	mustTS(t)(s.PostAsClassicBot("C1", "B2", "jenkins", "by username"))
	mustTS(t)(s.PostAsClassicBot("C1", "B2", "", "by profile"))
	mustTS(t)(s.PostAsClassicBot("C1", "B9", "", "by id"))
	mustTS(t)(s.PostAsAppBot("C1", "B1", "app"))
	mustTS(t)(s.PostAsAppBot("C1", s.BotID(), "own"))
	mustTS(t)(s.Post("D1", "U1", "dm"))
	return s
}

func TestTruthRules(t *testing.T) {
	s := truthScenario(t)
	tr := s.Truth()

	status := map[string]string{}
	needed := map[string]string{}
	for _, c := range tr.Conversations {
		status[c.ID], needed[c.ID] = c.Status, c.NeededScope
	}
	want := map[string]string{"C1": "ok", "C2": "not_in_channel", "C3": "ok", "C4": "archived",
		"D1": "ok", "G1": "missing_scope", "G9": "channel_not_found"}
	for id, st := range want {
		if status[id] != st {
			t.Errorf("conversation %s status %q, want %q", id, status[id], st)
		}
	}
	if needed["G1"] != "mpim:history" {
		t.Errorf("G1 needed_scope %q", needed["G1"])
	}

	label := map[string]string{}
	var byText = map[string]export.MessageLine{}
	for _, m := range tr.Messages {
		byText[m.Text] = m
		label[m.Text] = m.UserLabel
	}
	for text, want := range map[string]string{
		"hello, world": "avery", "parent": "Bee Example", "doomed parent": "U3",
		"by username": "jenkins", "by profile": "ci-webhook", "by id": "B9", "app": "deploybot", "own": "slackpoll",
	} {
		if label[text] != want {
			t.Errorf("user_label of %q = %q, want %q", text, label[text], want)
		}
	}
	if _, ok := byText["deleted"]; ok {
		t.Error("a deleted top-level message is in the truth")
	}
	if !byText["own"].OwnPost || byText["app"].OwnPost {
		t.Error("own_post must be set exactly for the own bot's posts")
	}
	hello := byText["hello, world"]
	if hello.Edited == nil || len(hello.Reactions) != 1 || hello.Reactions[0].Count != 3 ||
		!slices.Equal(hello.Reactions[0].Users, []string{"U2", "U404"}) {
		t.Errorf("edited/reactions of hello: %+v %+v", hello.Edited, hello.Reactions)
	}
	tomb := byText["doomed parent"]
	if !tomb.Deleted || tomb.User != "U3" || tomb.ReplyCount != 1 || tomb.LatestReply == "" ||
		tomb.ReplyWatermark != tomb.LatestReply || len(tomb.Replies) != 1 {
		t.Errorf("tombstoned parent: %+v", tomb)
	}
	parent := byText["parent"]
	bc := byText["broadcast"]
	if len(parent.Replies) != 2 || parent.Replies[1].TS != bc.TS || bc.Subtype != "thread_broadcast" || bc.ThreadTS != parent.TS {
		t.Errorf("the broadcast must be a timeline line and the parent's second reply: %+v / %+v", parent.Replies, bc)
	}
	if parent.Replies[0].Reactions[0].Name != "eyes" {
		t.Errorf("reply reactions: %+v", parent.Replies[0].Reactions)
	}

	for i := 1; i < len(tr.Messages); i++ {
		a, b := tr.Messages[i-1], tr.Messages[i]
		if a.Channel > b.Channel || a.Channel == b.Channel && !a.TS.Before(b.TS) {
			t.Fatalf("messages out of order at %d: %s %s then %s %s", i, a.Channel, a.TS, b.Channel, b.TS)
		}
	}
	var users []string
	for _, u := range tr.Users {
		users = append(users, u.ID)
		if u.ID == "U404" && (u.LookupError != "user_not_found" || u.Label != "U404") {
			t.Errorf("unknown user line: %+v", u)
		}
	}
	if !slices.Equal(users, []string{s.BotUserID(), "U1", "U2", "U3", "U404", "UB1"}) {
		t.Errorf("users = %v", users)
	}

	only := tr.Only("D1")
	if len(only.Conversations) != 1 || len(only.Messages) != 1 || len(only.Users) != 1 || only.Users[0].ID != "U1" {
		t.Errorf("Only(D1) = %+v", only)
	}
}

func TestWriteTruthGolden(t *testing.T) {
	var buf bytes.Buffer
	must(t, truthScenario(t).WriteTruth(&buf))
	for i, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var v map[string]any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("line %d is not JSON: %s", i+1, line)
		}
	}
	golden := filepath.Join("testdata", "truth.jsonl")
	if *update {
		must(t, os.WriteFile(golden, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	must(t, err)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteTruth differs from %s (run with -update after checking):\n%s", golden, buf.Bytes())
	}
}
