package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/installs"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/shard"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// registryFile is the sealed registrations' file in store.dir.
const registryFile = "installations.db"

// installations are the registrations the install API keeps, and the rotating
// token pairs of every workspace, sealed in <store.dir>/installations.db.
type installations struct {
	reg *installs.Registry
}

// openInstallations opens the sealed registrations; nil, nil without an install
// key (runtime registration and rotating tokens are then refused, saying why).
func openInstallations(cfg *config.Config, getenv func(string) string, log *slog.Logger) (*installations, error) {
	key, err := installs.LoadKey(getenv, cfg.Install.KeyFile)
	if errors.Is(err, installs.ErrNoKey) {
		log.Info("no install key: runtime registration (PUT /v1/workspaces/{team_id}) and rotating tokens are off", "how", err.Error())
		return nil, nil
	}
	if err != nil {
		return nil, usageErr("install key: %v", err)
	}
	reg, err := installs.OpenRegistry(filepath.Join(cfg.Store.Dir, registryFile), key)
	if err != nil {
		return nil, err
	}
	return &installations{reg: reg}, nil
}

func (i *installations) close() error { return i.reg.Close() }

// owns reports whether this replica polls team (shard.*; always without shards).
func (f *fleet) owns(team string) bool { return f.cfg.Shard.Assignment().Owns(team) }

// specs are the registrations kept by the install API (not the config's: listed
// says which the config has).
func (i *installations) specs(f *fleet, listed map[string]bool) ([]workspace.Spec, error) {
	all, err := i.reg.List()
	var damaged *installs.DamagedError
	if errors.As(err, &damaged) {
		f.log.Error("registrations that do not open are not started: register them again (PUT /v1/workspaces/{team_id})", "err", err)
	} else if err != nil {
		return nil, err
	}
	var out []workspace.Spec
	for _, in := range all {
		if listed[in.TeamID] || in.FromConfig || !f.owns(in.TeamID) {
			continue
		}
		spec, err := f.specOf(in, workspace.SourceAPI)
		if err != nil {
			return nil, err
		}
		out = append(out, spec)
	}
	return out, nil
}

// specOf is the workspace of a kept installation: its rotating token's Rotator, or
// its static token.
func (f *fleet) specOf(in installs.Installation, source string) (workspace.Spec, error) {
	spec := workspace.Spec{
		TeamID: in.TeamID, EnterpriseID: in.EnterpriseID, Source: source,
		Conversations: in.Conversations, Discover: in.Discover == config.DiscoverMember, Paused: in.Paused,
	}
	if in.RefreshToken == "" {
		spec.Credentials = workspace.StaticToken(string(in.BotToken))
		return spec, nil
	}
	rot, err := installs.NewRotator(installs.RotatorOptions{
		TeamID: in.TeamID, Store: f.inst.reg, Logger: f.log.With("team_id", in.TeamID),
		OAuth: slackapi.OAuthOptions{APIURL: f.cfg.Slack.APIURL, HTTPClient: f.httpClient,
			ClientID: f.cfg.Slack.ClientID, ClientSecret: f.cfg.Slack.ClientSecret.Reveal()},
	})
	if err != nil {
		return spec, err
	}
	spec.Credentials = rot // Run finishes a refresh a crash interrupted (Recover) first
	return spec, nil
}

// configCredentials are a listed workspace's: its token, or with a refresh token,
// the rotating pair kept sealed (the config's pair seeds it once: each refresh
// spends the refresh token, so the config's is stale after the first).
func (f *fleet) configCredentials(w config.Workspace) (workspace.Credentials, error) {
	if !w.RefreshToken.IsSet() {
		return workspace.StaticToken(w.Token.Reveal()), nil
	}
	if f.inst == nil {
		return nil, usageErr("workspace %s has a refresh_token: a rotating token needs an install key to keep its refreshed pair: set $%s (openssl rand -base64 32) or install.key_file", w.TeamID, installs.KeyEnv)
	}
	sum := sha256.Sum256([]byte(w.RefreshToken.Reveal()))
	seed := hex.EncodeToString(sum[:])
	in, ok, err := f.inst.reg.Get(w.TeamID)
	if err != nil {
		return nil, err
	}
	if !ok || in.SeededBy != seed {
		// A new pair in the config (first start, or a re-install): its expiry is not
		// known, so it is refreshed at once.
		in = installs.Installation{
			TeamID: w.TeamID, EnterpriseID: w.EnterpriseID, FromConfig: true, SeededBy: seed,
			BotToken: installs.Secret(w.Token.Reveal()), RefreshToken: installs.Secret(w.RefreshToken.Reveal()),
			ExpiresAt: time.Now(), AddedAt: time.Now().UTC(),
		}
		if err := f.inst.reg.Put(in); err != nil {
			return nil, err
		}
	}
	spec, err := f.specOf(in, workspace.SourceConfig)
	return spec.Credentials, err
}

// listedInConfig reports whether the config file lists team.
func (f *fleet) listedInConfig(team string) bool {
	return slices.ContainsFunc(f.cfg.Workspaces, func(w config.Workspace) bool { return w.TeamID == team })
}

// verifyTimeout bounds the auth.test a registration is checked with.
const verifyTimeout = 15 * time.Second

// Put is httpapi.Workspaces's: the install API's registration.
func (f *fleet) Put(ctx context.Context, team string, in httpapi.PutWorkspace) (workspace.Status, bool, error) {
	switch {
	case f.inst == nil:
		return workspace.Status{}, false, &httpapi.Refusal{Kind: httpapi.RefuseNoKey,
			Msg: fmt.Sprintf("runtime registration is off: it keeps tokens sealed, and no install key is set: set $%s to 32 random bytes in base64 (openssl rand -base64 32), or install.key_file, and restart", installs.KeyEnv)}
	case f.listedInConfig(team):
		return workspace.Status{}, false, &httpapi.Refusal{Kind: httpapi.RefuseConflict,
			Msg: fmt.Sprintf("workspace %s is listed in the config file: change it there (and SIGTERM/restart), or remove it there to manage it through this API", team)}
	case !f.owns(team):
		a := f.cfg.Shard.Assignment()
		return workspace.Status{}, false, &httpapi.Refusal{Kind: httpapi.RefuseConflict,
			Msg: fmt.Sprintf("workspace %s belongs to replica %d of %d (shard), not to this one (%d): send it to that replica", team, shard.Owner(team, a.Replicas), a.Replicas, a.Ordinal)}
	case in.BotToken == "":
		return workspace.Status{}, false, &httpapi.Refusal{Kind: httpapi.RefuseInvalid, Msg: "bot_token is empty: want the bot token oauth.v2.access answered (xoxb-…, or xoxe.xoxb-… when it rotates)"}
	case in.RefreshToken != "" && (f.cfg.Slack.ClientID == "" || !f.cfg.Slack.ClientSecret.IsSet()):
		return workspace.Status{}, false, &httpapi.Refusal{Kind: httpapi.RefuseInvalid, Msg: "refresh_token given, but slack.client_id or slack.client_secret is not configured: a rotating token cannot be refreshed without them"}
	case in.Discover != "" && in.Discover != config.DiscoverMember:
		return workspace.Status{}, false, &httpapi.Refusal{Kind: httpapi.RefuseInvalid, Msg: fmt.Sprintf("discover %q: want \"\" or %q", in.Discover, config.DiscoverMember)}
	case len(in.Conversations) == 0 && in.Discover == "" && !in.Paused:
		return workspace.Status{}, false, &httpapi.Refusal{Kind: httpapi.RefuseInvalid, Msg: "nothing to poll: give conversations, or discover: member"}
	}
	for _, id := range in.Conversations {
		if !rm.ValidConversationID(id) {
			return workspace.Status{}, false, &httpapi.Refusal{Kind: httpapi.RefuseInvalid, Msg: fmt.Sprintf("conversation %q: want a conversation ID (C…, G… or D…, uppercase letters and digits)", id)}
		}
	}
	if err := f.verify(ctx, team, in.BotToken); err != nil {
		return workspace.Status{}, false, err
	}
	_, known, err := f.inst.reg.Get(team)
	if err != nil && !errors.As(err, new(*installs.DamagedError)) {
		return workspace.Status{}, false, err
	}
	now := time.Now()
	rec := installs.Installation{
		TeamID: team, EnterpriseID: in.EnterpriseID, BotToken: installs.Secret(in.BotToken),
		RefreshToken: installs.Secret(in.RefreshToken), Conversations: in.Conversations, Discover: in.Discover,
		Paused: in.Paused, AddedAt: now.UTC(),
	}
	if in.RefreshToken != "" {
		rec.ExpiresAt = now // unknown expiry: refreshed at once
		if in.ExpiresIn > 0 {
			rec.ExpiresAt = now.Add(time.Duration(in.ExpiresIn) * time.Second)
		}
	}
	if err := f.inst.reg.Put(rec); err != nil {
		return workspace.Status{}, false, err
	}
	spec, err := f.specOf(rec, workspace.SourceAPI)
	if err != nil {
		return workspace.Status{}, false, err
	}
	u, err := f.sup.Start(spec)
	if err != nil {
		return workspace.Status{}, false, &httpapi.Refusal{Kind: httpapi.RefuseUnavailable, Msg: err.Error()}
	}
	f.log.Info("workspace registered", "team_id", team, "rotating", in.RefreshToken != "", "replaced", known)
	return u.Status(), !known, nil
}

// verify checks with auth.test that token is team's: a token of another team would
// write that team's messages into this team's store.
func (f *fleet) verify(ctx context.Context, team, token string) error {
	src, err := slackapi.New(slackapi.Options{
		Token: token, APIURL: f.cfg.Slack.APIURL, HTTPClient: f.httpClient,
		RequestTimeout: f.cfg.Slack.RequestTimeout.D(), Rates: f.cfg.Slack.RatesPerMinute(),
	})
	if err != nil {
		return &httpapi.Refusal{Kind: httpapi.RefuseInvalid, Msg: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	id, err := src.AuthTest(ctx)
	switch {
	case err != nil && rm.ClassOf(err) == rm.ClassToken:
		code, _ := slackapi.TokenError(err)
		return &httpapi.Refusal{Kind: httpapi.RefuseInvalid, Msg: fmt.Sprintf("Slack rejected the token (auth.test: %s): send the bot token oauth.v2.access answered for this installation", code)}
	case err != nil:
		return &httpapi.Refusal{Kind: httpapi.RefuseUnavailable, Msg: fmt.Sprintf("the token could not be checked with auth.test (%v): try again", err)}
	case id.TeamID != team:
		return &httpapi.Refusal{Kind: httpapi.RefuseInvalid, Msg: fmt.Sprintf("the token is team %s's, not %s's: PUT it under /v1/workspaces/%s", id.TeamID, team, id.TeamID)}
	}
	return nil
}

// Delete is httpapi.Workspaces's: stop a workspace and forget its registration;
// purge also removes its store and SQLite projection.
func (f *fleet) Delete(_ context.Context, team string, purge bool) (bool, error) {
	if f.listedInConfig(team) {
		return false, &httpapi.Refusal{Kind: httpapi.RefuseConflict,
			Msg: fmt.Sprintf("workspace %s is listed in the config file: remove it there and restart (its store is kept; delete <store.dir>/%s.db to purge it)", team, team)}
	}
	_, running := f.sup.Unit(team)
	registered := false
	if f.inst != nil {
		_, ok, err := f.inst.reg.Get(team)
		if err != nil && !errors.As(err, new(*installs.DamagedError)) {
			return false, err
		}
		registered = ok || err != nil
		if registered {
			if err := f.inst.reg.Delete(team); err != nil {
				return false, err
			}
		}
	}
	if !running && !registered {
		// A workspace stopped earlier keeps its store: purge finds it there.
		if _, err := os.Stat(workspace.StorePath(f.cfg.Store.Dir, team)); !purge || !workspace.ValidTeamID(team) || err != nil {
			return false, nil
		}
	}
	if purge {
		if err := f.sup.Purge(team); err != nil {
			return true, err
		}
		return true, f.purgeProjection(team)
	}
	_, err := f.sup.Stop(team)
	return true, err
}
