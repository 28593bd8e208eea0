// Package ctxsleep sleeps on the runtime clock (fake inside a testing/synctest
// bubble) unless a context ends first: the pacing waits, Retry-After waits, backoffs
// and tick intervals that a shutdown must be able to abandon at once.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends, and returns ctx.Err() in that case. A ctx already
// done returns its error at once, even for d <= 0; otherwise d <= 0 returns nil at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
