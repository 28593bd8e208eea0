package poller

import rm "github.com/slackpoll/slackpoll/internal/readmodel"

// BackingOff returns the tail entries p skips until a later tick: reads of them
// advanced nothing.
func BackingOff(p *Poller) []rm.Ref {
	return p.mem.backoff.at(p.mem.tickNo)
}
