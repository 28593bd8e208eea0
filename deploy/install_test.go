package deploy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
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
)

// These tests install slackpoll as the units' comments say, under a scratch root
// that stands in for /, and run it as systemd would run the unit: as its dynamic
// user (an unprivileged uid with no passwd entry, through setpriv), with the
// environment file read by root, the credentials copied into a directory only that
// user may read, the state directory created for it, and the unit's umask. What
// systemd would do is read from the unit file, not written here. They need root
// (to create files of other owners and change uid) and skip without it.

// host is a scratch root with a fake Slack on loopback.
type host struct {
	t    *testing.T
	root string // stands in for /
	work string // where the operator runs the install steps: binary, configs, units
	fake *slackfake.Server
	api  string
}

func newHost(t *testing.T) *host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: files of other owners, and setpriv to another uid")
	}
	for _, tool := range []string{"setpriv", "bash", "install"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	// Not t.TempDir: its parents are 0700, closed to the unprivileged users.
	root, err := os.MkdirTemp("", "slackpoll-install-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	h := &host{t: t, root: root, work: filepath.Join(root, "home", "operator")}
	for _, d := range []string{"", "etc", "etc/systemd/system", "usr/local/bin", "var/lib", "run", "home/operator"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(h.work, "slackpoll"), "../cmd/slackpoll").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	h.fake = slackfake.New(slackfake.Options{})
	if err := h.fake.AddConversation(slackfake.PublicChannel("C0GENERAL", "general")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.Post("C0GENERAL", "U0AAAAAAA", "hello"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.fake)
	t.Cleanup(srv.Close)
	h.api = srv.URL + "/api/"
	return h
}

// path maps an absolute path of the real system into the scratch root.
func (h *host) path(p string) string { return filepath.Join(h.root, p) }

// rooted rewrites the system paths a command or config names into the scratch root.
func (h *host) rooted(s string) string {
	for _, p := range []string{"/usr/local/bin/", "/etc/", "/var/lib/", "/run/"} {
		s = strings.ReplaceAll(s, " "+p, " "+h.root+p)
		s = strings.ReplaceAll(s, ":"+p, ":"+h.root+p)
		s = strings.ReplaceAll(s, "="+p, "="+h.root+p)
	}
	return s
}

// writeConfig writes the operator's config (name in the work directory) as the
// docs ask for it: an absolute store.path under /var/lib/slackpoll.
func (h *host) writeConfig(name, storePath string) {
	cfg := fmt.Sprintf("slack:\n  api_url: %s\n  rate_profile: internal\nstore:\n  path: %s\nconversations: [C0GENERAL]\nlog:\n  level: warn\n",
		h.api, h.rooted(" " + storePath)[1:])
	if err := os.WriteFile(filepath.Join(h.work, name), []byte(cfg), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// installSteps returns the shell commands of a unit's "Install" comment block.
func installSteps(t *testing.T, unit string) []string {
	t.Helper()
	var steps []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(unit))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# Install"):
			in = true
		case in && strings.HasPrefix(line, "#   "):
			steps = append(steps, strings.TrimPrefix(line, "#   "))
		case in:
			in = len(steps) == 0 // the block may start on the next line
		}
	}
	if len(steps) == 0 {
		t.Fatal("the unit's comment has no install steps")
	}
	return steps
}

// install runs the install steps of unitFile as written, as root in the work
// directory, with system paths moved into the scratch root, the token made the
// fake's, rename applied (acme → another workspace) and systemctl left out (there is
// no systemd here: emulate does its part).
func (h *host) install(unitFile string, rename map[string]string) {
	h.t.Helper()
	src, err := os.ReadFile(filepath.Join("systemd", unitFile))
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.work, unitFile), src, 0o644); err != nil {
		h.t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\numask 0022\n")
	for _, step := range installSteps(h.t, string(src)) {
		step, _, _ = strings.Cut(step, " && systemctl")
		step, _, _ = strings.Cut(step, "   # ")
		for from, to := range rename {
			step = strings.ReplaceAll(step, from, to)
		}
		step = strings.ReplaceAll(step, "xoxb-...", h.fake.Token())
		script.WriteString(h.rooted(" " + step)[1:] + "\n")
	}
	cmd := exec.CommandContext(h.t.Context(), "bash", "-c", script.String())
	cmd.Dir = h.work
	if out, err := cmd.CombinedOutput(); err != nil {
		h.t.Fatalf("install steps of %s failed: %v\n%s\n%s", unitFile, err, script.String(), out)
	}
}

// service is what systemd would set up for one unit: its dynamic user, its
// environment, its credentials, its state directory, its working directory, umask
// and command line.
type service struct {
	name       string
	uid        int
	env        []string
	workDir    string
	umask      string
	argv       []string
	stateDir   string
	credDir    string
	credential []string // paths of the credential copies
}

// emulate reads unitFile as instance (after %i) and does what systemd does on
// start, within the scratch root.
func (h *host) emulate(unitFile, instance string) *service {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.root, "etc/systemd/system", unitFile))
	if err != nil {
		h.t.Fatalf("the install steps did not put %s in /etc/systemd/system: %v", unitFile, err)
	}
	unitName := strings.Replace(unitFile, "@.", "@"+instance+".", 1)
	keys := map[string][]string{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if section != "[Service]" || line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		keys[k] = append(keys[k], strings.ReplaceAll(v, "%i", instance))
	}
	one := func(k string) string {
		if v := keys[k]; len(v) > 0 {
			return v[len(v)-1]
		}
		return ""
	}
	s := &service{name: unitName, umask: "0022"}
	if one("DynamicUser") != "yes" {
		h.t.Fatalf("%s: not a DynamicUser unit", unitFile)
	}
	user := one("User")
	if user == "" {
		user = strings.TrimSuffix(unitName, ".service")
	}
	f := fnv.New32a()
	_, _ = f.Write([]byte(user))
	s.uid = 61184 + int(f.Sum32()%(65519-61184)) // the dynamic range, one uid per user name
	if m := one("UMask"); m != "" {
		s.umask = m
	}
	for _, ef := range keys["EnvironmentFile"] {
		data, err := os.ReadFile(h.rooted(" " + strings.TrimPrefix(ef, "-"))[1:]) // read by systemd, as root
		if err != nil {
			h.t.Fatalf("EnvironmentFile %s: %v", ef, err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				s.env = append(s.env, l)
			}
		}
	}
	s.credDir = filepath.Join(h.root, "run/credentials", unitName)
	if creds := keys["LoadCredential"]; len(creds) > 0 {
		if err := os.MkdirAll(filepath.Dir(s.credDir), 0o755); err != nil {
			h.t.Fatal(err)
		}
		h.mkdirOwned(s.credDir, 0o500, s.uid)
		for _, c := range creds {
			id, src, _ := strings.Cut(c, ":")
			data, err := os.ReadFile(h.rooted(" " + src)[1:]) // read by systemd, as root
			if err != nil {
				h.t.Fatalf("LoadCredential %s: %v", c, err)
			}
			p := filepath.Join(s.credDir, id)
			if err := os.WriteFile(p, data, 0o400); err != nil {
				h.t.Fatal(err)
			}
			if err := os.Chown(p, s.uid, s.uid); err != nil {
				h.t.Fatal(err)
			}
			s.credential = append(s.credential, p)
		}
	}
	if sd := one("StateDirectory"); sd != "" {
		mode, err := strconv.ParseUint(one("StateDirectoryMode"), 8, 32)
		if err != nil {
			mode = 0o755
		}
		s.stateDir = filepath.Join(h.root, "var/lib", sd)
		// Parents are root's; the innermost is the user's, chowned recursively when
		// its owner is another (systemd.exec, StateDirectory=).
		if err := os.MkdirAll(filepath.Dir(s.stateDir), 0o755); err != nil {
			h.t.Fatal(err)
		}
		h.mkdirOwned(s.stateDir, fs.FileMode(mode), s.uid)
	}
	s.workDir = h.rooted(" " + one("WorkingDirectory"))[1:]
	exe := strings.ReplaceAll(one("ExecStart"), "%d", s.credDir)
	s.argv = strings.Fields(h.rooted(" " + exe)[1:])
	return s
}

// mkdirOwned creates dir (if missing) with mode, owned by uid; an existing one of
// another owner is chowned with everything in it, as systemd does.
func (h *host) mkdirOwned(dir string, mode fs.FileMode, uid int) {
	h.t.Helper()
	if err := os.MkdirAll(dir, mode); err != nil {
		h.t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		h.t.Fatal(err)
	}
	if int(st.Uid) != uid {
		err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, uid)
		})
		if err != nil {
			h.t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, mode); err != nil {
		h.t.Fatal(err)
	}
}

// run runs the unit's command as its user, with "run" swapped for "once" (one tick,
// then exit: the same config, token and store, without a daemon to stop).
func (h *host) run(s *service) (string, error) {
	h.t.Helper()
	argv := append([]string(nil), s.argv...)
	for i, a := range argv {
		if a == "run" {
			argv[i] = "once"
		}
	}
	return h.as(s.uid, s.workDir, s.umask, s.env, argv...)
}

// as runs argv as uid (no groups), in dir, with umask and env.
func (h *host) as(uid int, dir, umask string, env []string, argv ...string) (string, error) {
	args := append([]string{"--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(uid), "--clear-groups", "--",
		"/bin/sh", "-c", `umask "$0"; cd "$1" && shift && exec "$@"`, umask, dir}, argv...)
	ctx, cancel := context.WithTimeout(h.t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "setpriv", args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// readableBy reports whether uid can open path for reading.
func (h *host) readableBy(uid int, path string) bool {
	_, err := h.as(uid, "/", "0022", nil, "/bin/sh", "-c", `exec cat "$0" >/dev/null`, path)
	return err == nil
}

// Installed as slackpoll.service's comment says, the daemon's dynamic user reads its
// config, gets its token, creates its store in its state directory (0600, its own)
// and completes a tick. The config used to be root's 0640 in a 0750 directory, which
// the dynamic user could not read: the unit never started.
func TestInstalledAsDocumentedTheServiceRunsAsItsDynamicUser(t *testing.T) {
	h := newHost(t)
	h.writeConfig("slackpoll.yaml", "/var/lib/slackpoll/slackpoll.db")
	h.install("slackpoll.service", nil)
	s := h.emulate("slackpoll.service", "")
	if out, err := h.run(s); err != nil {
		t.Fatalf("%s as uid %d: %v\n%s", strings.Join(s.argv, " "), s.uid, err, out)
	}
	var st syscall.Stat_t
	store := h.path("var/lib/slackpoll/slackpoll.db")
	if err := syscall.Stat(store, &st); err != nil {
		t.Fatalf("no store after a tick: %v", err)
	}
	if int(st.Uid) != s.uid || st.Mode&0o777 != 0o600 {
		t.Errorf("store owned by %d with mode %o, want the service's user %d and 0600", st.Uid, st.Mode&0o777, s.uid)
	}
	if h.readableBy(s.uid, h.path("etc/slackpoll/slackpoll.env")) {
		t.Error("the service's user can read the environment file with the token: only root (systemd) should")
	}
}

// Two workspaces installed as slackpoll@.service's comment says run as two users:
// each completes a tick, and neither can read the other's store, config or token.
func TestTemplateInstancesCannotReadEachOthersStoresAndTokens(t *testing.T) {
	h := newHost(t)
	h.writeConfig("acme.yaml", "/var/lib/slackpoll/acme/slackpoll.db")
	h.writeConfig("globex.yaml", "/var/lib/slackpoll/globex/slackpoll.db")
	h.install("slackpoll@.service", nil)
	h.install("slackpoll@.service", map[string]string{"acme": "globex"})
	acme, globex := h.emulate("slackpoll@.service", "acme"), h.emulate("slackpoll@.service", "globex")
	if acme.uid == globex.uid {
		t.Errorf("both instances run as uid %d", acme.uid)
	}
	for _, s := range []*service{acme, globex} {
		if out, err := h.run(s); err != nil {
			t.Fatalf("%s as uid %d: %v\n%s", s.name, s.uid, err, out)
		}
	}
	for _, p := range append([]string{h.path("var/lib/slackpoll/acme/slackpoll.db"), h.path("etc/slackpoll/acme.env"), h.path("etc/slackpoll/acme.yaml")}, acme.credential...) {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s does not exist", p)
			continue
		}
		if h.readableBy(globex.uid, p) {
			t.Errorf("globex's user can read acme's %s", p)
		}
	}
}
