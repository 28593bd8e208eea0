package export_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// benchStore returns a store of n messages over 50 conversations, a tenth of them
// thread replies, by 50 looked-up users, with a reaction on every third message: the
// shape of the measurements (SLACKPOLL_EXPORT_BENCH_N overrides n).
func benchStore(b *testing.B, n int, feed bool) (*boltstore.Store, []string) {
	if v, err := strconv.Atoi(os.Getenv("SLACKPOLL_EXPORT_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "export.db"), boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	polled := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var convs []string
	for c := range 50 {
		convs = append(convs, fmt.Sprintf("C%08d", c))
	}
	err = s.Update(func(tx rm.Tx) error {
		for u := range 50 {
			if err := tx.PutUser(rm.User{ID: fmt.Sprintf("U%08d", u), DisplayName: fmt.Sprintf("user %d", u),
				RealName: fmt.Sprintf("User Number %d", u), FetchedAt: polled}); err != nil {
				return err
			}
		}
		for _, id := range convs {
			if err := tx.PutConversation(rm.Conversation{ID: id, Name: "general-" + id, Type: "channel", Status: rm.StatusOK}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	// With the feed, every message goes through the writer with backfill on: a
	// message_posted or reply_added change each, as a first sync records them.
	w := rm.NewWriter(s, rm.WriterOptions{Feed: rm.FeedConfig{Backfill: true}, Now: func() time.Time { return polled }})
	const batch = 20_000
	for done := 0; done < n; done += batch {
		if feed {
			var msgs []rm.Message
			for i := done; i < min(done+batch, n); i++ {
				msgs = append(msgs, benchMessage(convs, i, polled))
			}
			if _, err := w.ApplyReads(msgs, &rm.Identity{UserID: "U0SELF000", TeamID: "T1"}, polled); err != nil {
				b.Fatal(err)
			}
			continue
		}
		err := s.Update(func(tx rm.Tx) error {
			for i := done; i < min(done+batch, n); i++ {
				m := benchMessage(convs, i, polled)
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
	return s, convs
}

// benchMessage is message i of benchStore.
func benchMessage(convs []string, i int, polled time.Time) rm.Message {
	ch := convs[i%len(convs)]
	sec := 1_750_000_000 + i
	m := rm.Message{Channel: ch, TS: rm.TS(fmt.Sprintf("%d.000100", sec)), User: fmt.Sprintf("U%08d", i%50),
		Text:         fmt.Sprintf("Deploy %d of api-gateway finished in 4m12s, see <https://ci.example.com/builds/%d|build log>", i, i),
		LastPolledAt: &polled}
	if i%10 == 9 { // a reply to the conversation's previous message
		m.ThreadTS = rm.TS(fmt.Sprintf("%d.000100", sec-len(convs)))
	}
	if i%3 == 0 {
		m.Reactions = []rm.Reaction{{Name: "eyes", Count: 2, Users: []string{"U00000001", "U00000002"}}}
	}
	return m
}

// BenchmarkExport writes the whole read model of a 100,000-message store as JSON
// Lines: messages/s, CPU time per export (the process's user+system time, steadier
// than wall time on a shared machine) and the store's bytes per message. The
// "reference" run writes the messages as the export did before: encoding/json per
// line and each author's user record read per line, on the same store and load.
//
//	go test ./internal/export -run '^$' -bench Export
func BenchmarkExport(b *testing.B) {
	for _, feed := range []bool{false, true} {
		name := "store=plain"
		if feed {
			name = "store=feed-backfill"
		}
		b.Run(name, func(b *testing.B) { benchExport(b, feed) })
	}
}

func benchExport(b *testing.B, feed bool) {
	const n = 100_000
	s, convs := benchStore(b, n, feed)
	var msgs int
	if err := s.View(func(tx rm.Tx) error {
		for _, c := range convs {
			cc, err := tx.Counts(c)
			if err != nil {
				return err
			}
			msgs += cc.Messages
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(s.Path())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		write func(rm.Tx, io.Writer, []string) error
	}{{"write", export.Write}, {"reference", referenceWrite}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				if err := s.View(func(tx rm.Tx) error { return c.write(tx, io.Discard, convs) }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(msgs*b.N)/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric(float64(msgs*b.N)/(cpuTime(b)-cpu0).Seconds(), "msgs/cpu-s")
			b.ReportMetric(float64(fi.Size())/float64(msgs), "store-B/msg")
		})
	}
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// referenceWrite is the message part of Write as it was before labels were memoized
// and lines hand-encoded: encoding/json per line, the author's record read per line.
func referenceWrite(tx rm.Tx, w io.Writer, ids []string) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, id := range ids {
		err := tx.Timeline(id, "", "", func(m rm.Message) error {
			line, err := export.MessageLineOf(tx, &m)
			if err != nil {
				return err
			}
			return enc.Encode(line)
		})
		if err != nil {
			return err
		}
	}
	return bw.Flush()
}
