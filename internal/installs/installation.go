package installs

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"
)

// Secret is a token. Its value is read only by converting it, string(s); every
// printing path shows "[redacted]": fmt with any verb (so %v, %+v and %#v of a struct
// holding one), slog (LogValue) and encoding/json (MarshalJSON), while the Registry
// stores the real value through its own record type.
type Secret string

const redacted = "[redacted]"

// Format prints "[redacted]" (or "" for an empty Secret, so a missing token shows).
func (s Secret) Format(f fmt.State, _ rune) {
	if s != "" {
		_, _ = io.WriteString(f, redacted)
	}
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value {
	if s == "" {
		return slog.StringValue("")
	}
	return slog.StringValue(redacted)
}

// MarshalJSON writes "[redacted]" ("" for an empty Secret).
func (s Secret) MarshalJSON() ([]byte, error) {
	if s == "" {
		return []byte(`""`), nil
	}
	return []byte(strconv.Quote(redacted)), nil
}

// Installation is one workspace's installation of the app: its tokens and what to
// poll there. It is safe to print, log and marshal: the tokens are Secrets.
type Installation struct {
	TeamID       string // "T…" (the record's key)
	EnterpriseID string // "E…" for an org-wide install, else ""
	BotToken     Secret // xoxb-… or, with rotation, xoxe.xoxb-…
	RefreshToken Secret // xoxe-…; "" without rotation
	// ExpiresAt is when BotToken expires; zero = no rotation.
	ExpiresAt     time.Time
	Conversations []string // conversation IDs to poll
	Discover      string   // conversation discovery mode, as config's
	Paused        bool
	AddedAt       time.Time
	// Refresh is set while a refresh is in flight (write-ahead, see the package doc):
	// found at start, it says a refresh may have been spent without its answer kept.
	Refresh *PendingRefresh `json:",omitempty"`
}

// PendingRefresh is the write-ahead record of a refresh: written (and synced) before
// oauth.v2.access is called, cleared in the transaction that keeps its answer.
type PendingRefresh struct {
	StartedAt time.Time
	Of        Secret // the refresh token being spent
}

// String describes the installation without its tokens.
func (in Installation) String() string {
	s := "installation " + in.TeamID
	if in.EnterpriseID != "" {
		s += " (enterprise " + in.EnterpriseID + ")"
	}
	if !in.ExpiresAt.IsZero() {
		s += ", rotating token expires " + in.ExpiresAt.UTC().Format(time.RFC3339)
	}
	if in.Paused {
		s += ", paused"
	}
	if in.Refresh != nil {
		s += ", refresh pending since " + in.Refresh.StartedAt.UTC().Format(time.RFC3339)
	}
	return s
}

// LogValue implements slog.LogValuer: the installation's identity and state, never a
// token.
func (in Installation) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("team_id", in.TeamID)}
	if in.EnterpriseID != "" {
		attrs = append(attrs, slog.String("enterprise_id", in.EnterpriseID))
	}
	if !in.ExpiresAt.IsZero() {
		attrs = append(attrs, slog.Time("expires_at", in.ExpiresAt))
	}
	attrs = append(attrs, slog.Int("conversations", len(in.Conversations)), slog.Bool("paused", in.Paused))
	if in.Refresh != nil {
		attrs = append(attrs, slog.Time("refresh_pending_since", in.Refresh.StartedAt))
	}
	return slog.GroupValue(attrs...)
}

// record is the stored (sealed) form of an Installation: the only place tokens are
// plain strings.
type record struct {
	TeamID        string    `json:"team_id"`
	EnterpriseID  string    `json:"enterprise_id,omitempty"`
	BotToken      string    `json:"bot_token"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	ExpiresAt     time.Time `json:"expires_at,omitzero"`
	Conversations []string  `json:"conversations,omitempty"`
	Discover      string    `json:"discover,omitempty"`
	Paused        bool      `json:"paused,omitempty"`
	AddedAt       time.Time `json:"added_at,omitzero"`
	Refresh       *struct {
		StartedAt time.Time `json:"started_at"`
		Of        string    `json:"of"`
	} `json:"refresh,omitempty"`
}

func encodeRecord(in Installation) ([]byte, error) {
	r := record{
		TeamID: in.TeamID, EnterpriseID: in.EnterpriseID,
		BotToken: string(in.BotToken), RefreshToken: string(in.RefreshToken),
		ExpiresAt: in.ExpiresAt, Conversations: in.Conversations, Discover: in.Discover,
		Paused: in.Paused, AddedAt: in.AddedAt,
	}
	if in.Refresh != nil {
		r.Refresh = &struct {
			StartedAt time.Time `json:"started_at"`
			Of        string    `json:"of"`
		}{in.Refresh.StartedAt, string(in.Refresh.Of)}
	}
	return json.Marshal(r)
}

func decodeRecord(b []byte) (Installation, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return Installation{}, err
	}
	in := Installation{
		TeamID: r.TeamID, EnterpriseID: r.EnterpriseID,
		BotToken: Secret(r.BotToken), RefreshToken: Secret(r.RefreshToken),
		ExpiresAt: r.ExpiresAt, Conversations: r.Conversations, Discover: r.Discover,
		Paused: r.Paused, AddedAt: r.AddedAt,
	}
	if r.Refresh != nil {
		in.Refresh = &PendingRefresh{StartedAt: r.Refresh.StartedAt, Of: Secret(r.Refresh.Of)}
	}
	return in, nil
}
