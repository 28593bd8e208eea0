package export

import (
	"cmp"
	"slices"
	"strconv"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// The reads below are shared by the consumers of the model (the HTTP API, the MCP
// server), so that each answers a question the same way.

// ConversationLines returns every stored conversation and every configured one not
// stored yet (status pending), as export lines, by id.
func ConversationLines(tx rm.Tx, configured []string) ([]ConversationLine, error) {
	items := []ConversationLine{}
	stored := map[string]bool{}
	team := TeamOf(tx)
	err := tx.Conversations(func(c rm.Conversation) error {
		stored[c.ID] = true
		l := NewConversationLine(&c)
		l.TeamID = team
		items = append(items, l)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, id := range configured {
		if !stored[id] {
			stored[id] = true
			l := NewConversationLine(&rm.Conversation{ID: id, Status: rm.StatusPending})
			l.TeamID = team
			items = append(items, l)
		}
	}
	slices.SortFunc(items, func(x, y ConversationLine) int { return cmp.Compare(x.ID, y.ID) })
	return items, nil
}

// MessageLineAt returns the line of the stored message ref (a thread parent with its
// replies, a reply on its own), read in a transaction of its own; ok is false when it
// is not stored.
func MessageLineAt(s rm.Store, ref rm.Ref) (line MessageLine, ok bool, err error) {
	err = s.View(func(tx rm.Tx) error {
		m, found, err := tx.Message(ref.Channel, ref.TS)
		if err != nil || !found {
			return err
		}
		ok = true
		line, err = MessageLineOf(tx, &m)
		return err
	})
	return line, ok, err
}

// KnownConversation reports whether id is configured, stored, or holds messages (a
// message tracked in a conversation that was never polled).
func KnownConversation(tx rm.Tx, configured []string, id string) (bool, error) {
	if slices.Contains(configured, id) {
		return true, nil
	}
	if _, ok, err := tx.Conversation(id); err != nil || ok {
		return ok, err
	}
	n, err := tx.Counts(id)
	return n.Messages > 0, err
}

// TimelineQuery selects a page of one conversation's timeline.
type TimelineQuery struct {
	// Oldest and Latest are inclusive bounds of ts; "" leaves that end open.
	Oldest, Latest rm.TS
	// After and Before are exclusive bounds: where the previous page ended (its
	// last ts), going forward or back; "" leaves that end open.
	After, Before rm.TS
	// Limit is the most lines returned (at least 1).
	Limit int
	// NewestFirst returns the newest lines first (the page ending at the bounds'
	// top); else the oldest first.
	NewestFirst bool
}

// maxTS is later than every ts Slack hands out: the open top of a descending walk.
const maxTS rm.TS = "9999999999.999999"

// TimelineLines returns up to q.Limit timeline messages of channel within q's bounds
// (top-level messages, thread parents with their replies, thread_broadcast replies),
// as export lines, in q's order, and whether more lines follow in that order. A bad
// bound is a storage error of the Tx (it names the bound).
func TimelineLines(tx rm.Tx, channel string, q TimelineQuery) (lines []MessageLine, more bool, err error) {
	limit := max(q.Limit, 1)
	lines = []MessageLine{}
	low, lowOpen := q.Oldest, true // lowOpen: low is inclusive
	if q.After != "" && (low == "" || low.Compare(q.After) <= 0) {
		low, lowOpen = q.After, false
	}
	high, highIncl := q.Latest, true
	if q.Before != "" && (high == "" || q.Before.Compare(high) <= 0) {
		high, highIncl = q.Before, false
	}
	above := func(ts rm.TS) bool { // ts lies past the top bound
		if high == "" {
			return false
		}
		c := ts.Compare(high)
		return c > 0 || c == 0 && !highIncl
	}
	below := func(ts rm.TS) bool { // ts lies under the bottom bound
		if low == "" {
			return false
		}
		c := ts.Compare(low)
		return c < 0 || c == 0 && !lowOpen
	}
	add := func(m *rm.Message) error {
		line, err := MessageLineOf(tx, m)
		if err == nil {
			lines = append(lines, line)
		}
		return err
	}
	if !q.NewestFirst {
		err = tx.Timeline(channel, low, "", func(m rm.Message) error {
			switch {
			case below(m.TS):
				return nil // the exclusive bottom, where the previous page ended
			case above(m.TS):
				return rm.ErrStopIteration
			case len(lines) == limit:
				more = true
				return rm.ErrStopIteration
			}
			return add(&m)
		})
		return lines, more, err
	}
	top := maxTS
	if high != "" {
		top = high
		if highIncl {
			top = succ(high)
		}
	}
	for len(lines) <= limit {
		batch, err := tx.TimelineBefore(channel, top, limit+1-len(lines))
		if err != nil || len(batch) == 0 {
			return lines, false, err
		}
		for i := range batch {
			if below(batch[i].TS) {
				return lines, false, nil
			}
			if len(lines) == limit {
				return lines, true, nil
			}
			if err := add(&batch[i]); err != nil {
				return lines, false, err
			}
		}
		top = batch[len(batch)-1].TS
	}
	return lines, more, nil
}

// succ returns the ts one microsecond after t (t must be valid).
func succ(t rm.TS) rm.TS {
	sec, micros, _ := t.Parts()
	micros++
	if micros == 1_000_000 {
		sec, micros = sec+1, 0
	}
	frac := strconv.FormatUint(uint64(micros), 10)
	for len(frac) < 6 {
		frac = "0" + frac
	}
	return rm.TS(strconv.FormatUint(sec, 10) + "." + frac)
}
