package cli

import (
	"context"
	"fmt"

	"github.com/slackpoll/slackpoll/config"
)

// cmdConfig is `slackpoll config`: the effective configuration — the built-in
// defaults, the file's keys and ${VAR} expansion, store.path resolved — as YAML, with
// the Slack token and http.token shown as [redacted]. What to check when a daemon
// does not do what its file seems to say.
// With --defaults it prints the embedded, commented config/slackpoll.yaml instead,
// the file to start from, and reads no config.
func cmdConfig(ctx context.Context, c *cmdCtx) error {
	if c.defaults {
		_, err := c.env.Stdout.Write(config.DefaultYAML())
		return err
	}
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "# effective config of %s: built-in defaults, the file's keys, ${VAR} expanded;\n# secrets redacted. Every key is documented in config/slackpoll.yaml.\n", cfg.File())
	_, err = fmt.Fprint(c.env.Stdout, cfg.String())
	return err
}
