// Package deploy_test checks the deployment files where this machine can: the systemd
// units with systemd-analyze (skipped where it is not installed). The metrics the
// alert rules and the dashboard name are checked against the real /metrics in
// internal/httpapi (TestDeployFilesNameOnlyMetricsThatExist).
package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The units parse, name only known keys in the right sections, and start a binary
// that exists (the test's own stands in for /usr/local/bin/slackpoll).
func TestSystemdUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var units []string
	for src, dst := range map[string]string{"slackpoll.service": "slackpoll.service", "slackpoll@.service": "slackpoll@acme.service"} {
		b, err := os.ReadFile(filepath.Join("systemd", src))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "ExecStart=/usr/local/bin/slackpoll run --config %d/slackpoll.yaml") || !strings.Contains(string(b), "LoadCredential=slackpoll.yaml:/etc/slackpoll/") {
			t.Errorf("%s does not run slackpoll run with its config under /etc/slackpoll, passed as a credential", src)
		}
		unit := strings.ReplaceAll(string(b), "/usr/local/bin/slackpoll", self)
		path := filepath.Join(dir, dst)
		if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, path)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, analyze, append([]string{"verify"}, units...)...).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
