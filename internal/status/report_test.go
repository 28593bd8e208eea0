package status_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

func build(t *testing.T, f *readfixture.Fixture, running bool) status.Report {
	t.Helper()
	var r status.Report
	err := f.Store.View(func(tx rm.Tx) error {
		var err error
		r, err = status.Build(tx, status.Input{
			Configured: append(f.Configured, "C0PENDING"), Interval: readfixture.Interval,
			Now: f.Clock.Now(), DaemonRunning: running,
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestConversationsStatusAndCounts(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	r := build(t, f, false)
	type row struct {
		id, typ, status, scope     string
		messages, threads, tracked int
	}
	var got []row
	for _, c := range r.Conversations {
		got = append(got, row{c.ID, c.Type, c.Status, c.NeededScope, c.Messages, c.Threads, c.Tracked})
	}
	want := []row{
		// Parent, Reply, Plain, Own and the tracked NeverPolled placeholder; Reply is
		// not tracked (it is refreshed with its thread).
		{readfixture.General, rm.TypePublicChannel, rm.StatusOK, "", 5, 1, 4},
		{readfixture.Outside, rm.TypePublicChannel, rm.StatusNotInChannel, "", 0, 0, 0},
		{"C0PENDING", "", rm.StatusPending, "", 0, 0, 0},
		{readfixture.Secret, rm.TypePrivateChannel, rm.StatusMissingScope, "groups:history", 0, 0, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("conversations = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("conversation %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if r.Conversations[1].Error == "" {
		t.Errorf("not_in_channel conversation has no error detail")
	}
}

func TestCoverageCountsNeverPolledAndFindsOldestPolled(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	f.Clock.Advance(10 * time.Minute)
	r := build(t, f, false)
	cv := r.Coverage
	if cv.Tracked != 4 || cv.NeverPolled != 1 {
		t.Errorf("tracked, never polled = %d, %d; want 4, 1", cv.Tracked, cv.NeverPolled)
	}
	if cv.OldestPolledAt == nil || !cv.OldestPolledAt.Equal(f.Summary.Started) {
		t.Errorf("oldest last_polled_at = %v, want the tick's start %v", cv.OldestPolledAt, f.Summary.Started)
	}
	if cv.OldestPolledAgeSeconds == nil || *cv.OldestPolledAgeSeconds != 600 {
		t.Errorf("oldest age = %v, want 600 s", cv.OldestPolledAgeSeconds)
	}
	// The tick read no tail and a tracked message was never read: nothing is known.
	if cv.RotationPeriodSeconds != nil || cv.WorstCaseStalenessSeconds != nil {
		t.Errorf("rotation, staleness = %v, %v; want unknown (null)", cv.RotationPeriodSeconds, cv.WorstCaseStalenessSeconds)
	}
}

func TestRotationWhenTheLastTickReadEveryTrackedMessage(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	if err := f.Store.Update(func(tx rm.Tx) error { return tx.DeleteMessage(readfixture.General, readfixture.NeverPolled) }); err != nil {
		t.Fatal(err)
	}
	r := build(t, f, false)
	// All three tracked messages were read by the bulk window of the last tick: they
	// are re-read every tick, so the rotation is one interval.
	if p := r.Coverage.RotationPeriodSeconds; p == nil || *p != 60 {
		t.Errorf("rotation period = %v, want 60 s", p)
	}
	if s := r.Coverage.WorstCaseStalenessSeconds; s == nil || *s != 120 {
		t.Errorf("worst-case staleness = %v, want 120 s (rotation + interval)", s)
	}
}

func TestRotationFromTheTickSummary(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	sum := f.Summary
	sum.RotationPeriod = 5 * time.Minute
	if err := f.Store.Update(func(tx rm.Tx) error { return tx.PutLastTick(sum) }); err != nil {
		t.Fatal(err)
	}
	r := build(t, f, false)
	if p := r.Coverage.RotationPeriodSeconds; p == nil || *p != 300 {
		t.Errorf("rotation period = %v, want 300 s", p)
	}
	if s := r.Coverage.WorstCaseStalenessSeconds; s == nil || *s != 360 {
		t.Errorf("worst-case staleness = %v, want 360 s", s)
	}
}

func TestRotationAfterATickThatReadTheTail(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	f.Clock.Advance(readfixture.Interval)
	sum, err := f.Poller.Tick(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sum.RotationPeriod == 0 {
		t.Fatalf("second tick estimated no rotation period: %+v", sum)
	}
	r := build(t, f, false)
	if p := r.Coverage.RotationPeriodSeconds; p == nil || *p != sum.RotationPeriod.Seconds() {
		t.Errorf("rotation period = %v, want the tick's %v", p, sum.RotationPeriod)
	}
	if r.Coverage.NeverPolled != 0 {
		t.Errorf("never polled = %d after a tick read the tail, want 0", r.Coverage.NeverPolled)
	}
}

func TestLastTickAndNextTick(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	r := build(t, f, true)
	lt := r.LastTick
	if lt == nil {
		t.Fatal("no last tick")
	}
	if lt.StopReason != rm.StopComplete || lt.Calls[rm.MethodHistory] != f.Summary.Calls[rm.MethodHistory] || len(lt.Errors) != 2 {
		t.Errorf("last tick = %+v, want the fixture's summary %+v", lt, f.Summary)
	}
	want := f.Summary.Started.Add(readfixture.Interval)
	if r.NextTickAt == nil || !r.NextTickAt.Equal(want) {
		t.Errorf("next tick = %v, want start + interval = %v", r.NextTickAt, want)
	}
	if r2 := build(t, f, false); r2.NextTickAt != nil {
		t.Errorf("next tick without a daemon = %v, want null", r2.NextTickAt)
	}
}

func TestNoTickYet(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	if err := f.Store.Update(func(tx rm.Tx) error { return tx.PutLastTick(rm.TickSummary{}) }); err != nil {
		t.Fatal(err)
	}
	// A zero summary is what a store without ticks would hold; Build must not panic
	// nor invent a next tick for a daemon that does not run.
	r := build(t, f, false)
	if r.NextTickAt != nil {
		t.Errorf("next tick = %v, want null", r.NextTickAt)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	r := build(t, f, true)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"rotation_period_seconds":null`, `"needed_scope":"groups:history"`, `"oldest_last_polled_at":"2026-11-30T10:00:01Z"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s: %s", key, b)
		}
	}
	var back status.Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var a, c strings.Builder
	_ = r.WriteText(&a)
	_ = back.WriteText(&c)
	if a.String() != c.String() {
		t.Errorf("text of the decoded report differs:\n%s\nvs\n%s", a.String(), c.String())
	}
}
