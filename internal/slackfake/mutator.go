package slackfake

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Mutator applies a seeded stream of random, realistic changes to a Server's
// workspace, for the demo and convergence tests. Changes take their ts from the
// Server's clock; advance it between steps for realistic spacing.
type Mutator struct {
	s   *Server
	rng *rand.Rand
	// Disruptive also allows, rarely, archiving/unarchiving conversations and removing
	// the bot from/re-adding it to them.
	Disruptive bool
}

// NewMutator returns a Mutator for s. For a given seed, workspace and clock the
// stream of changes is the same.
func NewMutator(s *Server, seed int64) *Mutator {
	return &Mutator{s: s, rng: rand.New(rand.NewPCG(uint64(seed), 0x6a09e667f3bcc909))}
}

type stepKind int

const (
	stepPost stepKind = iota
	stepReply
	stepReact
	stepEdit
	stepUnreact
	stepBroadcast
	stepAppBot
	stepClassicBot
	stepOwnPost
	stepDelete
	stepDeleteReply
	stepDeleteParent
	stepRename
	stepDeactivate
	stepArchive
	stepBotMembership
)

// stepWeights are relative frequencies of the kinds of change.
var stepWeights = [...]int{
	stepPost: 230, stepReply: 200, stepReact: 150, stepEdit: 90, stepUnreact: 50,
	stepBroadcast: 30, stepAppBot: 30, stepClassicBot: 20, stepOwnPost: 20,
	stepDelete: 40, stepDeleteReply: 40, stepDeleteParent: 20, stepRename: 20,
	stepDeactivate: 5, stepArchive: 5, stepBotMembership: 5,
}

// Step applies one random change and describes it ("reply C1… 1754467200.000100 by
// U1…"). A change that finds nothing to act on (no thread to delete from, say)
// describes itself as skipped.
func (m *Mutator) Step() string {
	total := 0
	for _, w := range stepWeights {
		total += w
	}
	for {
		n := m.rng.IntN(total)
		k := stepKind(0)
		for ; n >= stepWeights[k]; k++ {
			n -= stepWeights[k]
		}
		if (k == stepArchive || k == stepBotMembership) && !m.Disruptive {
			continue
		}
		return m.apply(k)
	}
}

// target is what one change acts on, read under the lock; the change itself then
// goes through the public mutation methods.
type target struct {
	channel   string
	msg       readmodel.TS // a live timeline message (a thread root), or ""
	reply     readmodel.TS // one of its live replies, or ""
	react     string       // one of its reactions, or ""
	reactUser string       // a user of that reaction
	user      string       // a random active human user (the other party in an IM)
	appBot    string       // a random app bot other than the own one, or ""
	classic   string       // a random classic bot, or ""
}

func sortedKeys[V any](m map[string]V, keep func(V) bool) []string {
	var out []string
	for k, v := range m {
		if keep(v) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func (m *Mutator) pickOne(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[m.rng.IntN(len(ids))]
}

func (m *Mutator) pick(wantThread bool) target {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var t target
	t.user = m.pickOne(sortedKeys(s.users, func(u *User) bool { return !u.IsBot && !u.Deleted }))
	t.appBot = m.pickOne(sortedKeys(s.bots, func(b *Bot) bool { return b.UserID != "" && b.ID != botID }))
	t.classic = m.pickOne(sortedKeys(s.bots, func(b *Bot) bool { return b.UserID == "" }))
	t.channel = m.pickOne(sortedKeys(s.convs, func(c *conv) bool { return !c.IsArchived }))
	if t.channel == "" {
		return t
	}
	c := s.convs[t.channel]
	if c.IsIM {
		t.user = c.User
	}
	for try := 0; try < 30 && len(c.timeline) > 0; try++ {
		// Biased to recent messages.
		back := int(m.rng.ExpFloat64() * float64(max(len(c.timeline)/8, 1)))
		msg := c.timeline[len(c.timeline)-1-min(back, len(c.timeline)-1)]
		if msg.parent != nil {
			msg = msg.parent
		}
		if msg.tombstone || wantThread && len(msg.replies) == 0 {
			continue
		}
		t.msg = msg.ts
		if len(msg.replies) > 0 {
			t.reply = msg.replies[m.rng.IntN(len(msg.replies))].ts
		}
		if len(msg.reactions) > 0 {
			r := msg.reactions[m.rng.IntN(len(msg.reactions))]
			t.react, t.reactUser = r.name, r.users[m.rng.IntN(len(r.users))]
		}
		break
	}
	return t
}

func (m *Mutator) apply(k stepKind) string {
	if k == stepArchive {
		return m.archiveOrUnarchive()
	}
	wantThread := k == stepDeleteReply || k == stepDeleteParent
	t := m.pick(wantThread)
	if t.channel == "" {
		return "skip: no open conversation"
	}
	text := sentence(m.rng, t.user)
	done := func(what string, ts readmodel.TS, err error) string {
		if err != nil {
			return fmt.Sprintf("skip %s %s: %v", what, t.channel, err)
		}
		return fmt.Sprintf("%s %s %s", what, t.channel, ts)
	}
	s := m.s
	switch k {
	case stepPost:
		ts, err := s.Post(t.channel, t.user, text)
		return done("post by "+t.user, ts, err)
	case stepAppBot:
		ts, err := s.PostAsAppBot(t.channel, t.appBot, text)
		return done("app bot post", ts, err)
	case stepClassicBot:
		ts, err := s.PostAsClassicBot(t.channel, t.classic, "jenkins", text)
		return done("classic bot post", ts, err)
	case stepOwnPost:
		ts, err := s.PostAsAppBot(t.channel, botID, text)
		return done("own post", ts, err)
	case stepBotMembership:
		if m.rng.IntN(2) == 0 {
			return done("remove bot from", "", s.RemoveBot(t.channel))
		}
		return done("add bot to", "", s.JoinBot(t.channel))
	case stepRename:
		first := firstNames[m.rng.IntN(len(firstNames))]
		display := ""
		if m.rng.IntN(3) > 0 {
			display = first + fmt.Sprint(m.rng.IntN(100))
		}
		err := s.RenameUser(t.user, display, first+" "+lastNames[m.rng.IntN(len(lastNames))])
		return fmt.Sprintf("rename %s to %q%s", t.user, display, errSuffix(err))
	case stepDeactivate:
		return fmt.Sprintf("deactivate %s%s", t.user, errSuffix(s.DeactivateUser(t.user)))
	}

	if t.msg == "" {
		return "skip: no message to change in " + t.channel
	}
	switch k {
	case stepReply:
		ts, err := s.Reply(t.channel, t.msg, t.user, text)
		return done("reply to "+string(t.msg)+" by "+t.user, ts, err)
	case stepBroadcast:
		ts, err := s.ReplyBroadcast(t.channel, t.msg, t.user, text)
		return done("broadcast reply to "+string(t.msg), ts, err)
	case stepEdit:
		target := t.msg
		if t.reply != "" && m.rng.IntN(3) == 0 {
			target = t.reply
		}
		return done("edit", target, s.Edit(t.channel, target, text+" (edited)"))
	case stepReact:
		target := t.msg
		if t.reply != "" && m.rng.IntN(3) == 0 {
			target = t.reply
		}
		name := reactionNames[m.rng.IntN(len(reactionNames))]
		user := t.user
		if m.rng.IntN(15) == 0 {
			user = botUserID
		}
		return done("react :"+name+": by "+user+" on", target, s.React(t.channel, target, user, name))
	case stepUnreact:
		if t.react == "" {
			return "skip unreact: no reaction on " + string(t.msg)
		}
		return done("unreact :"+t.react+": by "+t.reactUser+" on", t.msg, s.Unreact(t.channel, t.msg, t.reactUser, t.react))
	case stepDelete:
		return done("delete", t.msg, s.Delete(t.channel, t.msg))
	case stepDeleteReply:
		if t.reply == "" {
			return "skip delete reply: no thread"
		}
		return done("delete reply", t.reply, s.Delete(t.channel, t.reply))
	case stepDeleteParent:
		return done("delete thread parent", t.msg, s.Delete(t.channel, t.msg))
	}
	return "skip"
}

// archiveOrUnarchive archives an open conversation or unarchives an archived one,
// keeping at least half of them open.
func (m *Mutator) archiveOrUnarchive() string {
	s := m.s
	s.mu.Lock()
	open := sortedKeys(s.convs, func(c *conv) bool { return !c.IsArchived && !c.IsIM }) // Slack cannot archive an IM
	archived := sortedKeys(s.convs, func(c *conv) bool { return c.IsArchived })
	s.mu.Unlock()
	if len(archived) > 0 && (m.rng.IntN(2) == 0 || len(open) <= len(archived)) {
		id := m.pickOne(archived)
		return "unarchive " + id + errSuffix(s.Unarchive(id))
	}
	if len(open) == 0 {
		return "skip archive: no conversation"
	}
	id := m.pickOne(open)
	return "archive " + id + errSuffix(s.Archive(id))
}

func errSuffix(err error) string {
	if err != nil {
		return " (skipped: " + err.Error() + ")"
	}
	return ""
}
