package config

import (
	"maps"
	"slices"
)

// Rate profiles (slack.rate_profile).
const (
	// ProfileNonMarketplace is for commercially distributed apps not approved
	// for the Slack Marketplace: conversations.history and
	// conversations.replies 1 request per minute each (Slack, 2025).
	ProfileNonMarketplace = "non_marketplace"
	// ProfileInternal is for apps created in their own workspace and not
	// distributed: Tier 3 (50 requests per minute) for history and replies.
	ProfileInternal = "internal"
)

// DiscoverMember is the discover value that also polls every conversation
// the bot is a member of.
const DiscoverMember = "member"

// Slack methods that slackpoll calls; the allowed keys of slack.rates.
const (
	MethodAuthTest             = "auth.test"
	MethodConversationsHistory = "conversations.history"
	MethodConversationsReplies = "conversations.replies"
	MethodConversationsInfo    = "conversations.info"
	MethodUsersInfo            = "users.info"
	MethodUsersConversations   = "users.conversations"
)

var methods = []string{
	MethodAuthTest,
	MethodConversationsHistory,
	MethodConversationsReplies,
	MethodConversationsInfo,
	MethodUsersInfo,
	MethodUsersConversations,
}

// profiles gives requests per minute per method (Slack tiers: Tier 1 = 1,
// Tier 3 = 50, Tier 4 = 100; auth.test is "special", called once).
var profiles = map[string]map[string]float64{
	ProfileNonMarketplace: {
		MethodAuthTest:             100,
		MethodConversationsHistory: 1,
		MethodConversationsReplies: 1,
		MethodConversationsInfo:    50,
		MethodUsersInfo:            100,
		MethodUsersConversations:   50,
	},
	ProfileInternal: {
		MethodAuthTest:             100,
		MethodConversationsHistory: 50,
		MethodConversationsReplies: 50,
		MethodConversationsInfo:    50,
		MethodUsersInfo:            100,
		MethodUsersConversations:   50,
	},
}

// Methods returns the Slack methods slackpoll paces, in a fixed order.
func Methods() []string { return slices.Clone(methods) }

// Profiles returns the names of the rate profiles, sorted.
func Profiles() []string { return slices.Sorted(maps.Keys(profiles)) }

// ProfileRates returns the requests per minute of every method under the
// named profile, and whether the profile exists.
func ProfileRates(profile string) (map[string]float64, bool) {
	p, ok := profiles[profile]
	return maps.Clone(p), ok
}

// RatesPerMinute returns the effective requests per minute of every method in
// Methods: the rate profile, overridden by Rates. Unknown profiles and
// methods are left out (Validate rejects them).
func (s *Slack) RatesPerMinute() map[string]float64 {
	r, _ := ProfileRates(s.RateProfile)
	if r == nil {
		r = map[string]float64{}
	}
	for m, v := range s.Rates {
		if slices.Contains(methods, m) {
			r[m] = v
		}
	}
	return r
}
