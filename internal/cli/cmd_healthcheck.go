package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// healthcheckTimeout bounds `slackpoll healthcheck`: a container's health check
// must answer within its own timeout (Docker's default is 30 s).
const healthcheckTimeout = 5 * time.Second

// cmdHealthcheck is `slackpoll healthcheck [--live]`: asks the running daemon's
// /readyz (or /healthz with --live) at http.listen, with http.token, and exits 0
// when it answers 200, else 1 saying why. For images without curl (distroless):
// Docker's HEALTHCHECK, Kubernetes exec probes.
func cmdHealthcheck(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	if cfg.HTTP.Listen == "" {
		return usageErr("healthcheck: http.listen is not set in %s: the health check asks the daemon's HTTP API", cfg.File())
	}
	path := "/readyz"
	if c.liveOnly {
		path = "/healthz"
	}
	api := newAPIClient(cfg)
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api.base+path, nil)
	if err != nil {
		return err
	}
	if api.token != "" {
		req.Header.Set("Authorization", "Bearer "+api.token)
	}
	resp, err := api.hc.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: the daemon's API at %s did not answer: %v", api.base, err)
	}
	defer func() { _ = resp.Body.Close() }() // read below
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body) // a non-JSON answer is said by its status
	if resp.StatusCode != http.StatusOK {
		why := body.Error
		if why == "" {
			why = resp.Status
		}
		return fmt.Errorf("healthcheck: %s%s: %s", api.base, path, why)
	}
	fmt.Fprintf(c.env.Stdout, "%s: %s\n", path, body.Status)
	return nil
}
