package poller

import (
	"slices"
	"sync"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// workQueue is what the streams of a tick hand each other: threads to read (queued by
// any read that saw a latest_reply move, or a thread parent the store did not hold),
// never-read messages to locate (handed over by the history stream), users to resolve
// (named by any message written). A stream with nothing to do waits on it for another
// to queue work, and gives up once no stream is left that could. Safe for concurrent
// use.
//
// It guards, for the tick, the parts of memory they share: the pending users and the
// messages waiting for locate outlive the tick (the next one goes on with them), as
// do the threads left in it (memory.carried, at the tick's end).
type workQueue struct {
	mu sync.Mutex
	// idle is how a stream with nothing to do waits for work: under mu.
	idle idle

	// threads are the thread reads to make, oldest first; queued holds their parents
	// (and those of the threads read this tick from it).
	threads []threadCandidate
	queued  map[rm.Ref]bool
	// locate holds never-read tracked messages a complete history read missed;
	// unlocated is memory's: those of them not located yet, this tick or an earlier.
	locate    []rm.Ref
	unlocated map[rm.Ref]bool
	// users is memory's pending users; failedUsers are those whose users.info failed
	// this tick: retried on a later tick.
	users       map[string]struct{}
	failedUsers map[string]bool
}

// threadCandidate is a thread to read: its parent, and what the read that queued it saw.
type threadCandidate struct {
	rm.Ref
	latestReply rm.TS // the parent's latest_reply at the read that queued it
	// first is the parent as a read saw it when the store did not hold it read: it
	// is stored with its thread, in one transaction, so that a parent never stands
	// without its replies (tick.deferNewParents).
	first *rm.Message
	// tries counts the thread reads of first that failed.
	tries int
}

// newWorkQueue returns the queue of a tick that starts with the threads carried from
// the last one, over mem's pending users and unlocated messages.
func newWorkQueue(mem *memory, over func() bool) *workQueue {
	q := &workQueue{
		queued:    map[rm.Ref]bool{},
		unlocated: mem.unlocated, users: mem.pendingUsers, failedUsers: map[string]bool{},
	}
	q.idle = idle{cond: sync.NewCond(&q.mu), over: over, waiting: map[*func() bool]bool{}}
	for _, c := range mem.carried {
		if !q.queued[c.Ref] {
			q.queued[c.Ref] = true
			q.threads = append(q.threads, c)
		}
	}
	return q
}

// queueThread queues a thread read for a parent whose latest_reply moved, or whose
// stored replies need a whole-thread read to be confirmed (force).
func (q *workQueue) queueThread(m *rm.Message, force bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queueThreadLocked(m, force)
}

func (q *workQueue) queueThreadLocked(m *rm.Message, force bool) {
	if m.IsReply() || (!force && !m.NeedsThreadSync()) {
		return
	}
	ref := rm.Ref{Channel: m.Channel, TS: m.TS}
	if q.queued[ref] {
		return
	}
	q.queued[ref] = true
	q.threads = append(q.threads, threadCandidate{Ref: ref, latestReply: m.LatestReply})
	q.idle.cond.Broadcast()
}

// wrote queues the thread reads and the users that messages just written call for:
// threads whose latest_reply moved (or whose stored replies a whole-thread read must
// confirm), the users they name.
func (q *workQueue) wrote(out []rm.Applied) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range out {
		m := &out[i].Message
		q.queueThreadLocked(m, out[i].Unverified)
		q.noteUsersLocked(m)
	}
}

// queueNewParent queues the thread of m, a parent the store does not hold read, with m
// as read: its thread read stores it.
func (q *workQueue) queueNewParent(m rm.Message) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ref := rm.Ref{Channel: m.Channel, TS: m.TS}
	if q.queued[ref] {
		return
	}
	q.queued[ref] = true
	q.threads = append(q.threads, threadCandidate{Ref: ref, latestReply: m.LatestReply, first: &m})
	q.idle.cond.Broadcast()
}

// requeueThread puts back a thread read that was taken but not begun.
func (q *workQueue) requeueThread(c threadCandidate) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.threads = append(q.threads, c)
}

// isQueued reports whether ref's thread was queued this tick.
func (q *workQueue) isQueued(ref rm.Ref) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queued[ref]
}

// nextThread takes the oldest queued thread of a conversation take accepts; the
// others met on the way are dropped.
func (q *workQueue) nextThread(take func(ch string) bool) (threadCandidate, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return popFirst(&q.threads, func(c threadCandidate) bool { return take(c.Channel) })
}

// queueLocate hands never-read tracked messages that a complete history read did not
// return to the replies stream, which finds their thread; history does not read them
// again meanwhile.
func (q *workQueue) queueLocate(refs []rm.Ref) {
	if len(refs) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, ref := range refs {
		if !q.unlocated[ref] {
			q.unlocated[ref] = true
			q.locate = append(q.locate, ref)
		}
	}
	q.idle.cond.Broadcast()
}

// loadLocate queues the messages still waiting for locate from earlier ticks.
func (q *workQueue) loadLocate() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for ref := range q.unlocated {
		q.locate = append(q.locate, ref)
	}
	sortRefs(q.locate)
}

// requeueLocate puts back a message taken for locate but not located: the next tick
// starts with it.
func (q *workQueue) requeueLocate(ref rm.Ref) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.locate = append(q.locate, ref)
}

// nextLocate takes the first message to locate of a conversation take accepts; the
// others met on the way are dropped (they stay unlocated, for a later tick).
func (q *workQueue) nextLocate(take func(ch string) bool) (rm.Ref, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return popFirst(&q.locate, func(r rm.Ref) bool { return take(r.Channel) })
}

// popFirst takes items off the front of *list up to the first that take accepts, and
// returns it.
func popFirst[T any](list *[]T, take func(T) bool) (T, bool) {
	for len(*list) > 0 {
		x := (*list)[0]
		*list = (*list)[1:]
		if take(x) {
			return x, true
		}
	}
	var zero T
	return zero, false
}

// located notes that ref no longer waits for locate.
func (q *workQueue) located(ref rm.Ref) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.unlocated, ref)
}

// awaitingLocate reports whether ref waits for locate.
func (q *workQueue) awaitingLocate(ref rm.Ref) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.unlocated[ref]
}

// noteUsers queues the users stored messages refer to for resolution.
func (q *workQueue) noteUsers(msgs []rm.Message) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range msgs {
		q.noteUsersLocked(&msgs[i])
	}
}

func (q *workQueue) noteUsersLocked(m *rm.Message) {
	added := false
	for _, id := range m.UserIDs() {
		if _, ok := q.users[id]; !ok {
			q.users[id] = struct{}{}
			added = true
		}
	}
	if added {
		q.idle.cond.Broadcast()
	}
}

// pendingUsers returns the users to resolve that did not fail this tick, sorted.
func (q *workQueue) pendingUsers() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	ids := make([]string, 0, len(q.users))
	for id := range q.users {
		if !q.failedUsers[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// userDone takes id off the pending users when it is resolved (or its cached answer
// is fresh); a lookup that failed leaves it there, for a later tick.
func (q *workQueue) userDone(id string, resolved bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if resolved {
		delete(q.users, id)
	} else {
		q.failedUsers[id] = true
	}
}

// threadsOrLocateLocked and usersPendingLocked are the replies and users streams'
// work tests for wait; called with mu held.
func (q *workQueue) threadsOrLocateLocked() bool { return len(q.threads) > 0 || len(q.locate) > 0 }

func (q *workQueue) usersPendingLocked() bool {
	for id := range q.users {
		if !q.failedUsers[id] {
			return true
		}
	}
	return false
}

// leftover returns what the tick could not get to: the thread reads left (carried
// to the next tick) and the messages left to locate.
func (q *workQueue) leftover() ([]threadCandidate, []rm.Ref) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.threads, q.locate
}

// idle is how a stream with nothing to do waits for another to queue work, under the
// workQueue's lock (cond.L): any queueing wakes it.
type idle struct {
	cond *sync.Cond
	// over reports that the tick is over (shutdown, soft deadline): no wait goes on.
	over func() bool
	// active counts the streams running and not waiting for work; waiting holds the
	// work tests of the streams waiting. Once no stream is active and none has work,
	// no stream can produce work for another, and the waiting ones stop.
	active  int
	waiting map[*func() bool]bool
}

// start sets the number of streams that run.
func (i *idle) start(streams int) {
	i.cond.L.Lock()
	defer i.cond.L.Unlock()
	i.active = streams
}

// streamDone notes that a stream stopped: it produces no more work.
func (i *idle) streamDone() {
	i.cond.L.Lock()
	defer i.cond.L.Unlock()
	i.active--
	i.cond.Broadcast()
}

// wait blocks until ready (called with the lock held) reports work, and returns true; or
// returns false once no stream is left that could produce any (every other one
// stopped, or waiting with no work of its own), or the tick is over. A stream woken
// with work counts as active only once it runs again, so "no stream active" is not
// enough: the users stream stopped while the replies stream, woken with a thread
// whose authors it was about to note, had not run yet.
func (i *idle) wait(ready func() bool) bool {
	i.cond.L.Lock()
	defer i.cond.L.Unlock()
	i.active--
	i.cond.Broadcast()
	defer func() { i.active++ }()
	i.waiting[&ready] = true
	defer delete(i.waiting, &ready)
	for {
		if ready() {
			return true
		}
		if i.over() || i.active == 0 && !i.otherHasWorkLocked(&ready) {
			return false
		}
		i.cond.Wait()
	}
}

// otherHasWorkLocked reports whether a waiting stream other than self has work: it
// was woken and runs next. Called with the lock held.
func (i *idle) otherHasWorkLocked(self *func() bool) bool {
	for other := range i.waiting {
		if other != self && (*other)() {
			return true
		}
	}
	return false
}
