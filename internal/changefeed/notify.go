package changefeed

import (
	"context"
	"sync"
)

// Notifier tells waiters that the feed grew. The writer's commit hook publishes the
// last seq; long polls and deliverers wait for a seq beyond theirs. The zero value is
// ready; it is safe for concurrent use.
type Notifier struct {
	mu   sync.Mutex
	last uint64
	// grew is closed and replaced on every publish that moves last forward.
	grew chan struct{}
}

// Publish records that changes up to seq last are committed and wakes the waiters.
func (n *Notifier) Publish(last uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if last <= n.last {
		return
	}
	n.last = last
	if n.grew != nil {
		close(n.grew)
		n.grew = nil
	}
}

// Wait returns when a seq after after has been published, or ctx ends (its error).
// A waiter that starts after the publish returns at once.
func (n *Notifier) Wait(ctx context.Context, after uint64) error {
	for {
		n.mu.Lock()
		if n.last > after {
			n.mu.Unlock()
			return nil
		}
		if n.grew == nil {
			n.grew = make(chan struct{})
		}
		grew := n.grew
		n.mu.Unlock()
		select {
		case <-grew:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
