package workspace_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// TestProcesses compares, side by side, K workspaces run as K separate `slackpoll
// run` processes (one config, store and port each: the one-workspace config) with
// the same K in ONE process (store.dir and K entries under workspaces:), and one
// process of -processes.fleet workspaces, each with the SQLite projection on (the
// default) and off. It serves a fake Teams on 127.0.0.1, waits until every
// workspace's first tick is done (tick interval 1h: nothing is due after it), then
// sums VmRSS and Threads of the processes and their CPU time over the idle period.
// It builds the binary and takes minutes, so it runs only when asked:
//
//	nice -n 5 go test ./internal/workspace -run TestProcesses -processes -v -timeout 60m
var (
	processesFlag = flag.Bool("processes", false, "run TestProcesses: separate processes vs one, measured")
	processesK    = flag.Int("processes.k", 50, "workspaces compared as separate processes and as one")
	processesN    = flag.Int("processes.fleet", 1000, "workspaces of the large one-process fleet")
	processesIdle = flag.Duration("processes.idle", time.Minute, "idle time CPU is measured over")
)

func TestProcesses(t *testing.T) {
	if !*processesFlag {
		t.Skip("measures processes for minutes: run with -processes")
	}
	bin := filepath.Join(t.TempDir(), "slackpoll")
	build := exec.Command("go", "build", "-o", bin, "github.com/slackpoll/slackpoll/cmd/slackpoll")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	n := max(*processesK, *processesN)
	teams := newFleetTeams(t, n, idleSize, 0)
	srv := httptest.NewServer(teams) // 127.0.0.1
	t.Cleanup(srv.Close)
	api := srv.URL + "/api/"

	type row struct {
		name string
		fp   procFootprint
		k    int
	}
	var rows []row
	for _, proj := range []bool{true, false} {
		suffix := map[bool]string{true: "projection on", false: "projection off"}[proj]
		fp := runSeparate(t, bin, teams, api, *processesK, proj)
		rows = append(rows, row{fmt.Sprintf("%d processes, %s", *processesK, suffix), fp, *processesK})
		fp = runFleet(t, bin, teams, api, *processesK, proj)
		rows = append(rows, row{fmt.Sprintf("1 process of %d, %s", *processesK, suffix), fp, *processesK})
		fp = runFleet(t, bin, teams, api, *processesN, proj)
		rows = append(rows, row{fmt.Sprintf("1 process of %d, %s", *processesN, suffix), fp, *processesN})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| run | RSS total | RSS/workspace | threads total | threads/workspace | CPU idle (ms/s) | CPU/workspace (ms/s) | start to idle |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		k := float64(r.k)
		cpu := float64(r.fp.cpu.Microseconds()) / 1000 / r.fp.idle.Seconds()
		fmt.Fprintf(&b, "| %s | %.1f MB | %.0f KB | %d | %.2f | %.2f | %.4f | %v |\n", r.name,
			float64(r.fp.rss)/1e6, float64(r.fp.rss)/1e3/k, r.fp.threads, float64(r.fp.threads)/k, cpu, cpu/k, r.fp.started.Round(time.Second))
	}
	t.Log(b.String())
}

// procFootprint is what a set of processes held once idle.
type procFootprint struct {
	rss     uint64        // Σ VmRSS, bytes
	threads uint64        // Σ Threads
	cpu     time.Duration // Σ user + system CPU over idle
	idle    time.Duration
	started time.Duration // from the first start to every workspace idle
}

// daemon is one `slackpoll run` process and its read API.
type daemonProc struct {
	cmd  *exec.Cmd
	base string
	log  string
}

func startDaemon(t *testing.T, bin, dir, config string) *daemonProc {
	t.Helper()
	cfg := filepath.Join(dir, "slackpoll.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "daemon.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "run", "--config", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &daemonProc{cmd: cmd, log: logPath}
}

// stop ends d with SIGTERM (the daemon's clean shutdown) and waits for it.
func (d *daemonProc) stop(t *testing.T) {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			b, _ := os.ReadFile(d.log)
			t.Errorf("daemon %d exited: %v\n%s", d.cmd.Process.Pid, err, tail(b))
		}
	case <-time.After(2 * time.Minute):
		_ = d.cmd.Process.Kill()
		<-done
		t.Errorf("daemon %d did not stop in 2 minutes", d.cmd.Process.Pid)
	}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// commonConfig is what every config shares: fast rates (the first tick reads the
// small workspace whole), a 1h tick interval, the read API.
func commonConfig(api, listen string, projection bool) string {
	var rates []string
	for _, m := range []string{"auth.test", "conversations.history", "conversations.replies", "conversations.info", "users.info", "users.conversations", "reactions.get"} {
		rates = append(rates, m+": 60000")
	}
	return fmt.Sprintf("slack:\n  api_url: %q\n  rates: {%s}\ntick:\n  interval: 1h\nwindow:\n  bulk: 720h\nhttp:\n  listen: %q\n  token: api-tok\nprojection:\n  sqlite:\n    enabled: %v\nlog:\n  level: warn\n",
		api, strings.Join(rates, ", "), listen, projection)
}

// runSeparate runs k workspaces as k processes, one config, store and port each.
func runSeparate(t *testing.T, bin string, teams *slackfake.Teams, api string, k int, projection bool) procFootprint {
	t.Helper()
	start := time.Now()
	var ds []*daemonProc
	defer func() {
		for _, d := range ds {
			d.stop(t)
		}
	}()
	for i := range k {
		id := fleetTeamID(i)
		dir := t.TempDir()
		listen := freeLoopback(t)
		cfg := commonConfig(api, listen, projection) +
			fmt.Sprintf("store:\n  path: %q\ndiscover: member\n", filepath.Join(dir, "slackpoll.db"))
		cfg = strings.Replace(cfg, "slack:\n", fmt.Sprintf("slack:\n  token: %q\n", teams.Server(id).Token()), 1)
		d := startDaemon(t, bin, dir, cfg)
		d.base = "http://" + listen
		ds = append(ds, d)
	}
	for _, d := range ds {
		waitProcIdle(t, d, func() (bool, error) {
			var rep struct {
				LastTick *struct {
					StopReason string   `json:"stop_reason"`
					Errors     []string `json:"errors"`
				} `json:"last_tick"`
				Running *json.RawMessage `json:"running"`
			}
			if err := getJSON(d.base+"/v1/status", &rep); err != nil || rep.LastTick == nil {
				return false, nil
			}
			lt := &workspace.LastTick{StopReason: rep.LastTick.StopReason, Errors: len(rep.LastTick.Errors)}
			if !tickOK(lt, false) {
				return false, fmt.Errorf("tick stopped %s with errors %v", lt.StopReason, rep.LastTick.Errors)
			}
			return true, nil
		})
	}
	return idleFootprint(t, ds, start)
}

// runFleet runs k workspaces in one process (store.dir, workspaces:).
func runFleet(t *testing.T, bin string, teams *slackfake.Teams, api string, k int, projection bool) procFootprint {
	t.Helper()
	start := time.Now()
	dir := t.TempDir()
	listen := freeLoopback(t)
	var b strings.Builder
	b.WriteString(commonConfig(api, listen, projection))
	fmt.Fprintf(&b, "store:\n  dir: %q\nworkspaces:\n", filepath.Join(dir, "stores"))
	for i := range k {
		id := fleetTeamID(i)
		fmt.Fprintf(&b, "  - {team_id: %s, token: %q, discover: member}\n", id, teams.Server(id).Token())
	}
	d := startDaemon(t, bin, dir, b.String())
	d.base = "http://" + listen
	defer d.stop(t)
	waitProcIdle(t, d, func() (bool, error) {
		var body struct{ Workspaces []workspace.Status }
		if err := getJSON(d.base+"/v1/workspaces", &body); err != nil || len(body.Workspaces) != k {
			return false, nil
		}
		for _, st := range body.Workspaces {
			if st.State != workspace.Active {
				return false, fmt.Errorf("%s: %s: %s", st.TeamID, st.State, st.Reason)
			}
			if st.LastTick == nil {
				return false, nil
			}
			if !tickOK(st.LastTick, false) {
				return false, fmt.Errorf("%s: tick stopped %s with %d errors", st.TeamID, st.LastTick.StopReason, st.LastTick.Errors)
			}
		}
		return true, nil
	})
	return idleFootprint(t, []*daemonProc{d}, start)
}

// waitProcIdle polls ready until it reports true, failing on its error, on the
// daemon's exit or after 30 minutes.
func waitProcIdle(t *testing.T, d *daemonProc, ready func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Minute)
	for {
		ok, err := ready()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if err := syscall.Kill(d.cmd.Process.Pid, 0); err != nil || time.Now().After(deadline) {
			b, _ := os.ReadFile(d.log)
			t.Fatalf("daemon %d not idle (%v)\n%s", d.cmd.Process.Pid, err, tail(b))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// idleFootprint measures ds over the idle period: CPU time spent during it, RSS and
// threads at its end.
func idleFootprint(t *testing.T, ds []*daemonProc, start time.Time) procFootprint {
	t.Helper()
	fp := procFootprint{idle: *processesIdle, started: time.Since(start)}
	cpu0 := make([]time.Duration, len(ds))
	for i, d := range ds {
		c, err := procCPU(d.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		cpu0[i] = c
	}
	time.Sleep(fp.idle)
	for i, d := range ds {
		c, err := procCPU(d.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		fp.cpu += c - cpu0[i]
		st, err := procStatus(strconv.Itoa(d.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		fp.rss += st["VmRSS"]
		fp.threads += st["Threads"]
	}
	return fp
}

// freeLoopback is a free port on 127.0.0.1.
func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// getJSON GETs url with the read API's token and decodes its JSON answer into v.
func getJSON(url string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer api-tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return json.Unmarshal(b, v)
}
