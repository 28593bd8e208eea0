package boltstore

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

func TestConversationsRoundTripInIDOrder(t *testing.T) {
	s := openTemp(t)
	swept := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	convs := []readmodel.Conversation{
		{ID: "G0BBBBBBB", Type: readmodel.TypePrivateChannel, Status: readmodel.StatusMissingScope, NeededScope: "groups:history", ErrorDetail: "missing_scope", RetryAt: &swept},
		{ID: "C0AAAAAAA", Type: readmodel.TypePublicChannel, Name: "deploys", Status: readmodel.StatusOK, LastSweptAt: &swept, InfoReadAt: &swept, Discovered: true, IsArchived: true},
	}
	update(t, s, func(tx readmodel.Tx) error {
		for _, c := range convs {
			if err := tx.PutConversation(c); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx readmodel.Tx) error {
		got, ok, err := tx.Conversation("C0AAAAAAA")
		if err != nil || !ok {
			t.Fatalf("Conversation: %v %v", ok, err)
		}
		if diff := cmp.Diff(convs[1], got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		if _, ok, err := tx.Conversation("C0ZZZZZZZ"); ok || err != nil {
			t.Errorf("missing conversation: ok=%v err=%v", ok, err)
		}
		var all []readmodel.Conversation
		if err := tx.Conversations(func(c readmodel.Conversation) error { all = append(all, c); return nil }); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]readmodel.Conversation{convs[1], convs[0]}, all); diff != "" {
			t.Errorf("Conversations by ID (-want +got):\n%s", diff)
		}
		n := 0
		err = tx.Conversations(func(readmodel.Conversation) error { n++; return readmodel.ErrStopIteration })
		if err != nil || n != 1 {
			t.Errorf("ErrStopIteration: err=%v after %d", err, n)
		}
		return nil
	})
}

func TestUsersRoundTripInIDOrder(t *testing.T) {
	s := openTemp(t)
	fetched := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	users := []readmodel.User{
		{ID: "U0BBBBBBB", LookupError: "user_not_found", FetchedAt: fetched},
		{ID: "U0AAAAAAA", DisplayName: "avery", RealName: "Avery Example", Deleted: true, FetchedAt: fetched},
	}
	update(t, s, func(tx readmodel.Tx) error {
		for _, u := range users {
			if err := tx.PutUser(u); err != nil {
				return err
			}
		}
		return nil
	})
	err := s.Update(func(tx readmodel.Tx) error { return tx.PutUser(readmodel.User{}) })
	if err == nil {
		t.Error("PutUser with an empty ID succeeded")
	}
	view(t, s, func(tx readmodel.Tx) error {
		var all []readmodel.User
		if err := tx.Users(func(u readmodel.User) error { all = append(all, u); return nil }); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]readmodel.User{users[1], users[0]}, all); diff != "" {
			t.Errorf("Users (-want +got):\n%s", diff)
		}
		u, ok, err := tx.User("U0BBBBBBB")
		if err != nil || !ok || u.LookupError != "user_not_found" {
			t.Errorf("User = %+v %v %v", u, ok, err)
		}
		return nil
	})
}

func TestRecordsIdentityPacingLastTick(t *testing.T) {
	s := openTemp(t)
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	ref := readmodel.Ref{Channel: "C0AAAAAAA", TS: "1718906000.000100"}
	id := readmodel.Identity{TeamID: "T1", UserID: "U0BOT", BotID: "B0BOT", Scopes: []string{"channels:history", "users:read"}, CheckAt: now}
	ms := readmodel.MethodState{LastCall: now, NotBefore: now.Add(61 * time.Second)}
	tick := readmodel.TickSummary{
		Started: now, Finished: now.Add(time.Minute), Calls: map[string]int{"conversations.history": 8},
		StopReason: "budget:history_pages", MessagesWritten: 999, Errors: []string{"C0X: not_in_channel"},
		Staleness: readmodel.Staleness{RotationPeriod: 3 * time.Hour, Tracked: 4000},
	}
	view(t, s, func(tx readmodel.Tx) error {
		if _, ok, err := tx.Identity(); ok || err != nil {
			t.Errorf("Identity before put: %v %v", ok, err)
		}
		if _, ok, err := tx.LastTick(); ok || err != nil {
			t.Errorf("LastTick before put: %v %v", ok, err)
		}
		return nil
	})
	update(t, s, func(tx readmodel.Tx) error {
		return errors.Join(
			tx.PutRecord("ticket-42", ref),
			tx.PutIdentity(id),
			tx.PutMethodState("conversations.history", ms),
			tx.PutLastTick(tick),
		)
	})
	view(t, s, func(tx readmodel.Tx) error {
		gotRef, ok, err := tx.Record("ticket-42")
		if err != nil || !ok || gotRef != ref {
			t.Errorf("Record = %+v %v %v", gotRef, ok, err)
		}
		if _, ok, err := tx.Record("ticket-43"); ok || err != nil {
			t.Errorf("missing Record: %v %v", ok, err)
		}
		gotID, _, err := tx.Identity()
		if diff := cmp.Diff(id, gotID); err != nil || diff != "" {
			t.Errorf("Identity (-want +got): %v\n%s", err, diff)
		}
		gotMS, _, err := tx.MethodState("conversations.history")
		if diff := cmp.Diff(ms, gotMS); err != nil || diff != "" {
			t.Errorf("MethodState (-want +got): %v\n%s", err, diff)
		}
		if _, ok, _ := tx.MethodState("conversations.replies"); ok {
			t.Error("MethodState of an unused method exists")
		}
		gotTick, _, err := tx.LastTick()
		if diff := cmp.Diff(tick, gotTick); err != nil || diff != "" {
			t.Errorf("LastTick (-want +got): %v\n%s", err, diff)
		}
		return nil
	})
	for name, r := range map[string]readmodel.Ref{"bad ts": {Channel: "C1", TS: "x"}, "no channel": {TS: "1.000000"}} {
		if err := s.Update(func(tx readmodel.Tx) error { return tx.PutRecord("k", r) }); err == nil {
			t.Errorf("PutRecord %s succeeded", name)
		}
	}
}
