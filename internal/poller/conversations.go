package poller

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// eligible holds the conversations a tick may read: those setup found readable (not
// archived, not waiting for their retry time), less those a call failed for since.
// Safe for concurrent use.
type eligible struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (e *eligible) has(ch string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ids[ch]
}

func (e *eligible) add(ch string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ids[ch] = true
}

func (e *eligible) remove(ch string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.ids, ch)
}

// sorted returns the eligible conversations, sorted.
func (e *eligible) sorted() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.ids))
}

// conversationFailed records a per-conversation error (README, "Replace on read": a
// conversation that cannot be read is skipped, retried hourly): the conversation keeps
// its data, its status says why, it is reported once (when the status changes) and not
// tried again before InfoRefresh has passed; info is re-read then. Transient errors
// change no status.
func (t *tick) conversationFailed(id string, err error) error {
	t.convs.remove(id)
	if rm.ClassOf(err) != rm.ClassConversation {
		t.report.skip("%s: %v (will retry next tick)", id, err)
		return nil
	}
	code := rm.CodeOf(err)
	status := rm.StatusError
	switch code {
	case rm.StatusNotInChannel, rm.StatusMissingScope, rm.StatusChannelNotFound:
		status = code
	case "is_archived":
		status = rm.StatusArchived
	}
	var needed string
	if ae, ok := err.(*rm.APIError); ok {
		needed = ae.Needed
	}
	var changed bool
	retry := t.now().Add(t.p.cfg.InfoRefresh)
	uerr := t.p.w.UpdateConversation(id, func(c *rm.Conversation) {
		changed = c.Status != status || c.NeededScope != needed
		c.Status, c.NeededScope, c.ErrorDetail = status, needed, err.Error()
		c.IsArchived = c.IsArchived || status == rm.StatusArchived
		c.RetryAt = &retry
		c.InfoReadAt = nil // re-read info when the retry comes
	})
	if changed {
		msg := fmt.Sprintf("%s: %s", id, status)
		if needed != "" {
			msg += " (add the " + needed + " scope to the app and reinstall it)"
		} else if status == rm.StatusNotInChannel {
			msg += " (invite the bot: /invite @yourbot)"
		}
		t.report.skip("%s; retrying after %s", msg, retry.UTC().Format(time.RFC3339))
	}
	return uerr
}

// conversationOK records a successful read: status ok, error cleared.
func (t *tick) conversationOK(id string, swept bool) error {
	now := t.now()
	return t.p.w.UpdateConversation(id, func(c *rm.Conversation) {
		if c.Status != rm.StatusArchived {
			c.Status = rm.StatusOK
		}
		c.NeededScope, c.ErrorDetail, c.RetryAt = "", "", nil
		if swept {
			c.LastSweptAt = &now
		}
	})
}
