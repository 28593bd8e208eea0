package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/slackpoll/slackpoll/internal/workspace"
)

// Workspaces is the daemon's set of workspaces as the API serves it: the install
// API (PUT, GET, DELETE /v1/workspaces/{team_id}) and each workspace's own API under
// /v1/workspaces/{team_id}/.
type Workspaces interface {
	// List is every workspace, by team_id.
	List() []workspace.Status
	// Get is one workspace; false when none has that team_id.
	Get(teamID string) (workspace.Status, bool)
	// Handler is one workspace's API (NewWorkspace's); false when none has that
	// team_id or its store is not open (the status says why).
	Handler(teamID string) (http.Handler, bool)
	// Only is the handler of the routes without a team_id: the one workspace's;
	// false when the daemon serves another number of them.
	Only() (http.Handler, bool)
	// Put registers (or replaces) a workspace after checking its token with
	// auth.test, and starts it; created reports a new one. Errors are *Refusal when
	// the request is at fault.
	Put(ctx context.Context, teamID string, in PutWorkspace) (st workspace.Status, created bool, err error)
	// Delete stops a workspace and forgets its registration; purge also removes its
	// store (messages, change feed, outbox). False when none has that team_id.
	Delete(ctx context.Context, teamID string, purge bool) (bool, error)
}

// PutWorkspace is the body of PUT /v1/workspaces/{team_id}: what an app's OAuth
// callback got from oauth.v2.access. Tokens are kept sealed and never answered.
type PutWorkspace struct {
	// BotToken is the bot token (xoxb-…, or xoxe.xoxb-… when it rotates).
	BotToken string `json:"bot_token"`
	// RefreshToken (xoxe-…) and ExpiresIn (seconds) come with a rotating token.
	RefreshToken string `json:"refresh_token,omitempty"`
	ExpiresIn    int64  `json:"expires_in,omitempty"`
	// EnterpriseID is the org of an org-wide install.
	EnterpriseID string `json:"enterprise_id,omitempty"`
	// Conversations and Discover ("member") are what to poll.
	Conversations []string `json:"conversations,omitempty"`
	Discover      string   `json:"discover,omitempty"`
	// Paused registers it without polling it.
	Paused bool `json:"paused,omitempty"`
}

// Refusal is a request the install API refuses, with the status to answer and a
// message that says what to do.
type Refusal struct {
	Status int
	Msg    string
}

func (r *Refusal) Error() string { return r.Msg }

// newWorkspacesMux routes the daemon of many workspaces: the install API, each
// workspace's API under its prefix, the process's health and metrics, and the
// routes without a team_id to the only workspace.
func newWorkspacesMux(opts Options) *http.ServeMux {
	ws := opts.Workspaces
	m := opts.Metrics
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/workspaces", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"workspaces": ws.List()})
	})
	mux.HandleFunc("GET /v1/workspaces/{team_id}", func(w http.ResponseWriter, r *http.Request) {
		st, ok := ws.Get(r.PathValue("team_id"))
		if !ok {
			writeError(w, http.StatusNotFound, "no workspace %s here (GET /v1/workspaces lists them)", safeTeam(r.PathValue("team_id")))
			return
		}
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("PUT /v1/workspaces/{team_id}", func(w http.ResponseWriter, r *http.Request) {
		var in PutWorkspace
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			writeError(w, http.StatusBadRequest, "%v: want {\"bot_token\": \"xoxb-…\", …} (docs/workspaces.md)", err)
			return
		}
		st, created, err := ws.Put(r.Context(), r.PathValue("team_id"), in)
		var ref *Refusal
		switch {
		case errors.As(err, &ref):
			writeError(w, ref.Status, "%s", ref.Msg)
		case err != nil:
			writeError(w, http.StatusInternalServerError, "registering %s failed: %v", safeTeam(r.PathValue("team_id")), err)
		case created:
			writeJSON(w, http.StatusCreated, st)
		default:
			writeJSON(w, http.StatusOK, st)
		}
	})
	mux.HandleFunc("DELETE /v1/workspaces/{team_id}", func(w http.ResponseWriter, r *http.Request) {
		purge := r.URL.Query().Get("purge")
		if purge != "" && purge != "true" && purge != "false" {
			writeError(w, http.StatusBadRequest, "purge=%q: want true or false", purge)
			return
		}
		ok, err := ws.Delete(r.Context(), r.PathValue("team_id"), purge == "true")
		var ref *Refusal
		switch {
		case errors.As(err, &ref):
			writeError(w, ref.Status, "%s", ref.Msg)
		case err != nil:
			writeError(w, http.StatusInternalServerError, "removing %s failed: %v", safeTeam(r.PathValue("team_id")), err)
		case !ok:
			writeError(w, http.StatusNotFound, "no workspace %s here (GET /v1/workspaces lists them)", safeTeam(r.PathValue("team_id")))
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	mux.HandleFunc("/v1/workspaces/{team_id}/{rest...}", func(w http.ResponseWriter, r *http.Request) {
		team := r.PathValue("team_id")
		h, ok := ws.Handler(team)
		if !ok {
			if st, known := ws.Get(team); known {
				writeError(w, http.StatusServiceUnavailable, "workspace %s is %s: %s", team, st.State, st.Reason)
				return
			}
			writeError(w, http.StatusNotFound, "no workspace %s here (GET /v1/workspaces lists them)", safeTeam(team))
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + r.PathValue("rest")
		r2.URL.RawPath = ""
		h.ServeHTTP(w, r2)
	})
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		// One workspace's failure does not make the daemon unready: the others are
		// served; /v1/workspaces/{team_id}/readyz is each one's.
		counts := map[workspace.State]int{}
		for _, st := range ws.List() {
			counts[st.State]++
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "workspaces": counts})
	})
	mux.HandleFunc("GET /v1/openapi.json", openapi)
	if m != nil {
		mux.Handle("GET /metrics", m.Handler())
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if h, ok := ws.Only(); ok {
			h.ServeHTTP(w, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/mcp" {
			writeError(w, http.StatusNotFound, "this daemon serves %d workspaces: address one as /v1/workspaces/{team_id}%s (GET /v1/workspaces lists them)", len(ws.List()), strings.TrimPrefix(r.URL.Path, "/v1"))
			return
		}
		writeError(w, http.StatusNotFound, "no such route: %s", r.URL.Path)
	})
	return mux
}

// safeTeam is a team_id from a request as it may be echoed: a valid ID, or a
// placeholder (the path is the client's, not to be reflected as is).
func safeTeam(id string) string {
	if workspace.ValidTeamID(id) {
		return id
	}
	return "(not a team ID)"
}
