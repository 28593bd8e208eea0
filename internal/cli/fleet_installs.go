package cli

import (
	"context"
	"log/slog"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// installations are the registrations the install API keeps, sealed.
type installations struct{}

func openInstallations(_ *config.Config, _ func(string) string, _ *slog.Logger) (*installations, error) {
	return nil, nil
}

func (i *installations) close() error { return nil }

func (i *installations) specs(map[string]bool) ([]workspace.Spec, error) { return nil, nil }

func (f *fleet) configCredentials(w config.Workspace) (workspace.Credentials, error) {
	if w.RefreshToken.IsSet() {
		return nil, usageErr("workspace %s: rotating tokens are not supported yet", w.TeamID)
	}
	return workspace.StaticToken(w.Token.Reveal()), nil
}

// Put is httpapi.Workspaces's.
func (f *fleet) Put(context.Context, string, httpapi.PutWorkspace) (workspace.Status, bool, error) {
	return workspace.Status{}, false, &httpapi.Refusal{Kind: httpapi.RefuseNoKey, Msg: "runtime registration is not available"}
}

// Delete is httpapi.Workspaces's.
func (f *fleet) Delete(_ context.Context, teamID string, purge bool) (bool, error) {
	if purge {
		_, ok := f.sup.Unit(teamID)
		if err := f.sup.Purge(teamID); err != nil {
			return ok, err
		}
		return ok, f.purgeProjection(teamID)
	}
	return f.sup.Stop(teamID)
}
