package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// workspacesFlags are `slackpoll workspaces`'s. Tokens are named by environment
// variable, never given on the command line (other users see a process's arguments).
type workspacesFlags struct {
	tokenEnv, refreshEnv string
	expiresIn            int64
	conversations        []string
	discover, enterprise string
	purge, paused        bool
}

func workspacesFlagSet(fs *pflag.FlagSet, c *cmdCtx) {
	fs.BoolVar(&c.jsonOut, "json", false, "list: print the workspaces as JSON")
	fs.StringVar(&c.ws.tokenEnv, "token-env", "", "add: the environment variable holding the bot token (xoxb-…)")
	fs.StringVar(&c.ws.refreshEnv, "refresh-token-env", "", "add: the environment variable holding the refresh token (xoxe-…), for a rotating token")
	fs.Int64Var(&c.ws.expiresIn, "expires-in", 0, "add: seconds the rotating token has left (oauth.v2.access's expires_in)")
	fs.StringSliceVar(&c.ws.conversations, "conversations", nil, "add: conversation IDs to poll, comma-separated")
	fs.StringVar(&c.ws.discover, "discover", "", "add: member to poll every conversation the bot is in")
	fs.StringVar(&c.ws.enterprise, "enterprise-id", "", "add: the org (E…) of an org-wide install")
	fs.BoolVar(&c.ws.paused, "paused", false, "add: register without polling")
	fs.BoolVar(&c.ws.purge, "purge", false, "remove: also delete the workspace's store, change feed and outbox")
}

// cmdWorkspaces is `slackpoll workspaces [list | add TEAM_ID | remove TEAM_ID]`,
// through the running daemon's API.
func cmdWorkspaces(_ context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	if cfg.HTTP.Listen == "" {
		return usageErr("workspaces: http.listen is not set in %s: the command asks the running daemon's HTTP API", orDefaults(cfg.File()))
	}
	api := newAPIClient(cfg)
	verb, args := "list", c.args
	if len(args) > 0 {
		verb, args = args[0], args[1:]
	}
	switch {
	case verb == "list" && len(args) == 0:
		var list httpapi.WorkspaceList
		if err := api.get("/v1/workspaces", &list); err != nil {
			return err
		}
		return printWorkspaces(c, list.Workspaces)
	case verb == "add" && len(args) == 1:
		return addWorkspace(c, api, args[0])
	case verb == "remove" && len(args) == 1:
		path := "/v1/workspaces/" + url.PathEscape(args[0])
		if c.ws.purge {
			path += "?purge=true"
		}
		if err := api.do(http.MethodDelete, path, nil, nil); err != nil {
			return err
		}
		what := "stopped; its store is kept"
		if c.ws.purge {
			what = "stopped and purged: its store, change feed and outbox are deleted"
		}
		fmt.Fprintf(c.env.Stdout, "workspace %s %s\n", args[0], what)
		return nil
	}
	return &helpError{usageErr("workspaces: want list, add TEAM_ID or remove TEAM_ID"), "workspaces"}
}

func addWorkspace(c *cmdCtx, api *apiClient, team string) error {
	if c.ws.tokenEnv == "" {
		return usageErr("workspaces add: --token-env VAR names the environment variable holding the bot token (never give a token as an argument)")
	}
	in := httpapi.PutWorkspace{
		BotToken: c.env.Getenv(c.ws.tokenEnv), ExpiresIn: c.ws.expiresIn, EnterpriseID: c.ws.enterprise,
		Conversations: c.ws.conversations, Discover: c.ws.discover, Paused: c.ws.paused,
	}
	if in.BotToken == "" {
		return usageErr("workspaces add: $%s is empty: export the bot token in it", c.ws.tokenEnv)
	}
	if c.ws.refreshEnv != "" {
		if in.RefreshToken = c.env.Getenv(c.ws.refreshEnv); in.RefreshToken == "" {
			return usageErr("workspaces add: $%s is empty: export the refresh token in it", c.ws.refreshEnv)
		}
	}
	var st workspace.Status
	if err := api.do(http.MethodPut, "/v1/workspaces/"+url.PathEscape(team), in, &st); err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "workspace %s registered: %s\n", st.TeamID, st.State)
	return nil
}

func printWorkspaces(c *cmdCtx, list []workspace.Status) error {
	if c.jsonOut {
		enc := json.NewEncoder(c.env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(httpapi.WorkspaceList{Workspaces: list})
	}
	tw := tabwriter.NewWriter(c.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM_ID\tSTATE\tSOURCE\tLAST TICK\tROTATION\tREASON")
	for _, s := range list {
		last, rot := "-", "-"
		if s.LastTick != nil {
			last = s.LastTick.Finished.Format(time.RFC3339) + " " + s.LastTick.StopReason
			if s.LastTick.RotationSeconds > 0 {
				rot = (time.Duration(s.LastTick.RotationSeconds) * time.Second).String()
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.TeamID, s.State, s.Source, last, rot, strings.ReplaceAll(s.Reason, "\n", " "))
	}
	return tw.Flush()
}
