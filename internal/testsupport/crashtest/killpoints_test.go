package crashtest

import (
	"math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// killKind is where a kill is aimed.
type killKind int

const (
	// killAtRandom kills after a seeded delay: anywhere — the auth.test pacing wait,
	// a history page's commit, a users.info lookup, between ticks.
	killAtRandom killKind = iota
	// killMidThread kills while a thread's second (or later) page is in flight: the
	// first page was read, so a daemon writing as it goes would leave a prefix.
	killMidThread
	// killInFlight kills while the n-th request of the process is held in flight by
	// a Slow fault, whatever method it is.
	killInFlight
	numKillKinds
)

var killKindNames = [...]string{"random", "mid-thread", "in-flight"}

func (k killKind) String() string { return killKindNames[k] }

// killPlan is one seeded kill point.
type killPlan struct {
	kind  killKind
	delay time.Duration // killAtRandom
	nth   int           // killInFlight: which request of the process
}

func planKill(rng *rand.Rand) killPlan {
	p := killPlan{delay: 20*time.Millisecond + time.Duration(rng.Int64N(int64(800*time.Millisecond)))}
	switch n := rng.IntN(10); {
	case n < 4:
		p.kind = killMidThread
	case n < 6:
		p.kind = killInFlight
		p.nth = rng.IntN(40)
	default:
		p.kind = killAtRandom
	}
	return p
}

// slowDelay holds an aimed-at request in flight far longer than the kill takes.
const slowDelay = time.Minute

// aim arms the hook for plan and returns a channel that receives a description of the
// request held in flight once it is (nil for killAtRandom). The hook injects a Slow
// fault into the fake just before passing it that very request: the daemon makes one
// call at a time, so the fault applies to it.
func (e *env) aim(plan killPlan) <-chan string {
	if plan.kind == killAtRandom {
		e.setHook(nil)
		return nil
	}
	held := make(chan string, 1)
	var once sync.Once
	var seen atomic.Int64
	e.setHook(func(method string, params url.Values) {
		n := int(seen.Add(1)) - 1
		switch plan.kind {
		case killMidThread:
			if method != rm.MethodReplies || params.Get("cursor") == "" {
				return
			}
		case killInFlight:
			if n != plan.nth {
				return
			}
		}
		once.Do(func() {
			e.fake.InjectFault(slackfake.Fault{Method: method, Kind: slackfake.Slow, Delay: slowDelay})
			held <- method + " " + params.Get("channel") + " " + params.Get("ts") + " cursor=" + params.Get("cursor")
		})
	})
	return held
}
