package slackfake

import (
	"strings"
	"time"
)

// profileJSON is a user's profile as users.info sends it.
type profileJSON struct {
	AvatarHash            string `json:"avatar_hash"`
	RealName              string `json:"real_name"`
	DisplayName           string `json:"display_name"`
	RealNameNormalized    string `json:"real_name_normalized"`
	DisplayNameNormalized string `json:"display_name_normalized"`
	Image24               string `json:"image_24"`
	Image48               string `json:"image_48"`
	Image72               string `json:"image_72"`
	BotID                 string `json:"bot_id,omitempty"`
	APIAppID              string `json:"api_app_id,omitempty"`
	Team                  string `json:"team"`
}

// userJSON is a users.info user. A deactivated user has deleted: true and no
// top-level real_name, tz or role flags, as Slack sends it; its profile keeps the names.
type userJSON struct {
	ID                string      `json:"id"`
	TeamID            string      `json:"team_id"`
	Name              string      `json:"name"`
	Deleted           bool        `json:"deleted"`
	Color             string      `json:"color,omitempty"`
	RealName          *string     `json:"real_name,omitempty"`
	TZ                string      `json:"tz,omitempty"`
	TZLabel           string      `json:"tz_label,omitempty"`
	TZOffset          *int        `json:"tz_offset,omitempty"`
	Profile           profileJSON `json:"profile"`
	IsAdmin           *bool       `json:"is_admin,omitempty"`
	IsOwner           *bool       `json:"is_owner,omitempty"`
	IsPrimaryOwner    *bool       `json:"is_primary_owner,omitempty"`
	IsRestricted      *bool       `json:"is_restricted,omitempty"`
	IsUltraRestricted *bool       `json:"is_ultra_restricted,omitempty"`
	IsBot             bool        `json:"is_bot"`
	IsAppUser         bool        `json:"is_app_user"`
	Updated           int64       `json:"updated"`
}

// usersInfo answers users.info: {"ok":true,"user":{…}}; user_not_found for an unknown
// ID (bot IDs "B…" included); missing_scope without users:read.
func (s *Server) usersInfo(c *call) (segments, *apiErr) {
	if e := s.needScope("users:read"); e != nil {
		return nil, e
	}
	u := s.users[c.params.Get("user")]
	if u == nil {
		return nil, &apiErr{code: "user_not_found"}
	}
	img := "https://avatars.slack-edge.com/fake/" + strings.ToLower(u.ID) + ".png"
	j := userJSON{
		ID: u.ID, TeamID: s.id.teamID, Name: u.Name, Deleted: u.Deleted, IsBot: u.IsBot,
		Updated: 1700000000,
		Profile: profileJSON{
			AvatarHash: "g" + strings.ToLower(u.ID), RealName: u.RealName, DisplayName: u.DisplayName,
			RealNameNormalized: u.RealName, DisplayNameNormalized: u.DisplayName,
			Image24: img, Image48: img, Image72: img, Team: s.id.teamID,
		},
	}
	for _, b := range s.bots {
		if b.UserID == u.ID {
			j.Profile.BotID, j.Profile.APIAppID = b.ID, b.AppID
		}
	}
	if !u.Deleted {
		f, off := false, 0
		j.Color, j.RealName = "9f69e7", &u.RealName
		j.TZ, j.TZLabel, j.TZOffset = "Europe/London", "Greenwich Mean Time", &off
		j.IsAdmin, j.IsOwner, j.IsPrimaryOwner, j.IsRestricted, j.IsUltraRestricted = &f, &f, &f, &f, &f
	}
	return marshalOK(struct {
		OK   bool     `json:"ok"`
		User userJSON `json:"user"`
	}{true, j})
}

// authTest answers auth.test with the bot token's identity:
//
//	{"ok":true,"url","team","user","team_id","user_id","bot_id","app_id",
//	 ["enterprise_id",] "is_enterprise_install"}
//
// enterprise_id is present for an org-wide install (Options.EnterpriseID). With token
// rotation, expires_in is the token's remaining lifetime in seconds, as Slack adds it.
// The token's scopes are in the X-OAuth-Scopes header (as on every answer).
func (s *Server) authTest(c *call) (segments, *apiErr) {
	var expiresIn *int64
	if t := s.auth.tokens[c.token]; t != nil && !t.expires.IsZero() {
		secs := int64(t.expires.Sub(c.now) / time.Second)
		expiresIn = &secs
	}
	return marshalOK(struct {
		OK                  bool   `json:"ok"`
		URL                 string `json:"url"`
		Team                string `json:"team"`
		User                string `json:"user"`
		TeamID              string `json:"team_id"`
		UserID              string `json:"user_id"`
		BotID               string `json:"bot_id"`
		AppID               string `json:"app_id"`
		EnterpriseID        string `json:"enterprise_id,omitempty"`
		IsEnterpriseInstall bool   `json:"is_enterprise_install"`
		ExpiresIn           *int64 `json:"expires_in,omitempty"`
	}{true, s.id.teamURL, s.id.teamName, botName, s.id.teamID, botUserID, botID, botAppID,
		s.id.enterpriseID, s.id.enterpriseID != "", expiresIn})
}
