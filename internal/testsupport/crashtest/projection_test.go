package crashtest

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/projection"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/testsupport/pgtest"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

var flagProjKills = flag.Int("projection.kills", 30, "SIGKILLs of TestProjectionSurvivesKills that must land while a projector applies a batch")

// TestProjectionSurvivesKills SIGKILLs `slackpoll run` while its projectors apply a
// batch to SQLite and to Postgres (the kill follows the projector's "applying a
// batch" log line by 0 to 3 ms), with the workspace changing between runs. After
// each kill a daemon is started again, with no Slack budget, until both projections
// report they are current; it is stopped with SIGTERM, and each projection must then
// equal the store it left row for row (projection.Verify). A kill that the output
// shows landed between a batch's start and its commit counts towards
// -projection.kills.
func TestProjectionSurvivesKills(t *testing.T) {
	slackpollBinary(t)
	dsn, schema := pgtest.Schema(t)
	seed := *flagSeed
	e := newEnv(t, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9e0))
	mut := slackfake.NewMutator(e.fake, seed)
	listen := freePort(t)
	extra := fmt.Sprintf("projection:\n  postgres:\n    dsn: %q\n    schema: %s\n", dsn, schema)
	cfg := e.writeConfigWith("proj.yaml", "", extra, "debug", false)
	check := e.writeConfigWith("proj-check.yaml", listen, extra, "info", true)
	sqlitePath := strings.TrimSuffix(e.storePath, filepath.Ext(e.storePath)) + ".sqlite"

	midBatch, kills := 0, 0
	var verified, messages, reactions int
	for midBatch < *flagProjKills && kills < 3**flagProjKills {
		for range rng.IntN(8) {
			mut.Step()
		}
		p := e.start(cfg)
		// Let it run a while (it syncs at start, then ticks and follows), then kill
		// right after a batch begins.
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		seen := strings.Count(p.out.tail(1<<30), "applying a batch")
		if !waitTight(20*time.Second, func() bool { return p.exited() || strings.Count(p.out.tail(1<<30), "applying a batch") > seen }) {
			t.Fatalf("kill %d: no batch began within 20 s:\n%s", kills, p.out.tail(3000))
		}
		time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
		p.kill(t)
		kills++
		if landedMidBatch(p.out.tail(1 << 30)) {
			midBatch++
		}

		// The restart: it must find what the kill left unapplied.
		q := e.start(check)
		ok := waitFor(time.Minute, func() bool {
			if q.exited() {
				return true
			}
			st, err := getStatus[struct {
				Projections []projection.Status `json:"projections"`
			}](listen)
			if err != nil || len(st.Projections) != 2 {
				return false
			}
			for _, s := range st.Projections {
				if s.State != projection.StateCurrent || s.LagSeq != 0 || s.PendingMessages != 0 || s.SyncedAt == nil {
					return false
				}
			}
			return true
		})
		if !ok || q.exited() {
			t.Fatalf("after kill %d: the projections were not current within a minute of the restart (exited: %v):\n%s", kills, q.exited(), q.out.tail(3000))
		}
		if code, took := q.terminate(5 * time.Second); code != 0 {
			t.Fatalf("after kill %d: slackpoll run exited %d on SIGTERM after %v:\n%s", kills, code, took, q.out.tail(3000))
		}
		s := storetest.OpenAt(t, e.storePath, boltstore.Options{ReadOnly: true})
		for _, open := range []func(context.Context) (*projection.Target, error){
			func(ctx context.Context) (*projection.Target, error) {
				return projection.OpenSQLiteReader(ctx, sqlitePath)
			},
			func(ctx context.Context) (*projection.Target, error) {
				return projection.OpenPostgresReader(ctx, dsn, schema)
			},
		} {
			tg, err := open(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			rep, err := projection.Verify(context.Background(), s, tg)
			tg.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Equal() {
				t.Fatalf("after kill %d and a restart, the %s projection differs from the store: %v\n%s", kills, tg.Kind(), rep,
					strings.Join(rep.Differences[:min(20, len(rep.Differences))], "\n"))
			}
			verified++
			messages, reactions = rep.Messages, rep.Reactions
		}
		storetest.Close(t, s)
	}
	t.Logf("%d SIGKILLs, %d of them while a batch was being applied (seed %d); %d comparisons after restarts, 0 differences; last store: %d messages, %d reactions",
		kills, midBatch, seed, verified, messages, reactions)
	if midBatch < *flagProjKills {
		t.Errorf("only %d of %d kills landed while a batch was being applied, want %d", midBatch, kills, *flagProjKills)
	}
}

// waitTight is waitFor polling every 100 µs: a batch takes a few milliseconds.
func waitTight(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Microsecond)
	}
	return cond()
}

// landedMidBatch reports whether the daemon's output ends inside a batch of some
// projector: its last "applying a batch" line (for that target) has no "applied a
// batch" line after it.
func landedMidBatch(out string) bool {
	for _, target := range []string{projection.KindSQLite, projection.KindPostgres} {
		begin := strings.LastIndex(out, `applying a batch" target=`+target)
		if begin >= 0 && !strings.Contains(out[begin:], `applied a batch" target=`+target) {
			return true
		}
	}
	return false
}

// writeConfigWith is writeConfig with extra YAML, a log level and, with noBudget,
// no Slack call budget (a daemon that only syncs its projections).
func (e *env) writeConfigWith(name, listen, extra, level string, noBudget bool) string {
	path := e.writeConfig(name, listen)
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	s := strings.Replace(string(b), "  level: warn\n", "  level: "+level+"\n", 1) + extra
	if noBudget {
		for _, k := range []string{"history_calls: 100", "replies_calls: 60", "users_info_calls: 100", "reactions_calls: 60"} {
			s = strings.Replace(s, k, strings.SplitN(k, ":", 2)[0]+": 0", 1)
		}
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path
}
