package mcp

import (
	"slices"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
)

// Policy says which conversations agents may see (config mcp.conversations).
type Policy struct {
	// Conversations, if not empty, are the only conversations exposed, of any type.
	// Empty exposes every public and private channel the model holds; direct and
	// group messages are then never exposed, nor a conversation whose type is not
	// known yet (never read: it could be either).
	Conversations []string
}

// allows reports whether the conversation id, of type typ ("" when not known), is
// exposed.
func (p Policy) allows(id, typ string) bool {
	if len(p.Conversations) > 0 {
		return slices.Contains(p.Conversations, id)
	}
	return typ == rm.TypePublicChannel || typ == rm.TypePrivateChannel
}

// exposure is the policy applied to the model as one answer reads it: the exposed
// conversations, by id.
type exposure map[string]status.Conversation

// expose applies p to the report's conversations (stored and configured).
func (p Policy) expose(rep *status.Report) exposure {
	e := exposure{}
	for _, c := range rep.Conversations {
		if p.allows(c.ID, c.Type) {
			e[c.ID] = c
		}
	}
	// A listed conversation the model does not know yet is still the operator's
	// choice: its messages (tracked ones, say) are exposed once they exist.
	for _, id := range p.Conversations {
		if _, ok := e[id]; !ok {
			e[id] = status.Conversation{ID: id, Status: rm.StatusPending}
		}
	}
	return e
}

// has reports whether channel is exposed.
func (e exposure) has(channel string) bool {
	_, ok := e[channel]
	return ok
}

// ids returns the exposed conversation IDs, sorted.
func (e exposure) ids() []string {
	out := make([]string, 0, len(e))
	for id := range e {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
