package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigPrintsTheEffectiveConfigWithSecretsRedacted(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "slackpoll.yaml")
	content := "slack:\n  token: ${TEST_TOKEN}\ntick:\n  interval: 30s\nhttp:\n  listen: 127.0.0.1:8089\n  token: http-secret-123\n"
	if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_TOKEN", "xoxb-secret-token-456")
	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"config", "--config", cfg}, Env{Stdout: &out, Stderr: &errOut, Getenv: os.Getenv})
	if code != ExitOK {
		t.Fatalf("config = %d, stderr %s", code, errOut.String())
	}
	s := out.String()
	wantContains(t, "config", s,
		"interval: 30s",     // the file's key
		"soft_deadline: 4m", // a default
		"path: "+filepath.Join(dir, "slackpoll.db"), // resolved next to the file
		"token: '[redacted]'",                       // the Slack token, set from the environment
		"listen: 127.0.0.1:8089",
	)
	for _, secret := range []string{"xoxb-secret-token-456", "http-secret-123"} {
		if strings.Contains(s+errOut.String(), secret) {
			t.Errorf("config printed the secret %q:\n%s", secret, s)
		}
	}
	if strings.Count(s, "[redacted]") != 2 {
		t.Errorf("config shows %d redacted secrets, want 2 (slack.token, http.token):\n%s", strings.Count(s, "[redacted]"), s)
	}
}

// `config --defaults` prints the commented defaults, which load as a config file of
// their own: the way to start one without a checkout of the repository. There was
// no way to print them.
func TestConfigDefaultsPrintsTheCommentedDefaults(t *testing.T) {
	code, out, errOut := runCLI(context.Background(), "config", "--defaults", "--config", filepath.Join(t.TempDir(), "absent.yaml"))
	if code != ExitOK {
		t.Fatalf("config --defaults = %d, stderr %s", code, errOut)
	}
	wantContains(t, "config --defaults", out, "rate_profile: non_marketplace", "# How fast each Slack method may be called")
	path := filepath.Join(t.TempDir(), "slackpoll.yaml")
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(context.Background(), "config", "--config", path); code != ExitOK {
		t.Errorf("the printed defaults do not load as a config: %d %s", code, errOut)
	}
}
