package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The image sets SLACKPOLL_CONFIG to the config it documents mounting, so that `docker
// exec slackpoll slackpoll status` finds it, and has a HEALTHCHECK that runs a
// slackpoll command that exists (distroless has no curl). It had neither.
func TestDockerfileSetsTheConfigAndAHealthCheck(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docker", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	env := regexp.MustCompile(`(?m)^ENV SLACKPOLL_CONFIG=(\S+)$`).FindStringSubmatch(df)
	if env == nil {
		t.Fatal("the Dockerfile sets no SLACKPOLL_CONFIG")
	}
	if !strings.Contains(df, ":"+env[1]+":ro") {
		t.Errorf("SLACKPOLL_CONFIG=%s is not where the documented docker run mounts the config", env[1])
	}
	hc := regexp.MustCompile(`(?m)^\s*CMD \["/usr/local/bin/slackpoll", "([a-z]+)"\]$`).FindStringSubmatch(df)
	if !strings.Contains(df, "\nHEALTHCHECK ") || hc == nil {
		t.Fatal("the Dockerfile has no HEALTHCHECK running slackpoll")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "run", "../cmd/slackpoll", hc[1], "--help").CombinedOutput()
	if err != nil {
		t.Errorf("the health check's command `slackpoll %s` does not exist: %v\n%s", hc[1], err, out)
	}
}
