package changefeed

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed is Wait's error once the Notifier is closed.
var ErrClosed = errors.New("changefeed: notifier closed (shutting down)")

// Notifier tells waiters that the feed grew. The writer's commit hook publishes the
// last seq; long polls and deliverers wait for a seq beyond theirs. The zero value is
// ready; it is safe for concurrent use.
type Notifier struct {
	mu     sync.Mutex
	last   uint64
	closed bool
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

// Close wakes every waiter for good: the daemon is shutting down, and a long poll
// answers what it has at once instead of holding the HTTP server's graceful shutdown
// until it gives up and cuts the connection without an answer.
func (n *Notifier) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	if n.grew != nil {
		close(n.grew)
		n.grew = nil
	}
}

// Wait returns when a seq after after has been published, or ctx ends (its error),
// or the Notifier is closed (ErrClosed). A waiter that starts after the publish
// returns at once.
func (n *Notifier) Wait(ctx context.Context, after uint64) error {
	for {
		n.mu.Lock()
		if n.last > after {
			n.mu.Unlock()
			return nil
		}
		if n.closed {
			n.mu.Unlock()
			return ErrClosed
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
