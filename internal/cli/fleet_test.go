package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/status"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// fleetConfig writes a config of many workspaces (store.dir) polling the fake at
// apiURL, one entry per "team_id=token", with the read API on a free port.
func fleetConfig(t *testing.T, apiURL string, teams ...string) (cfg, base, dir string) {
	t.Helper()
	dir = t.TempDir()
	addr := freeAddr(t)
	var b strings.Builder
	fmt.Fprintf(&b, "store:\n  dir: %q\nhttp:\n  listen: %q\n  token: api-tok\ntick:\n  interval: 1h\n", filepath.Join(dir, "stores"), addr)
	fmt.Fprintf(&b, "slack:\n  api_url: %q\n  rates: {conversations.history: 6000, conversations.replies: 6000, conversations.info: 6000, users.info: 6000, auth.test: 6000, users.conversations: 6000}\n", apiURL)
	b.WriteString("workspaces:\n")
	for _, tt := range teams {
		team, tok, _ := strings.Cut(tt, "=")
		fmt.Fprintf(&b, "  - {team_id: %s, token: %q, conversations: [C0GENERAL]}\n", team, tok)
	}
	cfg = filepath.Join(dir, "slackpoll.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, "http://" + addr, dir
}

// TestFleetARejectedWorkspaceLeavesTheOthers runs two workspaces in one daemon, one
// with a token Slack rejects: that one is listed token_rejected with the reason and
// its API answers 503, while the other polls and serves its API under its prefix;
// the routes without a team_id refuse to guess; the daemon exits 0 on SIGTERM.
func TestFleetARejectedWorkspaceLeavesTheOthers(t *testing.T) {
	fake := slackfake.New(slackfake.Options{})
	if err := fake.AddConversation(slackfake.PublicChannel("C0GENERAL", "general")); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Post("C0GENERAL", fake.BotUserID(), "hello"); err != nil {
		t.Fatal(err)
	}
	slack := httptest.NewServer(fake)
	t.Cleanup(slack.Close)
	good := fake.TeamID()
	cfg, base, dir := fleetConfig(t, slack.URL+"/api/", good+"="+fake.Token(), "T0REVOKED=xoxb-not-a-valid-token")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	var stderr string
	go func() {
		code, _, errOut := runCLI(ctx, "run", "--config", cfg)
		stderr = errOut
		done <- code
	}()
	list := func() map[string]workspace.Status {
		code, b := get(base+"/v1/workspaces", "api-tok")
		var body struct{ Workspaces []workspace.Status }
		if code != http.StatusOK || json.Unmarshal(b, &body) != nil {
			return nil
		}
		out := map[string]workspace.Status{}
		for _, s := range body.Workspaces {
			out[s.TeamID] = s
		}
		return out
	}
	waitFor(t, "the good workspace's first tick and the bad one's rejection", func() bool {
		l := list()
		return l[good].LastTick != nil && l["T0REVOKED"].State == workspace.TokenRejected
	})
	l := list()
	if st := l[good]; st.State != workspace.Active || st.Source != workspace.SourceConfig || st.Store != filepath.Join(dir, "stores", good+".db") {
		t.Errorf("good workspace = %+v, want active, from the config, in <store.dir>/%s.db", st, good)
	}
	if st := l["T0REVOKED"]; !strings.Contains(st.Reason, "invalid_auth") {
		t.Errorf("rejected workspace's reason = %q, want Slack's invalid_auth", st.Reason)
	}
	code, b := get(base+"/v1/workspaces/"+good+"/v1/status", "api-tok")
	var rep status.Report
	if code != http.StatusOK || json.Unmarshal(b, &rep) != nil || rep.LastTick == nil {
		t.Errorf("GET /v1/workspaces/%s/v1/status = %d %s, want its status report", good, code, b)
	}
	// Once its feed and projection have stopped (a moment after the state is set),
	// a stopped workspace's API answers 503 with its state.
	waitFor(t, "the rejected workspace's API to answer 503 saying token_rejected", func() bool {
		code, b := get(base+"/v1/workspaces/T0REVOKED/v1/status", "api-tok")
		return code == http.StatusServiceUnavailable && strings.Contains(string(b), "token_rejected")
	})
	if code, b := get(base+"/v1/status", "api-tok"); code != http.StatusNotFound || !strings.Contains(string(b), "/v1/workspaces/{team_id}/status") {
		t.Errorf("GET /v1/status with two workspaces = %d %s, want 404 pointing at /v1/workspaces/{team_id}/…", code, b)
	}
	if _, b := get(base+"/metrics", "api-tok"); !strings.Contains(string(b), `slackpoll_workspaces{state="token_rejected"} 1`) ||
		!strings.Contains(string(b), `slackpoll_workspaces{state="active"} 1`) || strings.Contains(string(b), "T0REVOKED") {
		t.Errorf("/metrics does not count the workspaces by state (without a team_id label):\n%s", b)
	}
	if code, _ := get(base+"/v1/workspaces", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/workspaces with a wrong token = %d, want 401", code)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("run exited %d, want 0; stderr:\n%s", code, stderr)
	}
	if strings.Contains(stderr, fake.Token()) || strings.Contains(stderr, "xoxb-not-a-valid-token") {
		t.Error("the log shows a token")
	}
}

// teamsFake serves n generated fake workspaces (T0TEAM0…, a few conversations
// each) on loopback and returns them and the API URL.
func teamsFake(t *testing.T, n int) ([]*slackfake.Server, string) {
	t.Helper()
	teams := slackfake.NewTeams()
	var out []*slackfake.Server
	for i := range n {
		s := slackfake.New(slackfake.Options{TeamID: fmt.Sprintf("T0TEAM%d", i), Seed: int64(i)})
		slackfake.Generate(s, int64(100+i), slackfake.GenSize{Conversations: 2, Messages: 40, Users: 4})
		if err := teams.Add(s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	srv := httptest.NewServer(teams)
	t.Cleanup(srv.Close)
	return out, srv.URL + "/api/"
}

// installKey is a test install key (32 bytes, base64).
const installKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// runFleet runs `slackpoll run --config cfg` with the install key in its
// environment until the test ends it with the returned stop, which returns the exit
// status and stderr.
func runFleet(t *testing.T, cfg string) (stop func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		env := map[string]string{"SLACKPOLL_INSTALL_KEY": installKey, "SLACK_BOT_TOKEN": ""}
		code := Main(ctx, []string{"run", "--config", cfg}, Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }})
		done <- result{code, errOut.String()}
	}()
	return func() (int, string) {
		cancel()
		r := <-done
		return r.code, r.stderr
	}
}

// send makes a request with a JSON body to the daemon's API and returns the status
// and body.
func send(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer api-tok")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestFleetPurgeLeavesNothingOfTheTeam registers three workspaces through the
// install API, with a webhook that cannot be reached (so every store holds outbox
// rows) and the SQLite projection, purges one through DELETE ?purge=true, and scans
// every file the daemon keeps: no row of any store or of the registrations (bucket by
// bucket, key and value) and no byte of any SQLite projection names the purged team
// or holds one of its messages; the others are whole.
func TestFleetPurgeLeavesNothingOfTheTeam(t *testing.T) {
	fakes, apiURL := teamsFake(t, 3)
	cfg, base, dir := fleetConfig(t, apiURL)
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	yaml := string(b) + "changes: {backfill: true}\nwebhooks:\n  - {name: app, url: \"http://127.0.0.1:1/hook\", secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	stop := runFleet(t, cfg)
	waitFor(t, "the API", func() bool { code, _ := get(base+"/v1/workspaces", "api-tok"); return code == http.StatusOK })
	for _, f := range fakes {
		if code, b := send(t, http.MethodPut, base+"/v1/workspaces/"+f.TeamID(), `{"bot_token":"`+f.Token()+`","discover":"member"}`); code != http.StatusCreated {
			t.Fatalf("PUT %s = %d %s, want 201", f.TeamID(), code, b)
		}
	}
	purged := fakes[1]
	waitFor(t, "every workspace's first tick", func() bool {
		code, b := get(base+"/v1/workspaces", "api-tok")
		return code == http.StatusOK && strings.Count(string(b), `"stop_reason":"complete"`) == 3
	})
	waitFor(t, "the purged workspace's outbox rows", func() bool {
		_, b := get(base+"/v1/workspaces/"+purged.TeamID()+"/v1/outbox?webhook=app", "api-tok")
		return strings.Contains(string(b), `"seq"`)
	})
	// The feed of all workspaces, followed page by page, gives each workspace's
	// changes, in its seq order, with its team_id.
	perTeam := map[string]uint64{}
	for cursor, pages := "", 0; ; pages++ {
		code, b := get(base+"/v1/workspaces/changes?limit=7&cursor="+cursor, "api-tok")
		var p struct {
			Items []struct {
				Seq    uint64 `json:"seq"`
				TeamID string `json:"team_id"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		if code != http.StatusOK || json.Unmarshal(b, &p) != nil || pages > 500 {
			t.Fatalf("GET /v1/workspaces/changes = %d %s", code, b)
		}
		if len(p.Items) == 0 {
			break
		}
		for _, c := range p.Items {
			if c.Seq <= perTeam[c.TeamID] {
				t.Fatalf("workspace %s: seq %d after %d", c.TeamID, c.Seq, perTeam[c.TeamID])
			}
			perTeam[c.TeamID] = c.Seq
		}
		cursor = p.NextCursor
	}
	for _, f := range fakes {
		_, b := get(base+"/v1/workspaces/"+f.TeamID()+"/v1/changes?limit=1", "api-tok")
		var one struct{ Last uint64 }
		if err := json.Unmarshal(b, &one); err != nil || one.Last == 0 || perTeam[f.TeamID()] != one.Last {
			t.Errorf("workspace %s: the feed of all workspaces reached seq %d, its own feed's last is %d", f.TeamID(), perTeam[f.TeamID()], one.Last)
		}
	}
	if code, b := send(t, http.MethodDelete, base+"/v1/workspaces/"+purged.TeamID()+"?purge=true", ""); code != http.StatusNoContent {
		t.Fatalf("DELETE ?purge=true = %d %s, want 204", code, b)
	}
	if code, _ := get(base+"/v1/workspaces/"+purged.TeamID(), "api-tok"); code != http.StatusNotFound {
		t.Errorf("the purged workspace is still listed (%d)", code)
	}
	if code, stderr := stop(); code != ExitOK {
		t.Fatalf("run exited %d; stderr:\n%s", code, stderr)
	}

	// What would betray the purged team: its ID, and texts of its messages.
	needles := [][]byte{[]byte(purged.TeamID())}
	for i, m := range purged.Truth().Messages {
		if i%10 == 0 && len(m.Text) > 12 {
			needles = append(needles, []byte(m.Text))
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "stores", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var stores, sqlites int
	for _, p := range files {
		if strings.Contains(filepath.Base(p), purged.TeamID()) {
			t.Errorf("a file of the purged team is left: %s", p)
			continue
		}
		switch {
		case strings.HasSuffix(p, ".db"):
			stores++
			scanBolt(t, p, needles)
		case strings.Contains(p, ".sqlite"):
			sqlites++
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range needles {
				if bytes.Contains(raw, n) {
					t.Errorf("%s holds %q of the purged team", p, n)
				}
			}
		}
	}
	if stores != 3 || sqlites < 2 { // the two others' and installations.db
		t.Errorf("after the purge: %d stores and %d SQLite files in store.dir, want the 2 other workspaces' (%v)", stores, sqlites, files)
	}
}

// scanBolt fails the test if any key or value of any bucket of the bbolt file at
// path contains one of needles.
func scanBolt(t *testing.T, path string, needles [][]byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows int
	var walk func(b *bolt.Bucket, name string) error
	walk = func(b *bolt.Bucket, name string) error {
		return b.ForEach(func(k, v []byte) error {
			rows++
			if v == nil {
				if nb := b.Bucket(k); nb != nil {
					return walk(nb, name+"/"+string(k))
				}
			}
			for _, n := range needles {
				if bytes.Contains(k, n) || bytes.Contains(v, n) {
					t.Errorf("%s: bucket %s row %q holds %q of the purged team", path, name, k, n)
				}
			}
			return nil
		})
	}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walk(b, string(name)) })
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		t.Errorf("%s: no rows scanned", path)
	}
}

// TestFleetRotatingTokenThroughRestarts registers a rotating token through the
// install API with no expiry known: it is refreshed at once through
// oauth.v2.access, the workspace polls with the new token, and a restarted daemon
// goes on with the pair it kept sealed (the first refresh token is spent: using it
// again would fail).
func TestFleetRotatingTokenThroughRestarts(t *testing.T) {
	fakes, apiURL := teamsFake(t, 1)
	fake := fakes[0]
	access, refresh, _ := fake.EnableRotation("1.2", "app-secret")
	cfg, base, _ := fleetConfig(t, apiURL)
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.Replace(string(b), "slack:\n", "slack:\n  client_id: \"1.2\"\n  client_secret: app-secret\n", 1)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	stop := runFleet(t, cfg)
	waitFor(t, "the API", func() bool { code, _ := get(base+"/v1/workspaces", "api-tok"); return code == http.StatusOK })
	body := fmt.Sprintf(`{"bot_token":%q,"refresh_token":%q,"discover":"member"}`, access, refresh)
	if code, b := send(t, http.MethodPut, base+"/v1/workspaces/"+fake.TeamID(), body); code != http.StatusCreated {
		t.Fatalf("PUT = %d %s, want 201", code, b)
	}
	ws := func() workspace.Status {
		var st workspace.Status
		_, b := get(base+"/v1/workspaces/"+fake.TeamID(), "api-tok")
		_ = json.Unmarshal(b, &st)
		return st
	}
	waitFor(t, "a refresh and a tick", func() bool {
		return fake.Token() != access && ws().LastTick != nil
	})
	if st := ws(); st.State != workspace.Active || !st.Rotating {
		t.Errorf("after the refresh: %+v, want active and rotating", st)
	}
	rotated := fake.Token()
	if code, stderr := stop(); code != ExitOK {
		t.Fatalf("run exited %d: %s", code, stderr)
	} else if strings.Contains(stderr, rotated) || strings.Contains(stderr, refresh) || strings.Contains(stderr, access) {
		t.Error("the log shows a token")
	}

	stop = runFleet(t, cfg)
	defer stop()
	waitFor(t, "the restarted daemon's tick", func() bool { return ws().LastTick != nil })
	if st := ws(); st.State != workspace.Active || st.Source != workspace.SourceAPI {
		t.Errorf("after a restart: %+v, want active (the kept pair works)", st)
	}
	// The kept pair expires in 12 hours: no refresh now. A daemon that had kept the
	// first pair would refresh at once with its spent refresh token and fail.
	if fake.Token() != rotated {
		t.Error("the restarted daemon refreshed again instead of using the pair it kept")
	}
}
