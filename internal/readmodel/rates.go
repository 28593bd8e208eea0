package readmodel

import (
	"maps"
	"slices"
)

// Rate profiles (config key slack.rate_profile), in requests per minute per method.
const (
	// ProfileNonMarketplace is for commercially distributed apps not approved for the
	// Slack Marketplace: conversations.history and conversations.replies 1 request per
	// minute each (Slack changelog 2025-05-29).
	ProfileNonMarketplace = "non_marketplace"
	// ProfileInternal is for apps created in their own workspace and not distributed:
	// Tier 3 (50 requests per minute) for history and replies.
	ProfileInternal = "internal"
)

// methods are the Slack methods slackpoll calls and paces, in a fixed order.
var methods = []string{
	MethodAuthTest, MethodHistory, MethodReplies,
	MethodConversationInfo, MethodUsersInfo, MethodUsersConversations, MethodReactionsGet,
}

// profiles give requests per minute per method. Slack tiers (Slack's rate-limit tiers): Tier 1 = 1+,
// Tier 3 = 50+ (conversations.info, users.conversations), Tier 4 = 100+ (users.info);
// auth.test is "special" and called once per process.
var profiles = map[string]map[string]float64{
	ProfileNonMarketplace: {
		MethodAuthTest: 100, MethodHistory: 1, MethodReplies: 1,
		MethodConversationInfo: 50, MethodUsersInfo: 100, MethodUsersConversations: 50,
		// reactions.get is Tier 3; Slack's 2025 non-Marketplace change named only
		// conversations.history and conversations.replies.
		MethodReactionsGet: 50,
	},
	ProfileInternal: {
		MethodAuthTest: 100, MethodHistory: 50, MethodReplies: 50,
		MethodConversationInfo: 50, MethodUsersInfo: 100, MethodUsersConversations: 50,
		MethodReactionsGet: 50,
	},
}

// Methods returns the Slack methods slackpoll calls, in a fixed order: the allowed keys
// of slack.rates.
func Methods() []string { return slices.Clone(methods) }

// Profiles returns the names of the rate profiles, sorted.
func Profiles() []string { return slices.Sorted(maps.Keys(profiles)) }

// MinRatePerMinute is the smallest rate a method may be given: one call a day. A
// smaller one has a spacing beyond what a time.Duration holds (1e-9 a minute
// overflowed into no limit at all), and would stop the method for good anyway.
const MinRatePerMinute = 1.0 / (24 * 60)

// ProfileRates returns a fresh map of requests per minute of every method under the
// named profile, and whether the profile exists. The map is the caller's to override.
func ProfileRates(profile string) (map[string]float64, bool) {
	p, ok := profiles[profile]
	return maps.Clone(p), ok
}
