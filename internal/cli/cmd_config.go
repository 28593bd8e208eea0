package cli

import (
	"context"
	"fmt"
)

// cmdConfig is `slackpoll config`: the effective configuration — the built-in
// defaults, the file's keys and ${VAR} expansion, store.path resolved — as YAML, with
// the Slack token and http.token shown as [redacted]. What to check when a daemon
// does not do what its file seems to say.
func cmdConfig(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "# effective config of %s: built-in defaults, the file's keys, ${VAR} expanded;\n# secrets redacted. Every key is documented in config/slackpoll.yaml.\n", cfg.File())
	_, err = fmt.Fprint(c.env.Stdout, cfg.String())
	return err
}
