package slackfake

import (
	"math/rand/v2"
	"strings"
)

// Vocabulary for generated workspaces.

var firstNames = []string{"Avery", "Bea", "Carmen", "Dmitri", "Elif", "Farah", "Gus", "Hana",
	"Ines", "Jonas", "Kofi", "Lena", "Mateo", "Nadia", "Oskar", "Priya", "Quinn", "Rosa",
	"Sami", "Tariq", "Uma", "Viktor", "Wen", "Ximena", "Yusuf", "Zoë", "Amara", "Björn",
	"Chloé", "Diego", "Émile", "Fatima", "Grete", "Haruto", "Ilse", "Jamal"}

var lastNames = []string{"Okafor", "Lindqvist", "Moreau", "Nakamura", "Silva", "Kowalski",
	"Haddad", "O'Brien", "Schmidt", "Rossi", "Ivanova", "Chen", "García", "Müller", "Dubois",
	"Novak", "Yılmaz", "Andersen", "Kaur", "Mensah", "Petrov", "Tanaka", "Costa", "Byrne"}

var channelNames = []string{"general", "deploys", "incidents", "random", "old-project",
	"eng-backend", "eng-frontend", "design", "support", "sales", "alerts", "oncall",
	"release-train", "data", "security", "infra", "mobile", "product", "hiring", "social",
	"standup", "qa", "docs", "billing", "growth", "ops", "ml", "platform", "search", "api"}

var words = strings.Fields(`deploy build green red failed passed rollback canary staging
	production merge review ticket incident pager latency p99 dashboard alert migration
	schema index cache queue worker retry timeout lunch coffee tomorrow today meeting sync
	please thanks looks good ship it blocked waiting customer release notes hotfix branch
	config flag experiment metrics logs trace error warning disk memory cpu node cluster`)

var reactionNames = []string{"thumbsup", "heart", "eyes", "tada", "white_check_mark",
	"joy", "rocket", "pray", "fire", "+1", "thumbsup::skin-tone-2", "clap::skin-tone-3",
	"raised_hands::skin-tone-5", "wave::skin-tone-4", "ok_hand::skin-tone-6"}

// sentence returns 3-24 words, sometimes with Slack markup and characters that need
// escaping in JSON.
func sentence(rng *rand.Rand, mention string) string {
	n := 3 + rng.IntN(22)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[rng.IntN(len(words))]
	}
	switch rng.IntN(12) {
	case 0:
		ws = append(ws, "<@"+mention+">")
	case 1:
		ws = append(ws, `"quoted" & <https://example.com/a?b=1&c=2|link>`)
	case 2:
		ws = append(ws, "🚀 ✅ — naïve café")
	case 3:
		ws[len(ws)-1] += "\n```\nline two\\tab\n```"
	}
	s := strings.Join(ws, " ")
	return strings.ToUpper(s[:1]) + s[1:]
}
