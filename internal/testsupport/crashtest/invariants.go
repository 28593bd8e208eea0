package crashtest

import (
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// Threads maps each thread parent to the ts of its plain replies (thread_broadcast
// replies left out), ascending. Broadcasts are left out because a history read
// writes them as timeline messages, outside any thread sync, which is allowed; every
// other reply is written only by a whole-thread write.
type Threads map[rm.Ref][]rm.TS

// CheckThreads checks the thread invariants of a store no process is writing, and
// returns its thread reply sets:
//
//   - no watermark without the replies it stands for: a parent with a reply watermark
//     W (and no thread_not_found) holds a reply with ts W, and any newer stored reply
//     is a thread_broadcast (written by a history read of the timeline). writeThread
//     puts the reply set and the watermark — the parent's latest_reply in the same
//     replies call — in one transaction, and the fake answers each call from one
//     snapshot, so the newest reply it returned is W;
//   - no orphan reply: every plain reply's parent record exists and has had a whole
//     thread written (ThreadSyncedAt), since only writeThread writes plain replies
//     and it writes the parent in the same transaction;
//   - the thread index and the records agree both ways.
func CheckThreads(s *boltstore.Store) (Threads, []string, error) {
	refs, err := messageRefs(s.DB())
	if err != nil {
		return nil, nil, err
	}
	threads := Threads{}
	var bad []string
	err = s.View(func(tx rm.Tx) error {
		for _, ref := range refs {
			m, ok, err := tx.Message(ref.Channel, ref.TS)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("record %s/%s listed by the bucket walk cannot be read", ref.Channel, ref.TS)
			}
			if m.IsReply() {
				bad = append(bad, checkReply(tx, &m)...)
				continue
			}
			reps, err := tx.Replies(m.Channel, m.TS) // fails on an index entry without a record
			if err != nil {
				return err
			}
			if len(reps) > 0 || m.IsParent() {
				threads[rm.Ref{Channel: m.Channel, TS: m.TS}] = plainReplies(reps)
			}
			bad = append(bad, checkWatermark(&m, reps)...)
		}
		return nil
	})
	return threads, bad, err
}

func checkReply(tx rm.Tx, r *rm.Message) []string {
	var bad []string
	reps, err := tx.Replies(r.Channel, r.ThreadTS)
	if err != nil {
		return []string{err.Error()}
	}
	if !slices.ContainsFunc(reps, func(m rm.Message) bool { return m.TS == r.TS }) {
		bad = append(bad, fmt.Sprintf("reply %s/%s is not in the thread index of %s", r.Channel, r.TS, r.ThreadTS))
	}
	if r.Subtype == rm.SubtypeThreadBroadcast {
		return bad
	}
	p, ok, err := tx.Message(r.Channel, r.ThreadTS)
	switch {
	case err != nil:
		bad = append(bad, err.Error())
	case !ok:
		bad = append(bad, fmt.Sprintf("orphan reply %s/%s: parent %s has no record", r.Channel, r.TS, r.ThreadTS))
	case p.ThreadSyncedAt == nil:
		bad = append(bad, fmt.Sprintf("reply %s/%s stored but its thread %s was never written whole", r.Channel, r.TS, r.ThreadTS))
	}
	return bad
}

func checkWatermark(p *rm.Message, reps []rm.Message) []string {
	w := p.ReplyWatermark
	if w == "" || p.ThreadGone {
		return nil
	}
	var bad []string
	found := false
	for _, r := range reps {
		switch {
		case r.TS == w:
			found = true
		case w.Before(r.TS) && r.Subtype != rm.SubtypeThreadBroadcast:
			bad = append(bad, fmt.Sprintf("thread %s/%s: reply %s is newer than the watermark %s", p.Channel, p.TS, r.TS, w))
		}
	}
	if !found {
		bad = append(bad, fmt.Sprintf("thread %s/%s: watermark %s without its reply (%d replies stored)", p.Channel, p.TS, w, len(reps)))
	}
	return bad
}

func plainReplies(reps []rm.Message) []rm.TS {
	out := []rm.TS{}
	for _, r := range reps {
		if r.Subtype != rm.SubtypeThreadBroadcast {
			out = append(out, r.TS)
		}
	}
	slices.SortFunc(out, rm.TS.Compare)
	return out
}

// messageRefs walks chan/<channel>/m in the raw file: the store's interface lists
// timeline messages and threads, but an orphan reply is in neither, so only the
// bucket walk finds every record (see internal/boltstore/doc.go for the layout).
func messageRefs(db *bolt.DB) ([]rm.Ref, error) {
	var refs []rm.Ref
	err := db.View(func(tx *bolt.Tx) error {
		chans := tx.Bucket([]byte("chan"))
		if chans == nil {
			return fmt.Errorf("store has no chan bucket")
		}
		return chans.ForEachBucket(func(ch []byte) error {
			msgs := chans.Bucket(ch).Bucket([]byte("m"))
			if msgs == nil {
				return nil
			}
			return msgs.ForEach(func(k, _ []byte) error {
				if len(k) != rm.TSKeyLen {
					return fmt.Errorf("chan/%s/m: key %x is not a ts key", ch, k)
				}
				ts := rm.TS(fmt.Sprintf("%d.%06d", binary.BigEndian.Uint64(k[:8]), binary.BigEndian.Uint32(k[8:])))
				refs = append(refs, rm.Ref{Channel: string(ch), TS: ts})
				return nil
			})
		})
	})
	return refs, err
}

// TruthThreads is the thread reply sets of the fake's workspace, in the same form.
// A thread absent from it (deleted, or gone: thread_not_found) has no replies.
func TruthThreads(t slackfake.Truth) Threads {
	out := Threads{}
	for _, m := range t.Messages {
		if len(m.Replies) == 0 && m.LatestReply == "" {
			continue
		}
		ts := []rm.TS{}
		for _, r := range m.Replies {
			if r.Subtype != rm.SubtypeThreadBroadcast {
				ts = append(ts, r.TS)
			}
		}
		slices.SortFunc(ts, rm.TS.Compare)
		out[rm.Ref{Channel: m.Channel, TS: m.TS}] = ts
	}
	return out
}

// CheckWholeSets checks that reply sets are only ever written whole: while one process
// ran against an unchanging workspace (truth), each thread's stored plain replies
// went from before to either before (not synced, or the sync was cut short) or
// exactly the truth (a complete sync) — never a prefix, never a mix.
func CheckWholeSets(before, after, truth Threads) []string {
	var bad []string
	for _, ref := range sortedRefs(after) {
		got := after[ref]
		if slices.Equal(got, before[ref]) || slices.Equal(got, truth[ref]) {
			continue
		}
		bad = append(bad, fmt.Sprintf("thread %s/%s: partial reply set: stored %d replies %v, before %d %v, complete %d %v",
			ref.Channel, ref.TS, len(got), short(got), len(before[ref]), short(before[ref]), len(truth[ref]), short(truth[ref])))
	}
	return bad
}

func sortedRefs(t Threads) []rm.Ref {
	out := make([]rm.Ref, 0, len(t))
	for r := range t {
		out = append(out, r)
	}
	slices.SortFunc(out, rm.Ref.Compare)
	return out
}

// short abbreviates a long ts list for a failure message.
func short(ts []rm.TS) []rm.TS {
	if len(ts) <= 6 {
		return ts
	}
	return append(append(slices.Clip(ts[:3]), "…"), ts[len(ts)-2:]...)
}
