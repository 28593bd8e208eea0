package crashtest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Each invariant checker is shown to fail on a store built by hand to break it, and
// to pass on the same store built right.

const ch = "C0CRASH01"

func newStore(t *testing.T, msgs ...rm.Message) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	err = s.Update(func(tx rm.Tx) error {
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

// TestCheckBoltFlagsCorruption zeroes one data page of a valid store: bbolt's check
// must notice (the meta pages are intact, so the file still opens).
func TestCheckBoltFlagsCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx rm.Tx) error {
		for i := range 2000 {
			m := reply(rm.TSFromUnix(int64(1000+i)), "", "")
			m.ThreadTS = ""
			m.Text = strings.Repeat("x", 100)
			if err := tx.PutMessage(m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if bad := CheckBolt(s.DB()); len(bad) != 0 {
		t.Fatalf("intact store: %v", bad)
	}
	pageSize := s.DB().Info().PageSize
	s.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	// A page in the middle of the file: past the two meta pages and the freelist.
	page := st.Size() / int64(pageSize) / 2
	if _, err := f.WriteAt(make([]byte, pageSize), page*int64(pageSize)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s, err = boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatalf("corrupt data page should still open (meta intact): %v", err)
	}
	defer s.Close()
	if bad := CheckBolt(s.DB()); len(bad) == 0 {
		t.Fatal("bbolt check found nothing in a store with a zeroed page")
	} else {
		t.Logf("found: %v", bad[0])
	}
}
