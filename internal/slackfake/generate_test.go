package slackfake

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

func generated(t *testing.T, seed int64, size GenSize) *Server {
	t.Helper()
	c := &clock{t: t0}
	s := New(Options{Now: c.now, ReactionUsersCap: 10})
	Generate(s, seed, size)
	return s
}

func truthBytes(t *testing.T, s *Server) []byte {
	t.Helper()
	var b bytes.Buffer
	must(t, s.WriteTruth(&b))
	return b.Bytes()
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := truthBytes(t, generated(t, 42, Small)), truthBytes(t, generated(t, 42, Small))
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed generated different workspaces")
	}
	if bytes.Equal(a, truthBytes(t, generated(t, 43, Small))) {
		t.Fatal("different seeds generated the same workspace")
	}
}

func TestGenerateIsRealistic(t *testing.T) {
	s := generated(t, 1, Medium)
	tr := s.Truth()
	if len(tr.Conversations) != Medium.Conversations {
		t.Fatalf("%d conversations, want %d", len(tr.Conversations), Medium.Conversations)
	}
	types, statuses := map[string]int{}, map[string]int{}
	for _, c := range tr.Conversations {
		types[c.Type]++
		statuses[c.Status]++
	}
	for _, typ := range []string{"public_channel", "private_channel", "im", "mpim"} {
		if types[typ] == 0 {
			t.Errorf("no %s conversation", typ)
		}
	}
	for _, st := range []string{"ok", "archived", "not_in_channel", "channel_not_found"} {
		if statuses[st] == 0 {
			t.Errorf("no conversation with status %s", st)
		}
	}

	msgs, maxReplies, threads, bigThreads, tombstones, broadcasts, classic, app, own, edited, reacted, skin, truncated := 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
	for _, m := range tr.Messages {
		if m.Subtype != "thread_broadcast" {
			msgs += 1 + len(m.Replies)
		}
		if len(m.Replies) > 0 {
			threads++
		}
		if len(m.Replies) > 100 {
			bigThreads++
		}
		maxReplies = max(maxReplies, len(m.Replies))
		switch {
		case m.Deleted:
			tombstones++
		case m.Subtype == "thread_broadcast":
			broadcasts++
		case m.Subtype == "bot_message":
			classic++
		case m.OwnPost:
			own++
		case m.BotID != "":
			app++
		}
		if m.Edited != nil {
			edited++
		}
		if len(m.Reactions) > 0 {
			reacted++
		}
		for _, r := range m.Reactions {
			if strings.Contains(r.Name, "::skin-tone-") {
				skin++
			}
			if r.Count > len(r.Users) {
				truncated++
			}
		}
	}
	// Tombstones whose whole thread was later deleted are gone; allow a little slack.
	if msgs < Medium.Messages*95/100 || msgs > Medium.Messages*101/100 {
		t.Errorf("%d messages, want about %d", msgs, Medium.Messages)
	}
	for name, n := range map[string]int{"threads": threads, "threads over 100 replies": bigThreads,
		"tombstones": tombstones, "broadcasts": broadcasts, "classic bot messages": classic,
		"app bot messages": app, "own posts": own, "edited": edited, "reacted": reacted,
		"skin-tone reactions": skin, "truncated reaction user lists": truncated} {
		if n == 0 {
			t.Errorf("no %s", name)
		}
	}
	if maxReplies < 300 {
		t.Errorf("longest thread has %d replies, want a long tail", maxReplies)
	}
	deactivated, noNames := 0, 0
	for _, u := range tr.Users {
		if u.Deleted {
			deactivated++
		}
		if u.Label == u.ID {
			noNames++
		}
	}
	if deactivated == 0 || noNames == 0 {
		t.Errorf("users: %d deactivated, %d labelled by ID; want some of each", deactivated, noNames)
	}

	// The generated workspace is served like any other.
	api := clientFor(s)
	for _, c := range tr.Conversations {
		if c.Status != "ok" {
			continue
		}
		if _, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: c.ID, Limit: 999}); err != nil {
			t.Fatalf("history of generated %s: %v", c.ID, err)
		}
	}
}

func TestMutatorIsDeterministicAndVaried(t *testing.T) {
	run := func(seed int64) ([]string, []byte) {
		c := &clock{t: t0}
		s := New(Options{Now: c.now})
		Generate(s, 5, Small)
		m := NewMutator(s, seed)
		m.Disruptive = true
		var steps []string
		for i := 0; i < 3000; i++ {
			c.advance(1e9)
			steps = append(steps, m.Step())
		}
		return steps, truthBytes(t, s)
	}
	a, ta := run(9)
	b, tb := run(9)
	if strings.Join(a, "\n") != strings.Join(b, "\n") || !bytes.Equal(ta, tb) {
		t.Fatal("the same seed gave different mutation streams")
	}
	kinds := map[string]int{}
	for _, step := range a {
		kinds[strings.Fields(step)[0]]++
	}
	for _, k := range []string{"post", "reply", "broadcast", "edit", "delete", "react", "unreact",
		"rename", "app", "classic", "own", "archive", "unarchive", "remove", "add"} {
		if kinds[k] == 0 {
			t.Errorf("no %q step in 3000: %v", k, kinds)
		}
	}
	if kinds["skip"] > len(a)/10 {
		t.Errorf("%d of %d steps skipped", kinds["skip"], len(a))
	}
}
