package cli

import (
	"context"
	"io"
	"runtime/debug"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"

	"github.com/slackpoll/slackpoll/internal/mcp"
)

// mcpFlags are the flags of mcp.
type mcpFlags struct {
	printConfig string // a client whose config to print, instead of serving
	transport   string // the transport that config uses: stdio or http
}

func mcpFlagSet(fs *pflag.FlagSet, c *cmdCtx) {
	fs.StringVar(&c.mcp.printConfig, "print-config", "", "print the config of an MCP client instead of serving: "+strings.Join(mcpClients(), ", "))
	fs.StringVar(&c.mcp.transport, "transport", "stdio", "with --print-config: stdio (the client starts `slackpoll mcp`), or http (the client connects to /mcp of the running daemon's http.listen)")
}

// cmdMCP is `slackpoll mcp`: the MCP server on stdin and stdout, for desktop and
// coding agents. It reads the store read-only, or the daemon's API while it holds
// the store, request by request; it logs to stderr. With --print-config it prints a
// client's config instead.
func cmdMCP(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	if c.mcp.printConfig != "" {
		return printMCPConfig(c, cfg)
	}
	log := newLogger(logLevel(cfg.Log.Level), cfg.Log.Format, c.env.Stderr)
	s := mcp.New(mcp.Options{
		Open:          mcpOpener(cfg),
		Policy:        mcp.Policy{Conversations: cfg.MCP.Conversations},
		Version:       readBuildInfo(debug.ReadBuildInfo).Version,
		Subscriptions: true,
		Logger:        log,
	})
	in := c.env.Stdin
	if in == nil {
		in = strings.NewReader("")
	}
	log.Info("mcp: serving on stdio", "store", cfg.Store.Path, "exposed", exposedSummary(cfg.MCP.Conversations))
	return s.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{c.env.Stdout}})
}

// exposedSummary says in a log line what the policy exposes.
func exposedSummary(listed []string) string {
	if len(listed) == 0 {
		return "every public and private channel (mcp.conversations is empty); no DM or group DM"
	}
	return strings.Join(listed, ",")
}

// nopWriteCloser is stdout for the transport: closing the session must not close
// the process's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
