package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/slackpoll/slackpoll/config"
)

// mcpTokenEnv is the environment variable the printed HTTP configs read http.token
// from: the token itself is never printed.
const mcpTokenEnv = "SLACKPOLL_HTTP_TOKEN"

// mcpClient is a client whose config --print-config prints.
type mcpClient struct {
	name string
	// where the config goes, told on stderr
	where string
	// render returns the config for a stdio server (bin and args) or, with url set,
	// for the daemon's /mcp.
	render func(s mcpServerSpec) (string, error)
}

// mcpServerSpec is what a client needs to reach the server.
type mcpServerSpec struct {
	bin   string   // stdio: the slackpoll binary
	args  []string // stdio: its arguments
	url   string   // http: the daemon's /mcp
	token bool     // http: http.token is set (sent from mcpTokenEnv)
}

var mcpClientList = []mcpClient{
	{"claude-desktop", "merge into claude_desktop_config.json (Settings > Developer > Edit Config), then restart Claude Desktop", func(s mcpServerSpec) (string, error) {
		if s.url != "" {
			return "", fmt.Errorf("claude-desktop starts local servers (stdio) from its config file; use --transport stdio (or add %s as a custom connector in Claude Desktop's settings)", s.url)
		}
		return jsonConfig(map[string]any{"mcpServers": map[string]any{"slackpoll": map[string]any{"command": s.bin, "args": s.args}}})
	}},
	{"claude-code", "save as .mcp.json in your project (or run: claude mcp add-json slackpoll '<the slackpoll object>')", func(s mcpServerSpec) (string, error) {
		server := map[string]any{"type": "stdio", "command": s.bin, "args": s.args}
		if s.url != "" {
			server = map[string]any{"type": "http", "url": s.url}
			if s.token {
				server["headers"] = map[string]string{"Authorization": "Bearer ${" + mcpTokenEnv + "}"}
			}
		}
		return jsonConfig(map[string]any{"mcpServers": map[string]any{"slackpoll": server}})
	}},
	{"vscode", "save as .vscode/mcp.json in your workspace (or merge into the user mcp.json: MCP: Open User Configuration)", func(s mcpServerSpec) (string, error) {
		if s.url == "" {
			return jsonConfig(map[string]any{"servers": map[string]any{"slackpoll": map[string]any{"type": "stdio", "command": s.bin, "args": s.args}}})
		}
		server := map[string]any{"type": "http", "url": s.url}
		cfg := map[string]any{"servers": map[string]any{"slackpoll": server}}
		if s.token {
			server["headers"] = map[string]string{"Authorization": "Bearer ${input:slackpoll-http-token}"}
			cfg["inputs"] = []map[string]any{{"type": "promptString", "id": "slackpoll-http-token", "description": "slackpoll's http.token", "password": true}}
		}
		return jsonConfig(cfg)
	}},
	{"codex", "append to ~/.codex/config.toml (or .codex/config.toml in a trusted project)", func(s mcpServerSpec) (string, error) {
		var b strings.Builder
		b.WriteString("[mcp_servers.slackpoll]\n")
		if s.url == "" {
			quoted := make([]string, len(s.args))
			for i, a := range s.args {
				quoted[i] = tomlString(a)
			}
			fmt.Fprintf(&b, "command = %s\nargs = [%s]\n", tomlString(s.bin), strings.Join(quoted, ", "))
			return b.String(), nil
		}
		fmt.Fprintf(&b, "url = %s\n", tomlString(s.url))
		if s.token {
			fmt.Fprintf(&b, "bearer_token_env_var = %s\n", tomlString(mcpTokenEnv))
		}
		return b.String(), nil
	}},
}

// mcpClients lists the names --print-config takes.
func mcpClients() []string {
	var out []string
	for _, c := range mcpClientList {
		out = append(out, c.name)
	}
	return out
}

func jsonConfig(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return string(b) + "\n", err
}

// tomlString quotes s as a TOML basic string (Go's escapes for ", \ and controls
// are TOML's, and printable Unicode is kept as is).
func tomlString(s string) string { return strconv.Quote(s) }

// printMCPConfig is `slackpoll mcp --print-config CLIENT`: the client's config on
// stdout, where it goes (and what to export) on stderr. The stdio config runs this
// binary with this config file, both as absolute paths; the http one names the
// daemon's /mcp and reads http.token from $SLACKPOLL_HTTP_TOKEN, never printing it.
func printMCPConfig(c *cmdCtx, cfg *config.Config) error {
	i := slices.IndexFunc(mcpClientList, func(m mcpClient) bool { return m.name == c.mcp.printConfig })
	if i < 0 {
		return usageErr("mcp --print-config %q: want one of %s", c.mcp.printConfig, strings.Join(mcpClients(), ", "))
	}
	client := mcpClientList[i]
	var spec mcpServerSpec
	switch c.mcp.transport {
	case "stdio":
		bin, err := os.Executable()
		if err != nil || strings.Contains(bin, string(filepath.Separator)+"go-build") {
			// `go run` builds into a temporary directory that is gone afterwards.
			bin = "slackpoll"
			fmt.Fprintln(c.env.Stderr, "slackpoll: note: this binary is a temporary `go run` build; the config names `slackpoll`, so install it on your PATH (go build -o /usr/local/bin/slackpoll ./cmd/slackpoll) or put its full path there")
		}
		args := []string{"mcp"}
		if f := cfg.File(); f != "" {
			abs, err := filepath.Abs(f)
			if err != nil {
				return err
			}
			args = append(args, "--config", abs)
		}
		spec = mcpServerSpec{bin: bin, args: args}
	case "http":
		if cfg.HTTP.Listen == "" {
			return usageErr("mcp --print-config --transport http: http.listen is not set in %s, so the daemon serves no /mcp; set it (e.g. 127.0.0.1:8089) and run the daemon, or use --transport stdio", cfg.File())
		}
		spec = mcpServerSpec{url: apiBaseURL(cfg.HTTP.Listen) + "/mcp", token: cfg.HTTP.Token.IsSet()}
	default:
		return usageErr("mcp --transport %q: want stdio or http", c.mcp.transport)
	}
	out, err := client.render(spec)
	if err != nil {
		return usageErr("mcp --print-config %s: %v", client.name, err)
	}
	if _, err := fmt.Fprint(c.env.Stdout, out); err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stderr, "slackpoll: %s\n", client.where)
	if strings.Contains(out, mcpTokenEnv) {
		fmt.Fprintf(c.env.Stderr, "slackpoll: the client sends http.token from $%s: export it (the value of http.token) where the client starts\n", mcpTokenEnv)
	}
	return nil
}
