package projection_test

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// project writes msgs (and the conversations they name) to a new store and syncs tg
// with it.
func project(t *testing.T, tg *projection.Target, users []rm.User, msgs ...rm.Message) rm.Store {
	t.Helper()
	s, w := openStore(t)
	update(t, w, func(tx rm.Tx) error {
		seen := map[string]bool{}
		for _, m := range msgs {
			if !seen[m.Channel] {
				seen[m.Channel] = true
				if err := tx.PutConversation(conv(m.Channel, strings.ToLower(m.Channel))); err != nil {
					return err
				}
			}
			if err := tx.PutMessage(m); err != nil {
				return err
			}
		}
		for _, u := range users {
			if err := tx.PutUser(u); err != nil {
				return err
			}
		}
		return nil
	})
	p := projection.New(projection.Options{Store: s, Target: tg})
	if err := p.Sync(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	verify(t, s, tg)
	return s
}

func search(t *testing.T, tg *projection.Target, q projection.Query) projection.Page {
	t.Helper()
	page, err := tg.Search(t.Context(), team, q, projection.Freshness{Tracked: ptr(300.0), Watched: ptr(60.0)})
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	return page
}

func hitTSs(p projection.Page) []string {
	var out []string
	for _, h := range p.Items {
		out = append(out, string(h.TS))
	}
	return out
}

// TestSearchFindsJapaneseBySubstrings: Japanese has no spaces between words; a
// substring of one, two or three characters finds the messages that hold it, and only
// those, in both databases.
func TestSearchFindsJapaneseBySubstrings(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *projection.Target) {
		texts := map[string]string{
			"1796032801.000000": "東京都の会議は明日です",
			"1796032802.000000": "京都へ出張します",
			"1796032803.000000": "明日の会議室は3階",
			"1796032804.000000": "ｶﾀｶﾅの資料を送ります", // half-width katakana
			"1796032805.000000": "Deploy finished: デプロイ完了",
		}
		var msgs []rm.Message
		for ts, text := range texts {
			msgs = append(msgs, msg("C1", ts, "U1", text))
		}
		project(t, tg, nil, msgs...)
		for _, c := range []struct {
			q    string
			want []string
		}{
			{"京都", []string{"1796032802.000000", "1796032801.000000"}},                     // 2 characters, inside a run and at its start
			{"東京", []string{"1796032801.000000"}},                                          // 2 characters at the start of a run
			{"会議", []string{"1796032803.000000", "1796032801.000000"}},                     // 2 characters
			{"明日です", []string{"1796032801.000000"}},                                        // the end of a run
			{"会議室", []string{"1796032803.000000"}},                                         // 3 characters
			{"都の会", []string{"1796032801.000000"}},                                         // 3 characters across words
			{"京", []string{"1796032802.000000", "1796032801.000000"}},                      // 1 character
			{"す", []string{"1796032804.000000", "1796032802.000000", "1796032801.000000"}}, // the last character of runs
			{"カタカナ", []string{"1796032804.000000"}},                                        // full width finds half width
			{"デプロイ", []string{"1796032805.000000"}},                                        // katakana after Latin text
			{"deploy デプロイ", []string{"1796032805.000000"}},                                 // both must match
			{"会議 出張", nil},                                                                 // no message has both
			{"大阪", nil},
		} {
			got := hitTSs(search(t, tg, projection.Query{Q: c.q}))
			if !slices.Equal(got, c.want) {
				t.Errorf("search %q = %v, want %v (newest first)", c.q, got, c.want)
			}
		}
		page := search(t, tg, projection.Query{Q: "会議"})
		if got := page.Items[0].Snippet; got != "明日の«会議»室は3階" {
			t.Errorf("snippet = %q", got)
		}
	})
}

// TestSearchWordsFiltersAndPages: words match as prefixes (case and accents
// folded), quoted text as a phrase; the filters and the cursor work together.
func TestSearchWordsFiltersAndPages(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *projection.Target) {
		var msgs []rm.Message
		for i := range 45 {
			ch := []string{"C1", "C2", "C3"}[i%3]
			m := msg(ch, fmt.Sprintf("17960328%02d.000000", i), []string{"U1", "U2"}[i%2], fmt.Sprintf("Deployment %d of the Café service finished <@U2>", i))
			if i == 7 {
				m.Record = "ticket-7"
				m.ThreadTS, m.ReplyCount, m.LatestReply = m.TS, 1, "1796032899.000000"
			}
			msgs = append(msgs, m)
		}
		reply := msg("C2", "1796032899.000000", "U1", "reply about the deployment")
		reply.ThreadTS = "1796032807.000000"
		msgs = append(msgs, reply)
		project(t, tg, []rm.User{{ID: "U2", DisplayName: "bee"}}, msgs...)

		all := search(t, tg, projection.Query{Q: "DEPLOY cafe", Limit: 100})
		if len(all.Items) != 45 || all.NextCursor != "" {
			t.Fatalf("DEPLOY cafe: %d hits (cursor %q), want 45", len(all.Items), all.NextCursor)
		}
		var paged []string
		q := projection.Query{Q: "deploy", Limit: 7}
		for range 20 {
			p := search(t, tg, q)
			paged = append(paged, hitTSs(p)...)
			if p.NextCursor == "" {
				break
			}
			q.Cursor = p.NextCursor
		}
		if len(paged) != 46 || !slices.IsSortedFunc(paged, func(a, b string) int { return strings.Compare(b, a) }) {
			t.Errorf("paging by 7: %d hits, want 46 newest first: %v", len(paged), paged)
		}
		if got := search(t, tg, projection.Query{Q: `"service finished"`, Limit: 100}); len(got.Items) != 45 {
			t.Errorf("phrase: %d hits, want 45", len(got.Items))
		}
		if got := search(t, tg, projection.Query{Q: `"finished service"`}); len(got.Items) != 0 {
			t.Errorf("phrase in the wrong order: %d hits, want 0", len(got.Items))
		}
		if got := search(t, tg, projection.Query{Q: "@bee", Limit: 100}); len(got.Items) != 45 {
			t.Errorf("a mention, by the name it renders to: %d hits, want 45", len(got.Items))
		}
		for _, c := range []struct {
			q    projection.Query
			want int
		}{
			{projection.Query{Q: "deploy", Channel: "C2"}, 16},
			{projection.Query{Q: "deploy", Channels: []string{"C1", "C3"}, Limit: 100}, 30},
			{projection.Query{Q: "deploy", Channels: []string{"C1", "C3"}, Channel: "C2"}, 0},
			{projection.Query{Q: "deploy", Channels: []string{"C9"}}, 0},
			{projection.Query{Q: "deploy", User: "U2", Limit: 100}, 22},
			{projection.Query{Q: "deploy", User: "bee", Limit: 100}, 22},
			{projection.Query{Q: "deploy", After: "1796032810.000000", Before: "1796032820.000000"}, 9},
			{projection.Query{Q: "deploy", Record: "ticket-7"}, 2}, // the message and its thread's reply
		} {
			if got := search(t, tg, c.q); len(got.Items) != c.want {
				t.Errorf("%+v: %d hits, want %d", c.q, len(got.Items), c.want)
			}
		}
		h := search(t, tg, projection.Query{Q: "deploy", Record: "ticket-7"}).Items
		if h[0].Class != projection.ClassTracked || h[0].StalenessSeconds == nil || *h[0].StalenessSeconds != 300 || h[0].LastPolledAt == nil {
			t.Errorf("freshness of a hit: class %s staleness %v last_polled_at %v, want tracked, 300 s and a time", h[0].Class, h[0].StalenessSeconds, h[0].LastPolledAt)
		}
		if !strings.Contains(h[1].Snippet, "«Deployment»") {
			t.Errorf("snippet %q does not mark the match", h[1].Snippet)
		}
		for _, bad := range []projection.Query{{Q: ""}, {Q: "!!! ???"}, {Q: strings.Repeat("a ", 40)}} {
			if _, err := tg.Search(t.Context(), team, bad, projection.Freshness{}); !errors.Is(err, projection.ErrBadQuery) {
				t.Errorf("search %q: err = %v, want ErrBadQuery", bad.Q, err)
			}
		}
		if _, err := tg.Search(t.Context(), team, projection.Query{Q: "deploy", Cursor: "nope"}, projection.Freshness{}); !errors.Is(err, projection.ErrBadCursor) {
			t.Errorf("bad cursor: err = %v, want ErrBadCursor", err)
		}
	})
}

// TestSearchFindsRealMessages projects the messages captured from real Slack
// workspaces (../shared/fixtures/realdata; skipped when absent) and finds each one
// that has a word of at least four letters or digits by that word, within its conversation and
// second.
func TestSearchFindsRealMessages(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "fixtures", "realdata", "dataset.json.gz")
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("real data not present: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Conversations []struct {
			ID       string `json:"id"`
			Messages []struct {
				TS       string `json:"ts"`
				ThreadTS string `json:"thread_ts"`
				User     string `json:"user"`
				BotID    string `json:"bot_id"`
				Subtype  string `json:"subtype"`
				Text     string `json:"text"`
			} `json:"messages"`
		} `json:"conversations"`
	}
	if err := json.NewDecoder(zr).Decode(&d); err != nil {
		t.Fatal(err)
	}
	var msgs []rm.Message
	seen := map[rm.Ref]bool{}
	for _, c := range d.Conversations {
		for _, m := range c.Messages {
			ts, err := rm.ParseTS(m.TS)
			ref := rm.Ref{Channel: c.ID, TS: ts}
			if err != nil || seen[ref] {
				continue
			}
			seen[ref] = true
			mm := msg(c.ID, string(ts), m.User, m.Text)
			mm.BotID, mm.Subtype = m.BotID, m.Subtype
			if m.ThreadTS == m.TS {
				mm.ThreadTS = ts
			}
			msgs = append(msgs, mm)
		}
	}
	eachTarget(t, func(t *testing.T, tg *projection.Target) {
		project(t, tg, nil, msgs...)
		found, tried := 0, 0
		for _, m := range msgs {
			rendered, _ := projection.Render(m.Text, projection.Names{})
			word := ""
			for _, w := range strings.FieldsFunc(rendered, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
				if len([]rune(w)) >= 4 {
					word = w
					break
				}
			}
			if word == "" {
				continue
			}
			tried++
			sec := m.TS[:strings.IndexByte(string(m.TS), '.')]
			before := rm.TS(fmt.Sprintf("%d.000000", mustAtoi(t, string(sec))+1))
			page := search(t, tg, projection.Query{Q: word, Channel: m.Channel, After: rm.TS(fmt.Sprintf("%d.999999", mustAtoi(t, string(sec))-1)), Before: before, Limit: 100})
			if slices.Contains(hitTSs(page), string(m.TS)) {
				found++
			} else {
				t.Errorf("%s/%s: not found by %q (text %.80q)", m.Channel, m.TS, word, m.Text)
			}
		}
		t.Logf("%d real messages projected; %d searched by one of their words, %d found", len(msgs), tried, found)
		if tried < 500 {
			t.Errorf("only %d real messages had a word to search for: the fixture changed?", tried)
		}
	})
}

func mustAtoi(t *testing.T, s string) int64 {
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
