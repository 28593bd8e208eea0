package poller

import rm "github.com/slackpoll/slackpoll/internal/readmodel"

// loadWatched reads the watched set for this tick's streams, brings back into the
// rotation what a longer tracking horizon covers again, and re-queues the messages
// still waiting for locate.
func (t *tick) loadWatched() error {
	watched := map[rm.Ref]bool{}
	threads := map[rm.Ref]bool{}
	err := t.p.store.View(func(tx rm.Tx) error {
		return tx.Watched(func(r rm.Ref) error {
			watched[r] = true
			m, ok, err := tx.Message(r.Channel, r.TS)
			switch {
			case err != nil:
				return err
			case ok && m.IsReply():
				threads[rm.Ref{Channel: r.Channel, TS: m.ThreadTS}] = true
			case ok && m.IsParent():
				threads[r] = true
			}
			return nil
		})
	})
	if err != nil {
		return rm.StoreErr(err)
	}
	if err := t.unretire(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.watched, t.watchedThreads = watched, threads
	for ref := range t.p.unlocated {
		t.locateQueue = append(t.locateQueue, ref)
	}
	sortRefs(t.locateQueue)
	return nil
}

// unretire runs when the horizon no longer covers what was retired: a conversation
// whose newest retired message is within the horizon (or any, with no horizon).
func (t *tick) unretire() error {
	var cutoff rm.TS
	if h := t.p.cfg.Tracking.Horizon; h > 0 {
		cutoff = rm.TSFromUnix(t.slackNow().Add(-h).Unix())
	}
	for _, ch := range t.eligibleIDs() {
		var c rm.Conversation
		err := t.p.store.View(func(tx rm.Tx) error {
			var err error
			c, _, err = tx.Conversation(ch)
			return err
		})
		if err != nil {
			return rm.StoreErr(err)
		}
		if c.RetiredTo == "" || (cutoff != "" && !cutoff.Before(c.RetiredTo)) {
			continue
		}
		n, err := t.p.w.Unretire(ch, cutoff)
		if err != nil {
			return err
		}
		t.p.log.Info("tracking horizon covers retired messages again; they rotate again", "channel", ch, "messages", n)
	}
	return nil
}
