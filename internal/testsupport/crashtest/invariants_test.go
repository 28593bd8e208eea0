package crashtest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// Each invariant checker is shown to fail on a store built by hand to break it, and
// to pass on the same store built right.

const ch = "C0CRASH01"

func newStore(t *testing.T, msgs ...rm.Message) *boltstore.Store {
	t.Helper()
	s := storetest.Open(t)
	err := s.Update(func(tx rm.Tx) error {
		for _, m := range msgs {
			if err := tx.PutMessage(m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var synced = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func parent(ts, latest, watermark rm.TS) rm.Message {
	return rm.Message{Channel: ch, TS: ts, ThreadTS: ts, Text: "p", ReplyCount: 1, LatestReply: latest,
		ReplyWatermark: watermark, LastPolledAt: &synced, ThreadSyncedAt: &synced}
}

func reply(ts, parent rm.TS, subtype string) rm.Message {
	return rm.Message{Channel: ch, TS: ts, ThreadTS: parent, Text: "r", Subtype: subtype, LastPolledAt: &synced}
}

func violations(t *testing.T, s *boltstore.Store) []string {
	t.Helper()
	_, bad, err := CheckThreads(s)
	if err != nil {
		t.Fatal(err)
	}
	return bad
}

func wantViolation(t *testing.T, bad []string, substr string) {
	t.Helper()
	if !slices.ContainsFunc(bad, func(s string) bool { return strings.Contains(s, substr) }) {
		t.Fatalf("want a violation containing %q, got %v", substr, bad)
	}
}

func TestCheckThreadsAcceptsAWholeThread(t *testing.T) {
	s := newStore(t,
		parent("100.000001", "100.000003", "100.000003"),
		reply("100.000002", "100.000001", ""),
		reply("100.000003", "100.000001", ""),
		// A broadcast newer than the watermark, written by a history read before the
		// thread sync that would raise the watermark.
		reply("100.000004", "100.000001", rm.SubtypeThreadBroadcast),
		// A thread gone (thread_not_found): watermark, no replies.
		rm.Message{Channel: ch, TS: "200.000001", ThreadTS: "200.000001", LatestReply: "200.000002",
			ReplyWatermark: "200.000002", ThreadGone: true, Deleted: true, LastPolledAt: &synced, ThreadSyncedAt: &synced},
		// A broadcast whose parent was never read (older than the bulk window).
		reply("300.000002", "300.000001", rm.SubtypeThreadBroadcast),
	)
	threads, bad, err := CheckThreads(s)
	if err != nil || len(bad) != 0 {
		t.Fatalf("violations %v, err %v", bad, err)
	}
	if got := threads[rm.Ref{Channel: ch, TS: "100.000001"}]; !slices.Equal(got, []rm.TS{"100.000002", "100.000003"}) {
		t.Fatalf("plain replies of the thread: %v", got)
	}
}

func TestCheckThreadsFlagsWatermarkWithoutReplies(t *testing.T) {
	s := newStore(t, parent("100.000001", "100.000003", "100.000003"))
	wantViolation(t, violations(t, s), "watermark 100.000003 without its reply (0 replies stored)")
}

func TestCheckThreadsFlagsPrefixUnderWatermark(t *testing.T) {
	// The first page of a two-page thread written with the watermark: the newest reply
	// (the watermark) is missing.
	s := newStore(t, parent("100.000001", "100.000003", "100.000003"), reply("100.000002", "100.000001", ""))
	wantViolation(t, violations(t, s), "watermark 100.000003 without its reply (1 replies stored)")
}

func TestCheckThreadsFlagsReplyNewerThanWatermark(t *testing.T) {
	s := newStore(t,
		parent("100.000001", "100.000003", "100.000002"),
		reply("100.000002", "100.000001", ""),
		reply("100.000003", "100.000001", ""),
	)
	wantViolation(t, violations(t, s), "reply 100.000003 is newer than the watermark 100.000002")
}

func TestCheckThreadsFlagsOrphanReply(t *testing.T) {
	s := newStore(t, reply("100.000002", "100.000001", ""))
	wantViolation(t, violations(t, s), "orphan reply C0CRASH01/100.000002")
}

func TestCheckThreadsFlagsReplyOutsideAThreadWrite(t *testing.T) {
	p := parent("100.000001", "100.000002", "")
	p.ThreadSyncedAt = nil
	s := newStore(t, p, reply("100.000002", "100.000001", ""))
	wantViolation(t, violations(t, s), "was never written whole")
}

func TestCheckWholeSets(t *testing.T) {
	ref := rm.Ref{Channel: ch, TS: "100.000001"}
	before := Threads{ref: {"100.000002"}}
	truth := Threads{ref: {"100.000002", "100.000003", "100.000004"}}
	for _, ok := range [][]rm.TS{{"100.000002"}, {"100.000002", "100.000003", "100.000004"}} {
		if bad := CheckWholeSets(before, Threads{ref: ok}, truth); len(bad) != 0 {
			t.Fatalf("%v: %v", ok, bad)
		}
	}
	for _, partial := range [][]rm.TS{{"100.000002", "100.000003"}, {}, {"100.000003", "100.000004"}} {
		bad := CheckWholeSets(before, Threads{ref: partial}, truth)
		wantViolation(t, bad, "partial reply set")
	}
	// A thread new in this run: nothing before.
	if bad := CheckWholeSets(Threads{}, Threads{ref: {}}, Threads{}); len(bad) != 0 {
		t.Fatal(bad)
	}
}
