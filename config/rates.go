package config

import (
	"slices"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Rate profiles (slack.rate_profile); the tables live in readmodel.
const (
	ProfileNonMarketplace = readmodel.ProfileNonMarketplace
	ProfileInternal       = readmodel.ProfileInternal
)

// DiscoverMember is the discover value that also polls every conversation
// the bot is a member of.
const DiscoverMember = "member"

// Slack methods that slackpoll calls; the allowed keys of slack.rates.
const (
	MethodAuthTest             = readmodel.MethodAuthTest
	MethodConversationsHistory = readmodel.MethodHistory
	MethodConversationsReplies = readmodel.MethodReplies
	MethodConversationsInfo    = readmodel.MethodConversationInfo
	MethodUsersInfo            = readmodel.MethodUsersInfo
	MethodUsersConversations   = readmodel.MethodUsersConversations
)

var methods = readmodel.Methods()

// Methods returns the Slack methods slackpoll paces, in a fixed order.
func Methods() []string { return readmodel.Methods() }

// Profiles returns the names of the rate profiles, sorted.
func Profiles() []string { return readmodel.Profiles() }

// ProfileRates returns the requests per minute of every method under the
// named profile, and whether the profile exists.
func ProfileRates(profile string) (map[string]float64, bool) {
	return readmodel.ProfileRates(profile)
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
