package poller

import rm "github.com/slackpoll/slackpoll/internal/readmodel"

// BackingOff returns the tail entries p skips until a later tick: reads of them
// advanced nothing.
func BackingOff(p *Poller) []rm.Ref {
	var out []rm.Ref
	for r, b := range p.tailBackoff {
		if b.until > p.tickNo {
			out = append(out, r)
		}
	}
	sortRefs(out)
	return out
}
