package boltstore

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// historyPage returns a 999-message history page of channel C0AAAAAAA, newest first
// as Slack sends it: top-level messages with realistic text and two or three reactions
// each, every one tracked, every tenth a thread parent.
func historyPage() []readmodel.Message {
	page := make([]readmodel.Message, 999)
	for i := range page {
		m := readmodel.Message{
			Channel: "C0AAAAAAA",
			TS:      readmodel.TS(fmt.Sprintf("%d.%06d", 1754467200+i*37, i*101%1000000)),
			User:    fmt.Sprintf("U0%07d", i%40),
			Text:    fmt.Sprintf("Deploy %d of api-gateway finished in 4m12s, see <https://ci.example.com/builds/%d|build log> cc <@U0BBBBBBB>", i, 90000+i),
			Reactions: []readmodel.Reaction{
				{Name: "white_check_mark", Count: 2, Users: []string{"U0AAAAAAA", "U0BBBBBBB"}},
				{Name: "eyes", Count: 1, Users: []string{"U0CCCCCCC"}},
			},
		}
		if i%3 == 0 {
			m.Reactions = append(m.Reactions, readmodel.Reaction{Name: "thumbsup::skin-tone-2", Count: 3, Users: []string{"U0AAAAAAA", "U0DDDDDDD", "U0EEEEEEE"}})
		}
		if i%10 == 0 { // a thread parent
			m.ThreadTS = m.TS
			m.ReplyCount = 4
			m.LatestReply = readmodel.TS(fmt.Sprintf("%d.000000", 1754467200+i*37+30))
		}
		page[len(page)-1-i] = m
	}
	return page
}

// pageStore returns a NoSync store that already holds the page, so both benchmarks
// overwrite existing records, as a re-read of a bulk window does.
func pageStore(b *testing.B, page []readmodel.Message) *Store {
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	polled := time.Unix(1764496800, 0)
	putPage(b, s, page, &polled)
	return s
}

func putPage(b *testing.B, s *Store, page []readmodel.Message, polled *time.Time) {
	err := s.Update(func(tx readmodel.Tx) error {
		for i := range page {
			m := page[i]
			m.LastPolledAt = polled
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

// BenchmarkApplyHistoryPage applies a 999-message page in one Update: per message,
// read the old record's header, encode, put, and move its tail index entry (every
// iteration is a new poll time).
func BenchmarkApplyHistoryPage(b *testing.B) {
	page := historyPage()
	s := pageStore(b, page)
	base := time.Unix(1764496800, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		polled := base.Add(time.Duration(i+1) * time.Second)
		putPage(b, s, page, &polled)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(page)), "ns/msg")
}

// BenchmarkRawPutPage is the floor for BenchmarkApplyHistoryPage: bbolt Puts of the
// same messages, already encoded, into the same bucket in one Update, no indexes.
func BenchmarkRawPutPage(b *testing.B) {
	page := historyPage()
	s := pageStore(b, page)
	polled := time.Unix(1764496801, 0)
	keys := make([][]byte, len(page))
	vals := make([][]byte, len(page))
	for i := range page {
		m := page[i]
		m.LastPolledAt = &polled
		k := m.TS.Key()
		keys[i] = k[:]
		vals[i] = appendMessage(nil, &m)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := s.Update(func(rtx readmodel.Tx) error {
			b := rtx.(*tx).btx.Bucket(bChan).Bucket([]byte("C0AAAAAAA")).Bucket(bMsgs)
			for j := range keys {
				if err := b.Put(keys[j], vals[j]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(page)), "ns/msg")
}

// tailStore builds a store of n tracked messages over 50 channels, a tenth never
// polled and the rest polled at random times in the last week, in batches of 50k per
// transaction with NoSync.
func tailStore(b *testing.B, n int) *Store {
	s, err := Open(filepath.Join(b.TempDir(), "tail.db"), Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	rng := rand.New(rand.NewPCG(5, 6))
	now := time.Unix(1764496800, 0)
	const batch = 50_000
	start := time.Now()
	for done := 0; done < n; done += batch {
		err := s.Update(func(tx readmodel.Tx) error {
			for i := done; i < min(done+batch, n); i++ {
				m := readmodel.Message{
					Channel: fmt.Sprintf("C%08d", i%50),
					TS:      readmodel.TS(fmt.Sprintf("%d.%06d", 1700000000+i/50, i%1000000)),
					User:    "U0AAAAAAA",
					Text:    "a message of ordinary length, with a link <https://example.com/x>",
				}
				if rng.IntN(10) > 0 {
					p := now.Add(-time.Duration(rng.Int64N(int64(7 * 24 * time.Hour))))
					m.LastPolledAt = &p
				}
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
	b.Logf("built %d tracked messages in %v", n, time.Since(start).Round(time.Millisecond))
	return s
}

// BenchmarkTailOldest reads the 25 least recently polled messages, as the tail rotation
// does, from stores of 10k and 1M tracked messages: the cost must not grow with the
// store.
func BenchmarkTailOldest(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		s := tailStore(b, n)
		name := fmt.Sprintf("%dk", n/1000)
		if n >= 1_000_000 {
			name = fmt.Sprintf("%dM", n/1_000_000)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				err := s.View(func(tx readmodel.Tx) error {
					es, err := tx.TailOldest(25, nil)
					if err == nil && len(es) != 25 {
						err = fmt.Errorf("got %d entries", len(es))
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTimelineTile finds the tile of a conversation's newest message, the worst
// case (the walk to it passes every record of the conversation), in conversations of
// 10k and 200k messages, a tenth of them replies.
func BenchmarkTimelineTile(b *testing.B) {
	for _, n := range []int{10_000, 200_000} {
		s, err := Open(filepath.Join(b.TempDir(), "tile.db"), Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		var newest readmodel.TS
		for done := 0; done < n; done += 50_000 {
			err := s.Update(func(tx readmodel.Tx) error {
				for i := done; i < min(done+50_000, n); i++ {
					m := readmodel.Message{Channel: "C1", TS: readmodel.TS(fmt.Sprintf("%d.000000", 1700000000+i)),
						User: "U0AAAAAAA", Text: "a message of ordinary length, with a link <https://example.com/x>"}
					if i%10 == 9 {
						m.ThreadTS = readmodel.TS(fmt.Sprintf("%d.000000", 1700000000+i-1))
					} else {
						newest = m.TS
					}
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
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				err := s.View(func(tx readmodel.Tx) error {
					tile, err := tx.TimelineTile("C1", newest, 15)
					if err == nil && (len(tile.Messages) == 0 || tile.Messages[len(tile.Messages)-1].TS != newest) {
						err = fmt.Errorf("tile %d messages, not ending at the newest", len(tile.Messages))
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriterUnchangedPage applies the page of BenchmarkRawPutPage through the
// writer, the feed on (with backfill), as a re-read that finds every message as
// stored: per message, the stored record read and compared, the feed's comparison
// (which records nothing), and the read times written. Set it beside
// BenchmarkRawPutPage.
func BenchmarkWriterUnchangedPage(b *testing.B) {
	page := historyPage()
	s := pageStore(b, page)
	base := time.Unix(1764496800, 0)
	n := 0
	w := readmodel.NewWriter(s, readmodel.WriterOptions{
		Feed: readmodel.FeedConfig{Backfill: true},
		Now:  func() time.Time { return base.Add(time.Duration(n+1) * time.Second) },
	})
	id := &readmodel.Identity{UserID: "U0SELF000", TeamID: "T1"}
	if _, err := w.ApplyReads(page, id, base); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n = 0; n < b.N; n++ {
		if _, err := w.ApplyReads(page, id, base.Add(time.Duration(n+1)*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var changes int
	if err := s.View(func(tx readmodel.Tx) error {
		_, last, err := tx.ChangeBounds()
		changes = int(last)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	if changes > 0 {
		b.Fatalf("an unchanged page recorded %d changes", changes)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(page)), "ns/msg")
}
