package readmodel

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// authenticate resolves the token's identity with auth.test once per process (the bot
// user and bot IDs classify own posts; the scopes drive discover: member). Later ticks
// use the cached answer.
func (t *tick) authenticate() error {
	if t.p.identity != nil {
		return nil
	}
	t.call(MethodAuthTest)
	id, err := t.p.src.AuthTest(t.ctx)
	if err != nil {
		if ferr := t.fatal(err); ferr != nil {
			return ferr
		}
		return fmt.Errorf("checking the token: %w", err)
	}
	id.CheckAt = t.now()
	if err := t.p.store.Update(func(tx Tx) error { return tx.PutIdentity(id) }); err != nil {
		return storeErr(err)
	}
	t.p.identity = &id
	return nil
}

// discoverTypes maps the token's history scopes to the conversation types it may read.
func discoverTypes(scopes []string) []string {
	var types []string
	for _, ty := range []string{TypePublicChannel, TypePrivateChannel, TypeMPIM, TypeIM} {
		if slices.Contains(scopes, HistoryScope(ty)) {
			types = append(types, ty)
		}
	}
	return types
}

// discover lists the conversations the bot is a member of (users.conversations, for
// the types its scopes allow) at most every InfoRefresh, and stores new ones.
func (t *tick) discover() error {
	if !t.p.cfg.Discover || (!t.p.lastDiscover.IsZero() && t.now().Sub(t.p.lastDiscover) < t.p.cfg.InfoRefresh) {
		return nil
	}
	types := discoverTypes(t.p.identity.Scopes)
	if len(types) == 0 {
		t.skip("discover: the token has none of channels:history, groups:history, im:history, mpim:history")
		t.p.lastDiscover = t.now()
		return nil
	}
	var found []ConversationInfo
	cursor := ""
	for {
		t.call(MethodUsersConversations)
		page, next, err := t.p.src.MemberConversations(t.ctx, types, cursor)
		if err != nil {
			if ferr := t.fatal(err); ferr != nil {
				return ferr
			}
			t.skip("discover: %v", err)
			return nil // a partial listing adds nothing; try again next tick
		}
		found = append(found, page...)
		if next == "" || next == cursor {
			break
		}
		cursor = next
	}
	now := t.now()
	err := t.p.store.Update(func(tx Tx) error {
		for _, info := range found {
			c, ok, err := tx.Conversation(info.ID)
			if err != nil {
				return err
			}
			if !ok {
				c = Conversation{ID: info.ID, Status: StatusPending, Discovered: true}
			}
			applyInfo(&c, info, now)
			if err := tx.PutConversation(c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return storeErr(err)
	}
	t.p.lastDiscover = now
	return nil
}

// applyInfo copies conversations.info flags into c. An archived conversation is
// read-only in Slack: it keeps its data and is skipped until unarchived.
func applyInfo(c *Conversation, info ConversationInfo, now time.Time) {
	c.Type = info.Type()
	if info.Name != "" {
		c.Name = info.Name
	}
	c.IsArchived = info.IsArchived
	c.InfoReadAt = &now
	switch {
	case info.IsArchived:
		c.Status = StatusArchived
	case c.Status == StatusArchived:
		c.Status = StatusPending
	}
}

// refreshConversations makes sure every configured conversation is stored, reads
// conversations.info where due (first seen, hourly, or after an error once its retry
// time has come), and decides which conversations this tick may read.
func (t *tick) refreshConversations() error {
	var convs []Conversation
	err := t.p.store.Update(func(tx Tx) error {
		for _, id := range t.p.cfg.Conversations {
			if _, ok, err := tx.Conversation(id); err != nil {
				return err
			} else if !ok {
				if err := tx.PutConversation(Conversation{ID: id, Status: StatusPending}); err != nil {
					return err
				}
			}
		}
		return tx.Conversations(func(c Conversation) error {
			if c.Discovered || slices.Contains(t.p.cfg.Conversations, c.ID) {
				convs = append(convs, c)
			}
			return nil
		})
	})
	if err != nil {
		return storeErr(err)
	}
	for _, c := range convs {
		now := t.now()
		if c.RetryAt != nil && now.Before(*c.RetryAt) {
			continue // reported once; retried no more than every InfoRefresh
		}
		if c.InfoReadAt == nil || now.Sub(*c.InfoReadAt) >= t.p.cfg.InfoRefresh {
			if t.pastDeadline() {
				return errStopTick
			}
			t.call(MethodConversationInfo)
			info, err := t.p.src.ConversationInfo(t.ctx, c.ID)
			if err != nil {
				if ferr := t.fatal(err); ferr != nil {
					return ferr
				}
				if err := t.conversationFailed(c.ID, err); err != nil {
					return err
				}
				continue
			}
			if err := t.updateConversation(c.ID, func(c *Conversation) { applyInfo(c, info, t.now()) }); err != nil {
				return err
			}
			if info.IsArchived {
				continue
			}
		} else if c.IsArchived {
			continue
		}
		t.eligible[c.ID] = true
	}
	return nil
}

// updateConversation applies fn to the stored conversation id in one transaction.
func (t *tick) updateConversation(id string, fn func(*Conversation)) error {
	return storeErr(t.p.store.Update(func(tx Tx) error {
		c, ok, err := tx.Conversation(id)
		if err != nil {
			return err
		}
		if !ok {
			c = Conversation{ID: id, Status: StatusPending}
		}
		fn(&c)
		return tx.PutConversation(c)
	}))
}

// conversationFailed records a per-conversation error (rule 5): the conversation keeps
// its data, its status says why, it is reported once (when the status changes) and not
// tried again before InfoRefresh has passed; info is re-read then. Transient errors
// change no status.
func (t *tick) conversationFailed(id string, err error) error {
	delete(t.eligible, id)
	if ClassOf(err) != ClassConversation {
		t.skip("%s: %v (will retry next tick)", id, err)
		return nil
	}
	code := CodeOf(err)
	status := StatusError
	switch code {
	case StatusNotInChannel, StatusMissingScope, StatusChannelNotFound:
		status = code
	case "is_archived":
		status = StatusArchived
	}
	var needed string
	if ae, ok := err.(*APIError); ok {
		needed = ae.Needed
	}
	var changed bool
	retry := t.now().Add(t.p.cfg.InfoRefresh)
	uerr := t.updateConversation(id, func(c *Conversation) {
		changed = c.Status != status || c.NeededScope != needed
		c.Status, c.NeededScope, c.ErrorDetail = status, needed, err.Error()
		c.IsArchived = c.IsArchived || status == StatusArchived
		c.RetryAt = &retry
		c.InfoReadAt = nil // re-read info when the retry comes
	})
	if changed {
		msg := fmt.Sprintf("%s: %s", id, status)
		if needed != "" {
			msg += " (add the " + needed + " scope to the app and reinstall it)"
		} else if status == StatusNotInChannel {
			msg += " (invite the bot: /invite @yourbot)"
		}
		t.skip("%s; retrying after %s", msg, retry.UTC().Format(time.RFC3339))
	}
	return uerr
}

// conversationOK records a successful read: status ok, error cleared.
func (t *tick) conversationOK(id string, swept bool) error {
	now := t.now()
	return t.updateConversation(id, func(c *Conversation) {
		if c.Status != StatusArchived {
			c.Status = StatusOK
		}
		c.NeededScope, c.ErrorDetail, c.RetryAt = "", "", nil
		if swept {
			c.LastSweptAt = &now
		}
	})
}

// rotated returns the eligible conversation IDs starting at the rotation offset: the
// conversation after the last one the previous tick's bulk window reached, so when the
// budget or the deadline cannot cover all of them, every one is swept in turn.
func (t *tick) rotated() []string {
	var ids []string
	for id := range t.eligible {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return nil
	}
	k := t.p.rotation % len(ids)
	return append(ids[k:], ids[:k]...)
}

func joinErrs(errs []ItemError) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = string(e.TS) + ": " + e.Err
	}
	return strings.Join(parts, "; ")
}
