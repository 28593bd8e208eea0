package slackfake

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// GenSize is the size of a generated workspace: conversations, messages (top-level
// and replies together) and users.
type GenSize struct {
	Conversations int
	Messages      int
	Users         int
}

// Preset sizes.
var (
	// Small: 8 conversations, 2,000 messages, 30 users; for unit and convergence tests.
	Small = GenSize{Conversations: 8, Messages: 2000, Users: 30}
	// Medium: 40 conversations, 20,000 messages, 250 users; for the demo and benchmarks.
	Medium = GenSize{Conversations: 40, Messages: 20000, Users: 250}
)

// genSpan is how far back generated history reaches (beyond the 72 h bulk window, so
// the tail rotation has work).
const genSpan = 14 * 24 * time.Hour

// Generate populates s with a seeded, realistic workspace, all of it before the
// current time of s's clock:
//
//   - users with and without display names, a few deactivated, one with no names;
//   - app bots, classic bots (with a username, with only a bot_profile, and an
//     unregistered bot ID), and posts and reactions of the token's own bot;
//   - conversations of every type: public channels the bot is in and one it is not,
//     private channels (one hidden from the bot), IMs, MPIMs, one archived channel;
//     message volume skewed across them;
//   - threads on about one message in eight with a long tail of reply counts (most
//     1-3, some hundreds, rarely over a thousand), some broadcast replies, a few
//     tombstoned parents;
//   - edits, reactions with skin tones and long tails of reacting users.
//
// The same seed, size and clock give the same workspace. Generated IDs never collide
// with the own bot's; conversations already in s are kept.
func Generate(s *Server, seed int64, size GenSize) {
	g := &generator{s: s, rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))}
	s.mu.Lock()
	defer s.mu.Unlock()
	g.end = s.now().Add(-time.Minute)
	g.start = g.end.Add(-genSpan)
	g.users(max(size.Users, 6))
	g.bots()
	convs := g.conversations(max(size.Conversations, 7))
	g.messages(convs, max(size.Messages, 0))
}

type generator struct {
	s          *Server
	rng        *rand.Rand
	start, end time.Time
	userIDs    []string // human users
	appBots    []string
	classic    []string // registered classic bots
	unregBot   string
	archived   string
	members    map[string][]string // conversation → users who post there
}

// genID returns a Slack-shaped ID: prefix, a "1", then 8 characters.
func genID(prefix byte, n int) string {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	out := []byte{prefix, '1'}
	var tail [8]byte
	for i := 7; i >= 0; i-- {
		tail[i] = alphabet[n%len(alphabet)]
		n /= len(alphabet)
	}
	return string(append(out, tail[:]...))
}

func (g *generator) users(n int) {
	for i := 0; i < n; i++ {
		first := firstNames[g.rng.IntN(len(firstNames))]
		last := lastNames[g.rng.IntN(len(lastNames))]
		u := &User{ID: genID('U', i), RealName: first + " " + last}
		u.Name = strings.ToLower(first) + "." + strings.ToLower(strings.ReplaceAll(last, "'", ""))
		switch r := g.rng.IntN(20); {
		case r < 13:
			u.DisplayName = strings.ToLower(first)
		case r < 15:
			u.DisplayName = first + " " + last[:1] + "."
		}
		if i == 3 { // a user who set no names at all: labelled by ID
			u.DisplayName, u.RealName = "", ""
		}
		u.Deleted = i > 0 && g.rng.IntN(16) == 0
		g.s.users[u.ID] = u
		g.userIDs = append(g.userIDs, u.ID)
	}
}

func (g *generator) bots() {
	add := func(b Bot) {
		g.s.bots[b.ID] = &b
		if b.UserID != "" {
			g.s.users[b.UserID] = &User{ID: b.UserID, Name: b.Name, RealName: b.Name, IsBot: true}
		}
	}
	add(Bot{ID: genID('B', 0), UserID: genID('U', 9000), Name: "deploybot", AppID: genID('A', 0)})
	add(Bot{ID: genID('B', 1), UserID: genID('U', 9001), Name: "alertbot", AppID: genID('A', 1)})
	add(Bot{ID: genID('B', 2), Name: "jenkins"})
	add(Bot{ID: genID('B', 3), Name: "ci-webhook"})
	g.appBots = []string{genID('B', 0), genID('B', 1)}
	g.classic = []string{genID('B', 2), genID('B', 3)}
	g.unregBot = genID('B', 4)
}

// conversations creates n conversations: the first seven cover every kind.
func (g *generator) conversations(n int) []*conv {
	g.members = map[string][]string{}
	var out []*conv
	im, mp := 0, 0
	for i := 0; i < n; i++ {
		kind := i
		if i >= 7 {
			kind = [...]int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 5, 2, 2, 2, 8, 3, 3, 4}[g.rng.IntN(20)]
		}
		id := genID('C', i)
		name := channelNames[i%len(channelNames)]
		if i >= len(channelNames) {
			name += "-" + strings.ToLower(genID('x', i)[6:])
		}
		var c Conversation
		switch kind {
		case 0, 1, 6: // public member (6: archived later)
			c = PublicChannel(id, name)
		case 2: // private member
			c = PrivateChannel(id, name)
		case 3: // IM with a user
			id = genID('D', i)
			c = DirectMessage(id, g.userIDs[im%len(g.userIDs)])
			im++
		case 4: // MPIM
			id = genID('G', i)
			c = GroupDM(id, "")
		case 5: // public, bot not a member
			c = PublicChannel(id, name)
			c.BotMember = false
		case 8: // private, bot not a member: hidden
			c = PrivateChannel(id, name)
			c.BotMember = false
		}
		if kind == 6 {
			g.archived = id
		}
		var mem []string
		switch {
		case c.IsIM:
			mem = []string{c.User}
		case c.IsMPIM:
			mem = g.pickUsers(2 + g.rng.IntN(3))
			names := make([]string, len(mem))
			for j, u := range mem {
				names[j] = g.s.users[u].Name
			}
			c.Name = "mpdm-" + strings.Join(names, "--") + "-" + string(rune('1'+mp%9))
			mp++
		case i == 0:
			mem = g.userIDs
		default:
			mem = g.pickUsers(3 + g.rng.IntN(min(20, len(g.userIDs))))
		}
		g.members[id] = mem
		cv := &conv{Conversation: c, created: g.start.Add(-24 * time.Hour).Unix(), byKey: map[uint64]*message{}}
		g.s.convs[id] = cv
		out = append(out, cv)
	}
	return out
}

func (g *generator) pickUsers(n int) []string {
	n = min(n, len(g.userIDs))
	perm := g.rng.Perm(len(g.userIDs))[:n]
	slices.Sort(perm)
	out := make([]string, n)
	for i, p := range perm {
		out[i] = g.userIDs[p]
	}
	return out
}

// longTail draws a reply or reactor count: Pareto(α=1.1) from 1, capped.
func (g *generator) longTail(limit int) int {
	n := int(1 / math.Pow(1-g.rng.Float64(), 1/1.1))
	return max(1, min(n, limit))
}

func (g *generator) messages(convs []*conv, total int) {
	weights := make([]float64, len(convs))
	sum := 0.0
	for i := range weights {
		weights[i] = 1 / math.Pow(float64(i+1), 0.8)
		sum += weights[i]
	}
	g.rng.Shuffle(len(weights), func(i, j int) { weights[i], weights[j] = weights[j], weights[i] })
	for i, cv := range convs {
		n := int(math.Round(float64(total) * weights[i] / sum))
		g.fill(cv, n)
	}
	if g.archived != "" {
		g.s.convs[g.archived].IsArchived = true
	}
}

// fill writes n messages (top-level and replies) into cv.
func (g *generator) fill(cv *conv, n int) {
	// Shape first: a list of thread sizes (0 = no thread) using up n messages.
	var shape []int
	for left := n; left > 0; {
		left--
		r := 0
		if g.rng.IntN(8) == 0 && left > 0 {
			r = min(g.longTail(1500), left)
			left -= r
		}
		shape = append(shape, r)
	}
	span := g.end.Sub(g.start)
	times := make([]time.Duration, len(shape))
	for i := range times {
		times[i] = time.Duration(g.rng.Int64N(int64(span)))
	}
	slices.Sort(times)
	used := map[uint64]bool{}
	key := func(t time.Time) uint64 {
		k := uint64(t.UnixMicro())
		for used[k] {
			k++
		}
		used[k] = true
		return k
	}
	for i, replies := range shape {
		at := g.start.Add(times[i])
		m := g.newMessage(cv, false)
		m.key = key(at)
		g.s.place(cv, m, nil)
		g.decorate(m)
		if replies == 0 {
			continue
		}
		offs := make([]time.Duration, replies)
		for j := range offs {
			offs[j] = time.Duration(g.rng.ExpFloat64() * float64(3*time.Hour))
		}
		slices.Sort(offs)
		for _, off := range offs {
			r := g.newMessage(cv, true)
			r.key = key(at.Add(min(off, g.end.Sub(at))))
			if g.rng.IntN(16) == 0 {
				r.subtype = readmodel.SubtypeThreadBroadcast
			}
			g.s.place(cv, r, m)
			g.decorate(r)
		}
		if g.rng.IntN(30) == 0 { // the parent was deleted, its thread lives on
			g.s.remove(cv, m)
		}
	}
}

// newMessage picks an author: mostly members, sometimes bots (not in replies for
// classic bots), sometimes the token's own bot.
func (g *generator) newMessage(cv *conv, reply bool) *message {
	mem := g.members[cv.ID]
	m := &message{}
	r := g.rng.IntN(100)
	switch {
	case r < 4 && !cv.IsIM:
		b := g.s.bots[g.appBots[g.rng.IntN(len(g.appBots))]]
		cp := *b
		m.user, m.botID, m.bot = b.UserID, b.ID, &cp
	case r < 7 && !reply && !cv.IsIM:
		m.subtype = readmodel.SubtypeBotMessage
		switch g.rng.IntN(3) {
		case 0: // username set
			b := g.s.bots[g.classic[0]]
			cp := *b
			m.botID, m.username, m.bot = b.ID, "jenkins", &cp
		case 1: // only a bot_profile
			b := g.s.bots[g.classic[1]]
			cp := *b
			m.botID, m.bot = b.ID, &cp
		default: // an unregistered bot: labelled by its ID
			m.botID = g.unregBot
		}
	case r < 10:
		b := g.s.bots[botID]
		cp := *b
		m.user, m.botID, m.bot = b.UserID, b.ID, &cp
	default:
		m.user = mem[g.rng.IntN(len(mem))]
	}
	m.text = sentence(g.rng, mem[g.rng.IntN(len(mem))])
	return m
}

// decorate adds edits and reactions to a placed message.
func (g *generator) decorate(m *message) {
	if g.rng.IntN(12) == 0 {
		editor := m.user
		if editor == "" {
			editor = m.botID
		}
		at := m.key + uint64(g.rng.Int64N(int64(6*time.Hour/time.Microsecond)))
		at = min(at, uint64(g.end.UnixMicro()))
		m.text = sentence(g.rng, editor) + " (edited)"
		m.edited = &readmodel.Edited{User: editor, TS: tsOf(at)}
	}
	if g.rng.IntN(4) != 0 {
		return
	}
	for k := 1 + g.rng.IntN(3); k > 0; k-- {
		name := reactionNames[g.rng.IntN(len(reactionNames))]
		if slices.ContainsFunc(m.reactions, func(r *reaction) bool { return r.name == name }) {
			continue
		}
		users := g.pickUsers(g.longTail(len(g.userIDs)))
		if g.rng.IntN(20) == 0 {
			users = append(users, botUserID)
		}
		m.reactions = append(m.reactions, &reaction{name: name, users: users})
	}
	m.enc = nil
}

// ConversationIDs returns the IDs of every conversation, sorted.
func (s *Server) ConversationIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.convs))
	for id := range s.convs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
