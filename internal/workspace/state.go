package workspace

import (
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// State is a workspace's condition, as status, /v1/status and /v1/workspaces show
// it.
type State string

// The states of a workspace.
const (
	// Active: polling (or about to: its first tick has not finished).
	Active State = "active"
	// Paused: registered, not polled (paused by the operator); its store is kept.
	Paused State = "paused"
	// TokenRejected: Slack rejected the token (invalid_auth, token_revoked,
	// account_inactive): most likely the app was uninstalled. A new token (PUT)
	// resumes it.
	TokenRejected State = "token_rejected"
	// RefreshFailed: the rotating token could not be refreshed (Slack's error in the
	// reason). A new token pair (PUT) resumes it.
	RefreshFailed State = "refresh_failed"
	// Damaged: the store file cannot be opened or failed a transaction; restore a
	// backup or purge it.
	Damaged State = "damaged"
)

// Source says where a workspace was registered.
const (
	SourceConfig = "config" // the config file's workspaces: (or slack.token)
	SourceAPI    = "api"    // PUT /v1/workspaces/{team_id} or `slackpoll workspaces add`
)

// Status is one workspace as listed: its identity, state and freshness. It never
// holds a token.
type Status struct {
	TeamID       string `json:"team_id"`
	EnterpriseID string `json:"enterprise_id,omitempty"`
	Source       string `json:"source"`
	State        State  `json:"state"`
	// Reason says why the state is not active, and what to do (empty when active).
	Reason string `json:"reason,omitempty"`
	// Store is the workspace's store file.
	Store string `json:"store"`
	// Rotating is true when the token rotates (a refresh token is kept).
	Rotating bool `json:"rotating"`
	// LastTick is the last finished tick of this process (nil before the first).
	LastTick *LastTick `json:"last_tick"`
}

// LastTick is the summary of a workspace's last finished tick: when it ended, why,
// and the staleness figures it measured (seconds; 0 when not known yet).
type LastTick struct {
	Finished   time.Time `json:"finished"`
	StopReason string    `json:"stop_reason"`
	// RotationSeconds is the time to re-read every tracked message (the worst-case
	// staleness of an edit or reaction of the tracked class); WatchedRotationSeconds
	// the same for the watched class; PhysicalLimitSeconds the least time the rates
	// allow for it.
	RotationSeconds        float64 `json:"rotation_seconds"`
	WatchedRotationSeconds float64 `json:"watched_rotation_seconds"`
	PhysicalLimitSeconds   float64 `json:"physical_limit_seconds"`
	Tracked                int     `json:"tracked"`
	Errors                 int     `json:"errors"`
}

func lastTick(s rm.TickSummary) *LastTick {
	return &LastTick{
		Finished: s.Finished.UTC(), StopReason: s.StopReason,
		RotationSeconds:        s.RotationPeriod.Seconds(),
		WatchedRotationSeconds: s.WatchedRotation.Seconds(),
		PhysicalLimitSeconds:   s.PhysicalLimit.Seconds(),
		Tracked:                s.Tracked, Errors: len(s.Errors),
	}
}
