package projection_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/pgtest"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// The benchmarks of the projection (README, "Performance"; docs/sql.md):
//
//	go test ./internal/projection -run '^$' -bench 'Apply|Lag' -benchtime 1x
//	go test ./internal/projection -run '^$' -bench Store1M -benchtime 1x -timeout 2h
//
// Postgres ones need $SLACKPOLL_TEST_POSTGRES_DSN (pgtest).
var benchMessages = flag.Int("projection.messages", 1_000_000, "messages of the store BenchmarkStore1M builds")

// corpus makes message texts with the shape of a workspace's: words drawn from a
// vocabulary by a Zipf law (a few very common, most rare), mentions, links, and
// Japanese in one message of ten.
type corpus struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

var japanese = []string{"東京都の会議は明日です", "京都へ出張します", "明日の会議室は3階", "デプロイが完了しました", "資料を送ります", "障害対応の振り返り", "来週のリリース予定", "お疲れ様です"}

func newCorpus(seed uint64) *corpus {
	rng := rand.New(rand.NewPCG(seed, 7))
	c := &corpus{rng: rng, zipf: rand.NewZipf(rng, 1.1, 1, 19_999)}
	syll := []string{"ka", "lo", "re", "mi", "tus", "an", "der", "ple", "os", "vi", "con", "tra", "ment", "ing", "ble", "pro", "sta", "ge", "na", "qu"}
	seen := map[string]bool{}
	for len(c.vocab) < 20_000 {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteString(syll[rng.IntN(len(syll))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			c.vocab = append(c.vocab, w)
		}
	}
	return c
}

func (c *corpus) word() string { return c.vocab[c.zipf.Uint64()] }

func (c *corpus) text() string {
	n := 4 + c.rng.IntN(20)
	words := make([]string, 0, n+2)
	for range n {
		words = append(words, c.word())
	}
	switch c.rng.IntN(10) {
	case 0:
		words = append(words, japanese[c.rng.IntN(len(japanese))])
	case 1:
		words = append(words, fmt.Sprintf("<@U%08d>", c.rng.IntN(200)))
	case 2:
		words = append(words, "<https://example.com/"+c.word()+"|"+c.word()+">")
	}
	return strings.Join(words, " ")
}

// buildStore fills a new store with n messages over channels conversations, a
// thread every 20 messages, reactions on one in four.
func buildStore(b *testing.B, n, channels int) (*boltstore.Store, *projection.Watched) {
	return buildStoreT(b, n, channels)
}

func buildStoreT(b testing.TB, n, channels int) (*boltstore.Store, *projection.Watched) {
	b.Helper()
	s := storetest.Open(b)
	w := projection.Watch(s)
	c := newCorpus(1)
	polled := t0
	const batchSize = 20_000
	for start := 0; start < n; start += batchSize {
		err := s.Update(func(tx rm.Tx) error {
			if start == 0 {
				if err := tx.PutIdentity(rm.Identity{TeamID: team}); err != nil {
					return err
				}
				for ch := range channels {
					if err := tx.PutConversation(conv(fmt.Sprintf("C%09d", ch), fmt.Sprintf("channel-%d", ch))); err != nil {
						return err
					}
				}
				for u := range 200 {
					if err := tx.PutUser(rm.User{ID: fmt.Sprintf("U%08d", u), DisplayName: "user" + c.word(), FetchedAt: t0}); err != nil {
						return err
					}
				}
			}
			for i := start; i < min(n, start+batchSize); i++ {
				ch := fmt.Sprintf("C%09d", i%channels)
				k := i / channels
				m := rm.Message{Channel: ch, TS: rm.TS(fmt.Sprintf("%d.%06d", 1600000000+k*10, i%channels)),
					User: fmt.Sprintf("U%08d", c.rng.IntN(200)), Text: c.text(), LastPolledAt: &polled}
				switch k % 20 {
				case 0:
					m.ThreadTS, m.ReplyCount, m.LatestReply, m.ReplyWatermark = m.TS, 1, rm.TS(fmt.Sprintf("%d.%06d", 1600000000+k*10+1, i%channels)), rm.TS(fmt.Sprintf("%d.%06d", 1600000000+k*10+1, i%channels))
				case 1:
					m.ThreadTS = rm.TS(fmt.Sprintf("%d.%06d", 1600000000+(k-1)*10, i%channels))
					m.TS = rm.TS(fmt.Sprintf("%d.%06d", 1600000000+(k-1)*10+1, i%channels))
				}
				if i%4 == 0 {
					m.Reactions = []rm.Reaction{{Name: "eyes", Count: 2, Users: []string{"U00000001", "U00000002"}}}
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
	return s, w
}

// eachBenchTarget runs fn once per target kind. Postgres commits wait for its disk
// here (synchronous_commit on), as in production.
func eachBenchTarget(b *testing.B, fn func(b *testing.B, tg *projection.Target)) {
	for _, kind := range []string{projection.KindSQLite, projection.KindPostgres} {
		b.Run(kind, func(b *testing.B) {
			if kind == projection.KindSQLite {
				fn(b, openTarget(b, kind))
				return
			}
			if os.Getenv(pgtest.EnvDSN) == "" {
				b.Skip("no Postgres")
			}
			dsn, schema := pgtest.Schema(b)
			tg, err := projection.OpenPostgres(context.Background(), strings.Replace(dsn, "synchronous_commit=off", "synchronous_commit=on", 1), schema)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = tg.Close() })
			fn(b, tg)
		})
	}
}

// BenchmarkApply measures how fast a running projector applies changes: 20,000
// edits (text and reactions) of messages of a 20,000-message store, each committed
// with its change row as the writer does, applied in batches; against a plain bulk
// insert of the same 20,000 rows (one multi-row INSERT per 300 rows, one
// transaction, into a table with the messages table's columns and no index).
func BenchmarkApply(b *testing.B) {
	eachBenchTarget(b, func(b *testing.B, tg *projection.Target) {
		const n, channels = 20_000, 10
		s, w := buildStore(b, n, channels)
		p := projection.New(projection.Options{Store: w, Target: tg})
		if err := p.Sync(b.Context(), false); err != nil {
			b.Fatal(err)
		}
		var refs []rm.Ref
		if err := s.View(func(tx rm.Tx) error {
			for ch := range channels {
				if err := tx.Timeline(fmt.Sprintf("C%09d", ch), "", "", func(m rm.Message) error {
					refs = append(refs, rm.Ref{Channel: m.Channel, TS: m.TS})
					return nil
				}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		// A running projector, current; then the edits, committed 100 to a
		// transaction (a page) with their change rows as the writer does, while it
		// follows.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		p = projection.New(projection.Options{Store: w, Target: tg})
		go func() { defer close(done); _ = p.Run(ctx) }()
		defer func() { cancel(); <-done }()
		for !p.Idle() {
			time.Sleep(time.Millisecond)
		}
		c := newCorpus(2)
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < len(refs); i += 100 {
			update(b, w, func(tx rm.Tx) error {
				for _, ref := range refs[i:min(i+100, len(refs))] {
					m, _, err := tx.Message(ref.Channel, ref.TS)
					if err != nil {
						return err
					}
					m.Text = c.text()
					m.Reactions = append(m.Reactions, rm.Reaction{Name: "+1", Count: 1, Users: []string{"U00000003"}})
					ch := rm.Change{Kind: rm.ChangeMessageEdited, Channel: ref.Channel, TS: ref.TS, ObservedAt: t0}
					if err := firstErr(tx.PutMessage(m), tx.AppendChange(&ch)); err != nil {
						return err
					}
				}
				return nil
			})
		}
		written := time.Since(start)
		var last uint64
		_ = s.View(func(tx rm.Tx) error { _, last, _ = tx.ChangeBounds(); return nil })
		for !p.Idle() || p.Status().CursorSeq < last {
			time.Sleep(time.Millisecond)
		}
		took := time.Since(start)
		b.StopTimer()
		b.ReportMetric(written.Seconds()*1000, "ms-store-writes")
		rate := float64(last) / took.Seconds()
		bulk := bulkInsert(b, tg, s, refs)
		b.ReportMetric(rate, "changes/s")
		b.ReportMetric(bulk, "bulk-rows/s")
		b.ReportMetric(bulk/rate, "x-bulk")
	})
}

// bulkInsert inserts the projected rows of refs into a plain table and returns rows
// per second.
func bulkInsert(b *testing.B, tg *projection.Target, s rm.Store, refs []rm.Ref) float64 {
	b.Helper()
	typ := map[string]string{projection.KindSQLite: "TEXT", projection.KindPostgres: "text"}[tg.Kind()]
	cols := []string{"team_id", "channel", "ts", "thread_ts", "user_id", "user_label", "text", "search_text", "last_polled_at"}
	var defs []string
	for _, c := range cols {
		defs = append(defs, c+" "+typ)
	}
	if _, err := tg.DB().Exec("CREATE TABLE bulk_messages (" + strings.Join(defs, ", ") + ")"); err != nil {
		b.Fatal(err)
	}
	var rows [][]any
	_ = s.View(func(tx rm.Tx) error {
		for _, r := range refs {
			m, _, _ := tx.Message(r.Channel, r.TS)
			text, _ := projection.Render(m.Text, projection.Names{})
			rows = append(rows, []any{team, m.Channel, string(m.TS), string(m.ThreadTS), m.User, m.User, m.Text, text, m.LastPolledAt.UTC().Format(time.RFC3339Nano)})
		}
		return nil
	})
	start := time.Now()
	tx, err := tg.DB().Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(rows); i += 300 {
		chunk := rows[i:min(i+300, len(rows))]
		var ph []string
		var args []any
		for _, r := range chunk {
			var one []string
			for range r {
				args = append(args, nil)
				if tg.Kind() == projection.KindPostgres {
					one = append(one, fmt.Sprintf("$%d", len(args)))
				} else {
					one = append(one, "?")
				}
				args[len(args)-1] = r[len(one)-1]
			}
			ph = append(ph, "("+strings.Join(one, ", ")+")")
		}
		if _, err := tx.Exec("INSERT INTO bulk_messages VALUES "+strings.Join(ph, ", "), args...); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return float64(len(rows)) / time.Since(start).Seconds()
}

// BenchmarkLag measures the projection's lag at steady state: a writer commits a page
// of 100 message reads (read times, one in ten edited, with its change row) every
// 100 ms to a 20,000-message store for 20 s, as a busy daemon at internal rates;
// the lag (seq and seconds, from Status) is sampled every 20 ms.
func BenchmarkLag(b *testing.B) {
	eachBenchTarget(b, func(b *testing.B, tg *projection.Target) {
		const n, channels = 20_000, 10
		s, w := buildStore(b, n, channels)
		p := projection.New(projection.Options{Store: w, Target: tg})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = p.Run(ctx) }()
		defer func() { cancel(); <-done }()
		for !p.Idle() {
			time.Sleep(10 * time.Millisecond)
		}
		var refs []rm.Ref
		_ = s.View(func(tx rm.Tx) error {
			return tx.Timeline("C000000000", "", "", func(m rm.Message) error {
				refs = append(refs, rm.Ref{Channel: m.Channel, TS: m.TS})
				return nil
			})
		})
		c := newCorpus(3)
		stop := make(chan struct{})
		var lagSeq []float64
		var lagSec []float64
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				st := p.Status()
				lagSeq = append(lagSeq, float64(st.LagSeq))
				lagSec = append(lagSec, st.LagSeconds)
			}
		}()
		b.ResetTimer()
		end := time.Now().Add(20 * time.Second)
		for i := 0; time.Now().Before(end); i++ {
			at := time.Now()
			update(b, w, func(tx rm.Tx) error {
				for j := range 100 {
					ref := refs[(i*100+j)%len(refs)]
					m, _, err := tx.Message(ref.Channel, ref.TS)
					if err != nil {
						return err
					}
					m.LastPolledAt = &at
					if j%10 == 0 {
						m.Text = c.text()
						ch := rm.Change{Kind: rm.ChangeMessageEdited, Channel: ref.Channel, TS: ref.TS, ObservedAt: at}
						if err := tx.AppendChange(&ch); err != nil {
							return err
						}
					}
					if err := tx.PutMessage(m); err != nil {
						return err
					}
				}
				return nil
			})
			time.Sleep(time.Until(at.Add(100 * time.Millisecond)))
		}
		b.StopTimer()
		close(stop)
		<-sampled
		slices.Sort(lagSeq)
		slices.Sort(lagSec)
		b.ReportMetric(quantile(lagSec, 0.5)*1000, "ms-lag-p50")
		b.ReportMetric(quantile(lagSec, 0.99)*1000, "ms-lag-p99")
		b.ReportMetric(lagSec[len(lagSec)-1]*1000, "ms-lag-max")
		b.ReportMetric(quantile(lagSeq, 0.99), "seq-lag-p99")
	})
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

// BenchmarkStore1M builds a store of -projection.messages messages (1,000,000 by
// default: 20 conversations, a thread every 20 messages, reactions on one in four,
// texts from a Zipf vocabulary with mentions, links and Japanese), then for each
// target: the rebuild from the store (one transaction), the disk it takes per
// message (SQLite: the file after a checkpoint; Postgres: the schema's tables,
// indexes and TOAST), and the latency of 1,000 searches of 20 hits: common and rare
// words, two words, a phrase, a word in one conversation, and Japanese substrings of
// two and three characters.
func BenchmarkStore1M(b *testing.B) {
	n := *benchMessages
	start := time.Now()
	s, w := buildStore(b, n, 20)
	b.Logf("store of %d messages built in %v", n, time.Since(start).Round(time.Second))
	if fi, err := os.Stat(s.Path()); err == nil {
		b.Logf("bbolt store: %.0f bytes a message", float64(fi.Size())/float64(n))
	}
	queries := searchMix(n)
	eachBenchTarget(b, func(b *testing.B, tg *projection.Target) {
		log := slogDiscard()
		p := projection.New(projection.Options{Store: w, Target: tg, Log: log})
		b.ResetTimer()
		start, cpu := time.Now(), cpuTime()
		if err := p.Sync(b.Context(), true); err != nil {
			b.Fatal(err)
		}
		rebuild, rebuildCPU := time.Since(start), cpuTime()-cpu
		b.StopTimer()
		b.ReportMetric(rebuild.Seconds(), "s-rebuild")
		// The process's CPU time says what the rebuild costs on a machine others
		// share; Postgres's own work is not in it.
		b.ReportMetric(rebuildCPU.Seconds(), "s-cpu-rebuild")
		b.ReportMetric(float64(n)/rebuild.Seconds(), "msgs/s-rebuild")
		b.ReportMetric(diskPerMessage(b, tg, n), "bytes/msg")
		var lat []float64
		byClass := map[int][]float64{}
		hits := 0
		for i, q := range queries {
			t := time.Now()
			page, err := tg.Search(b.Context(), team, q, projection.Freshness{})
			if err != nil {
				b.Fatalf("%+v: %v", q, err)
			}
			ms := time.Since(t).Seconds() * 1000
			lat = append(lat, ms)
			byClass[i%10] = append(byClass[i%10], ms)
			hits += len(page.Items)
		}
		for class, l := range byClass {
			slices.Sort(l)
			b.Logf("%s class %d (%s): p50 %.1f ms, p99 %.1f ms, max %.1f ms", tg.Kind(), class, searchClasses[class], quantile(l, 0.5), quantile(l, 0.99), l[len(l)-1])
		}
		slices.Sort(lat)
		b.ReportMetric(quantile(lat, 0.5), "ms-search-p50")
		b.ReportMetric(quantile(lat, 0.99), "ms-search-p99")
		b.ReportMetric(lat[len(lat)-1], "ms-search-max")
		b.ReportMetric(float64(hits)/float64(len(queries)), "hits/search")
	})
}

var searchClasses = []string{"frequent word", "frequent word", "frequent word", "any word", "any word",
	"two words", "phrase", "word in a conversation", "Japanese, 2 characters", "Japanese, 3 characters"}

// searchMix is the benchmark's 1,000 searches.
func searchMix(n int) []projection.Query {
	c := newCorpus(9)
	rng := rand.New(rand.NewPCG(9, 9))
	var out []projection.Query
	for i := range 1000 {
		var q projection.Query
		switch i % 10 {
		case 0, 1, 2:
			q.Q = c.word() // by frequency: mostly common words
		case 3, 4:
			q.Q = c.vocab[rng.IntN(len(c.vocab))] // any word: mostly rare
		case 5:
			q.Q = c.word() + " " + c.word()
		case 6:
			q.Q = `"` + c.word() + " " + c.word() + `"`
		case 7:
			q.Q, q.Channel = c.word(), fmt.Sprintf("C%09d", rng.IntN(20))
		case 8:
			s := []rune(japanese[rng.IntN(len(japanese))])
			j := rng.IntN(len(s) - 1)
			q.Q = string(s[j : j+2])
		case 9:
			s := []rune(japanese[rng.IntN(len(japanese))])
			j := rng.IntN(len(s) - 2)
			q.Q = string(s[j : j+3])
		}
		q.Limit = 20
		out = append(out, q)
	}
	return out
}

// diskPerMessage is the target's size on disk over n.
func diskPerMessage(b *testing.B, tg *projection.Target, n int) float64 {
	var size int64
	if tg.Kind() == projection.KindSQLite {
		if _, err := tg.DB().Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(tg.Name())
		if err != nil {
			b.Fatal(err)
		}
		size = fi.Size()
	} else {
		err := tg.DB().QueryRow(`SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE ns.nspname = current_schema() AND c.relkind = 'r'`).Scan(&size)
		if err != nil {
			b.Fatal(err)
		}
	}
	return float64(size) / float64(n)
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
