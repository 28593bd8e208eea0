package config

import (
	"regexp"
	"strconv"
)

// Workspace is one installation the daemon polls, listed in the config. Tokens
// come from the environment (${VAR}); installations added at run time through the
// install API are kept sealed in store.dir instead.
type Workspace struct {
	TeamID       string `yaml:"team_id" json:"team_id"`             // T… (or E… for an org-wide install); names its store <store.dir>/<team_id>.db
	EnterpriseID string `yaml:"enterprise_id" json:"enterprise_id"` // E… of an org-wide install (Enterprise Grid), else ""
	Token        Secret `yaml:"token" json:"token"`                 // bot token (xoxb-…, or xoxe.xoxb-… when it rotates)
	// RefreshToken (xoxe-…) makes the token rotate: refreshed through
	// oauth.v2.access with slack.client_id and slack.client_secret. Only its first
	// value is read from here: each refresh spends it, and the new pair is kept
	// sealed in store.dir (install.key_file or $SLACKPOLL_INSTALL_KEY).
	RefreshToken  Secret   `yaml:"refresh_token" json:"refresh_token"`
	Conversations []string `yaml:"conversations" json:"conversations"` // as the top-level conversations:, for this workspace
	Discover      string   `yaml:"discover" json:"discover"`           // as the top-level discover:, for this workspace
}

// Install configures the install API's sealed registrations.
type Install struct {
	// KeyFile holds the 32-byte key that seals tokens kept by the daemon (base64,
	// mode 0600); "" reads $SLACKPOLL_INSTALL_KEY. Without either, runtime
	// registration and rotating tokens are refused.
	KeyFile string `yaml:"key_file" json:"key_file"`
}

// MultiWorkspace reports whether the config runs workspaces (store.dir or
// workspaces: set) rather than the one workspace of slack.token and store.path.
func (c *Config) MultiWorkspace() bool { return c.Store.Dir != "" || len(c.Workspaces) > 0 }

// teamIDPattern is a Slack team ID; it names a file, so nothing else may pass.
var teamIDPattern = regexp.MustCompile(`^[TE][A-Z0-9]{2,}$`)

func (v *validator) workspaces() {
	c := v.c
	if len(c.Workspaces) > 0 && c.Store.Dir == "" {
		v.fail("store.dir", "is empty but workspaces: lists %d: set store.dir to a directory for their stores (<store.dir>/<team_id>.db), e.g. store.dir: stores", len(c.Workspaces))
	}
	seen := map[string]bool{}
	rotating := false
	for i, w := range c.Workspaces {
		key := "workspaces[" + strconv.Itoa(i) + "]"
		switch {
		case !teamIDPattern.MatchString(w.TeamID):
			v.fail(key+".team_id", "%q is not a Slack team ID: want T… (or E…), uppercase letters and digits, as auth.test's team_id", w.TeamID)
		case seen[w.TeamID]:
			v.fail(key+".team_id", "%s is listed twice: each workspace once", w.TeamID)
		}
		seen[w.TeamID] = true
		if w.EnterpriseID != "" && !teamIDPattern.MatchString(w.EnterpriseID) {
			v.fail(key+".enterprise_id", "%q is not a Slack enterprise ID: want E… uppercase letters and digits", w.EnterpriseID)
		}
		v.secret(key+".token", w.Token)
		v.secret(key+".refresh_token", w.RefreshToken)
		v.idList(key+".conversations", w.Conversations)
		if w.Discover != "" && w.Discover != DiscoverMember {
			v.fail(key+".discover", "%q is not allowed: want \"\" (only the listed conversations) or %q", w.Discover, DiscoverMember)
		}
		rotating = rotating || w.RefreshToken.IsSet()
	}
	if rotating && (c.Slack.ClientID == "" || !c.Slack.ClientSecret.IsSet()) {
		v.fail("slack.client_id", "a workspace has a refresh_token, but slack.client_id or slack.client_secret is empty: a rotating token is refreshed with the app's client id and secret (Basic Information in the app's settings)")
	}
	v.secret("slack.client_secret", c.Slack.ClientSecret)
}

// RequireWorkspaceTokens reports an error unless every listed workspace has its
// token (run and once need them). It is RequireToken for workspaces:.
func (c *Config) RequireWorkspaceTokens() error {
	v := &validator{c: c}
	for i, w := range c.Workspaces {
		if !w.Token.IsSet() {
			v.fail("workspaces["+strconv.Itoa(i)+"].token", "is empty: set it from the environment, e.g. token: ${SLACK_BOT_TOKEN_%s}, and export that variable", w.TeamID)
		}
	}
	if len(v.errs) > 0 {
		return v.errs[0]
	}
	return nil
}
