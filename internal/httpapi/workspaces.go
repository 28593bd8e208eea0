package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
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
	// Feeds are the change feeds of the workspaces whose store is open, by team_id:
	// what GET /v1/workspaces/changes merges.
	Feeds() []Feed
}

// Feed is one workspace's change feed.
type Feed struct {
	TeamID string
	Store  rm.Store
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

// Refusal is a request the install API refuses, with what to do.
type Refusal struct {
	Kind RefusalKind
	Msg  string
}

func (r *Refusal) Error() string { return r.Msg }

// RefusalKind says why a request is refused, and so its status.
type RefusalKind int

// The refusals of the install API.
const (
	// RefuseInvalid: the token or a field is wrong (auth.test rejected the token, it
	// is another team's, a conversation ID is malformed): 422.
	RefuseInvalid RefusalKind = iota
	// RefuseConflict: the workspace is the config file's; change it there: 409.
	RefuseConflict
	// RefuseNoKey: runtime registration needs the install key, which is not set: 403.
	RefuseNoKey
	// RefuseUnavailable: Slack could not be asked (the token is unchecked), or the
	// daemon is stopping: 503; try again.
	RefuseUnavailable
)

// writeRefusal answers a refusal with its kind's status.
func writeRefusal(w http.ResponseWriter, r *Refusal) {
	switch r.Kind {
	case RefuseConflict:
		writeError(w, http.StatusConflict, "%s", r.Msg)
	case RefuseNoKey:
		writeError(w, http.StatusForbidden, "%s", r.Msg)
	case RefuseUnavailable:
		writeError(w, http.StatusServiceUnavailable, "%s", r.Msg)
	default:
		writeError(w, http.StatusUnprocessableEntity, "%s", r.Msg)
	}
}

// wsAPI serves the install API over Workspaces.
type wsAPI struct{ ws Workspaces }

// routes registers the install API's routes (openapi.yaml documents each).
func (a *wsAPI) routes(mux router) {
	mux.HandleFunc("GET /v1/workspaces", a.wsList)
	mux.HandleFunc("GET /v1/workspaces/changes", a.wsChanges)
	mux.HandleFunc("GET /v1/workspaces/{team_id}", a.wsGet)
	mux.HandleFunc("PUT /v1/workspaces/{team_id}", a.wsPut)
	mux.HandleFunc("DELETE /v1/workspaces/{team_id}", a.wsDelete)
}

func (a *wsAPI) wsList(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, WorkspaceList{Workspaces: a.ws.List()})
}

// WorkspaceList is the answer of GET /v1/workspaces.
type WorkspaceList struct {
	Workspaces []workspace.Status `json:"workspaces"`
}

func (a *wsAPI) wsGet(w http.ResponseWriter, r *http.Request) {
	st, ok := a.ws.Get(r.PathValue("team_id"))
	if !ok {
		writeError(w, http.StatusNotFound, "no workspace %s here (GET /v1/workspaces lists them)", safeTeam(r.PathValue("team_id")))
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (a *wsAPI) wsPut(w http.ResponseWriter, r *http.Request) {
	team := r.PathValue("team_id")
	if !workspace.ValidTeamID(team) {
		writeError(w, http.StatusBadRequest, "team_id: want a Slack team ID (T… or E…, uppercase letters and digits), as auth.test or oauth.v2.access answer it")
		return
	}
	var in PutWorkspace
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "body: want JSON {\"bot_token\": \"xoxb-…\", …} (docs/workspaces.md): %v", err)
		return
	}
	st, created, err := a.ws.Put(r.Context(), team, in)
	var ref *Refusal
	switch {
	case errors.As(err, &ref):
		writeRefusal(w, ref)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "registering %s failed: %v", team, err)
	case created:
		writeJSON(w, http.StatusCreated, st)
	default:
		writeJSON(w, http.StatusOK, st)
	}
}

func (a *wsAPI) wsDelete(w http.ResponseWriter, r *http.Request) {
	team := r.PathValue("team_id")
	purge := r.URL.Query().Get("purge")
	if purge != "" && purge != "true" && purge != "false" {
		writeError(w, http.StatusBadRequest, "purge=%q: want true or false", purge)
		return
	}
	ok, err := a.ws.Delete(r.Context(), team, purge == "true")
	var ref *Refusal
	switch {
	case errors.As(err, &ref):
		writeRefusal(w, ref)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "removing %s failed: %v", safeTeam(team), err)
	case !ok:
		writeError(w, http.StatusNotFound, "no workspace %s here (GET /v1/workspaces lists them)", safeTeam(team))
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// WorkspacesChangePage is a page of every workspace's changes (GET
// /v1/workspaces/changes): each workspace's in seq order, the workspaces one after
// the other; NextCursor is passed back as cursor, unchanged.
type WorkspacesChangePage struct {
	Changes    []rm.Change `json:"items"`
	NextCursor string      `json:"next_cursor"`
}

// wsChanges answers a page of every workspace's changes after the cursor, which
// says how far each workspace's feed was read (a workspace it does not name is read
// from its start). Each workspace gets a share of the limit, so that a busy one does
// not hold back the others; a workspace's changes keep their order.
func (a *wsAPI) wsChanges(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := uintParam(q.Get("limit"), defaultChangesLimit)
	if err != nil || limit < 1 || limit > maxChangesLimit {
		writeError(w, http.StatusBadRequest, "limit=%q: want a whole number from 1 to %d", q.Get("limit"), maxChangesLimit)
		return
	}
	cursor := map[string]uint64{}
	if c := q.Get("cursor"); c != "" {
		raw, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil || json.Unmarshal(raw, &cursor) != nil {
			writeError(w, http.StatusBadRequest, "cursor=%.40q: pass next_cursor of the previous answer unchanged", c)
			return
		}
	}
	feeds := a.ws.Feeds()
	share := max(1, int(limit)/max(1, len(feeds)))
	page := WorkspacesChangePage{Changes: []rm.Change{}}
	for _, f := range feeds {
		var p changefeed.Page
		err := f.Store.View(func(tx rm.Tx) error {
			var err error
			p, err = changefeed.Read(tx, cursor[f.TeamID], share, rm.ChangeFilter{})
			return err
		})
		var gone *changefeed.GoneError
		switch {
		case errors.As(err, &gone):
			writeError(w, http.StatusGone, "workspace %s: %v (read it again from GET /v1/workspaces/%s/v1/export, then follow from its oldest seq)", f.TeamID, err, f.TeamID)
			return
		case err != nil:
			writeError(w, http.StatusInternalServerError, "reading workspace %s's feed: %v", f.TeamID, err)
			return
		}
		page.Changes = append(page.Changes, p.Changes...)
		cursor[f.TeamID] = p.Next
	}
	raw, _ := json.Marshal(cursor) // a map of strings to numbers always encodes
	page.NextCursor = base64.RawURLEncoding.EncodeToString(raw)
	writeJSON(w, http.StatusOK, page)
}

// newWorkspacesMux routes the daemon of many workspaces: the install API, each
// workspace's API under its prefix, the process's health and metrics, and the
// routes without a team_id to the only workspace.
func newWorkspacesMux(opts Options) *http.ServeMux {
	ws := opts.Workspaces
	mux := http.NewServeMux()
	(&wsAPI{ws}).routes(mux)
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
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.HandleFunc("GET /v1/openapi.json", openapi)
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", opts.Metrics.Handler())
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
