package boltstore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// BenchmarkChurn simulates an hour (SLACKPOLL_CHURN_MINUTES overrides it) of a daemon
// at the internal profile's fast rates over a 100,000-message store (10 conversations):
// 50 conversations.history calls a minute, each re-reading a page of 100 stored
// messages (1 in 20 changed: a reaction) in one commit, with the pacing state saved in
// a commit before the call and the conversation in one after, as the daemon does.
// It reports the commit latency p90 over the first and the last 10% of the calls
// (end/start is the drift the free list causes), and the file size at the start and
// the end of the last half (flat once freed pages are reused).
//
//	go test ./internal/boltstore -run '^$' -bench Churn -benchtime 1x
func BenchmarkChurn(b *testing.B) {
	for _, c := range []struct {
		name   string
		noSync bool
	}{{"freelist-synced", false}, {"freelist-not-synced", true}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				churn(b, c.noSync)
			}
		})
	}
}

func churn(b *testing.B, noFreelistSync bool) {
	minutes := 60
	if v, err := strconv.Atoi(os.Getenv("SLACKPOLL_CHURN_MINUTES")); err == nil && v > 0 {
		minutes = v
	}
	const convs, perConv, page = 10, 10_000, 100
	path := filepath.Join(b.TempDir(), "churn.db")
	s, err := Open(path, Options{NoSync: true, noFreelistSync: noFreelistSync})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	msgAt := func(c, i int, polled time.Time, changed bool) readmodel.Message {
		m := readmodel.Message{Channel: fmt.Sprintf("C%08d", c), TS: readmodel.TS(fmt.Sprintf("%d.000100", 1_750_000_000+i*7)),
			User: fmt.Sprintf("U%08d", i%50), LastPolledAt: &polled,
			Text: fmt.Sprintf("Deploy %d of api-gateway finished in 4m12s, see <https://ci.example.com/builds/%d|build log>", i, i)}
		if i%3 == 0 || changed {
			m.Reactions = []readmodel.Reaction{{Name: "eyes", Count: 1, Users: []string{"U00000001"}}}
		}
		if changed && i%3 == 0 {
			m.Reactions = nil
		}
		return m
	}
	for c := range convs {
		err := s.Update(func(tx readmodel.Tx) error {
			for i := range perConv {
				if err := tx.PutMessage(msgAt(c, i, t0, false)); err != nil {
					return err
				}
			}
			return tx.PutConversation(readmodel.Conversation{ID: fmt.Sprintf("C%08d", c), Status: readmodel.StatusOK})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	calls := minutes * 50
	lat := make([]time.Duration, 0, 3*calls)
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		return fi.Size()
	}
	var sizeMid int64
	for call := range calls {
		now := t0.Add(time.Duration(call) * time.Minute / 50)
		c, off := call%convs, (call/convs*page)%perConv
		commit := func(fn func(readmodel.Tx) error) {
			start := time.Now()
			if err := s.Update(fn); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		commit(func(tx readmodel.Tx) error {
			return tx.PutMethodState("conversations.history", readmodel.MethodState{LastCall: now})
		})
		commit(func(tx readmodel.Tx) error {
			for i := off; i < off+page; i++ {
				if err := tx.PutMessage(msgAt(c, i, now, (i+call)%20 == 0)); err != nil {
					return err
				}
			}
			return nil
		})
		commit(func(tx readmodel.Tx) error {
			return tx.PutConversation(readmodel.Conversation{ID: fmt.Sprintf("C%08d", c), Status: readmodel.StatusOK, LastSweptAt: &now})
		})
		if call == calls/2 {
			sizeMid = size()
		}
	}
	tenth := len(lat) / 10
	p90 := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)*9/10]
	}
	start, end := p90(lat[:tenth]), p90(lat[len(lat)-tenth:])
	b.ReportMetric(float64(start.Microseconds()), "p90-start-µs")
	b.ReportMetric(float64(end.Microseconds()), "p90-end-µs")
	b.ReportMetric(float64(end)/float64(start), "end/start")
	b.ReportMetric(float64(sizeMid)/(1<<20), "MiB-mid")
	b.ReportMetric(float64(size())/(1<<20), "MiB-end")
}

// BenchmarkOpen measures what not writing the free list would cost at open: bbolt then
// rebuilds it by walking every page of the file. A store of 1,000,000 messages
// (SLACKPOLL_OPEN_BENCH_N overrides it) over 50 conversations, half of them re-read
// once so that the file has free pages, opened read-write with each setting; the
// store's open also checks its tile indexes.
//
//	go test ./internal/boltstore -run '^$' -bench Open -benchtime 5x
func BenchmarkOpen(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("SLACKPOLL_OPEN_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	path := filepath.Join(b.TempDir(), "open.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	polled := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	put := func(from, to int, at time.Time) {
		err := s.Update(func(tx readmodel.Tx) error {
			for i := from; i < to; i++ {
				m := readmodel.Message{Channel: fmt.Sprintf("C%08d", i%50), TS: readmodel.TS(fmt.Sprintf("%d.000100", 1_750_000_000+i)),
					User: "U00000001", Text: fmt.Sprintf("message %d, of an ordinary length for a chat message", i), LastPolledAt: &at}
				if err := tx.PutMessage(m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for done := 0; done < n; done += 50_000 {
		put(done, min(done+50_000, n), polled)
	}
	for done := 0; done < n/2; done += 50_000 {
		put(done, min(done+50_000, n/2), polled.Add(time.Hour))
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		noSync bool
	}{{"freelist-synced", false}, {"freelist-not-synced", true}} {
		b.Run(c.name, func(b *testing.B) {
			// One open with the setting writes (or drops) the free list for the next.
			s, err := Open(path, Options{NoSync: true, noFreelistSync: c.noSync})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Update(func(readmodel.Tx) error { return nil }); err != nil {
				b.Fatal(err)
			}
			s.Close()
			b.ResetTimer()
			for range b.N {
				s, err := Open(path, Options{NoSync: true, noFreelistSync: c.noSync})
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
			b.ReportMetric(float64(fi.Size())/(1<<20), "MiB")
		})
	}
}
