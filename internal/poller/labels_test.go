package poller_test

import (
	"strings"
	"testing"

	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// A thread parent first seen as a tombstone (deleted before slackpoll read it, its
// replies alive) is stored with the tombstone's author, so its label is not empty.
func TestParentFirstSeenAsATombstoneHasALabel(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent := ts(1000, 0)
	tomb := rm.Message{Channel: ch, TS: parent, User: "USLACKBOT", Subtype: rm.SubtypeTombstone, Text: "This message was deleted."}
	src.post(tomb)
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "reply"))
	p, store, _ := newPoller(t, src, ch)
	mustTick(t, p)
	m := getMsg(t, store, ch, parent)
	if !m.Deleted {
		t.Errorf("parent not marked deleted: %+v", m)
	}
	var label string
	if err := store.View(func(tx rm.Tx) error {
		line, err := export.MessageLineOf(tx, &m)
		label = line.UserLabel
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if label == "" {
		t.Errorf("user_label of a parent first seen as a tombstone is empty: %+v", m)
	}
}

// A label is never empty, whatever the message lacks.
func TestUserLabelIsNeverEmpty(t *testing.T) {
	if l := rm.UserLabel(&rm.Message{Channel: ch, TS: ts(1, 0)}, nil); l == "" {
		t.Error("empty label for a message without user, bot name or bot_id")
	}
}

// edited.user can be a bot ID (B…): it is not looked up with users.info.
func TestBotIDInEditedIsNotLookedUp(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	m := msg(ch, ts(60, 0), "U1", "edited by an app")
	m.Edited = &rm.Edited{User: "B089LPE68BB", TS: ts(30, 0)}
	src.post(m)
	p, _, _ := newPoller(t, src, ch)
	mustTick(t, p)
	for _, c := range src.callsOf(rm.MethodUsersInfo) {
		if strings.HasPrefix(c.user, "B") {
			t.Errorf("users.info called for the bot ID %s", c.user)
		}
	}
}
