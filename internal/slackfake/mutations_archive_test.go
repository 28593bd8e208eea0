package slackfake

import (
	"errors"
	"testing"
)

// Slack cannot archive a DM (conversations.archive: method_not_supported_for_channel_type),
// and the fake's IM objects carry no is_archived: archiving one must fail, and the
// Mutator must not try.
func TestArchiveRefusesAnIM(t *testing.T) {
	s := New(Options{})
	if err := s.AddUser(User{ID: "U0AAAAAAA"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddConversation(DirectMessage("D0AAAAAAA", "U0AAAAAAA")); err != nil {
		t.Fatal(err)
	}
	if err := s.Archive("D0AAAAAAA"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Archive(IM) = %v, want ErrInvalid", err)
	}
	m := NewMutator(s, 1)
	for range 200 {
		if d := m.archiveOrUnarchive(); d == "archive D0AAAAAAA" {
			t.Fatalf("mutator archived the IM: %s", d)
		}
	}
}
