package ctxsleep

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(context.Background(), time.Minute); err != nil || time.Since(start) != time.Minute {
			t.Fatalf("Sleep(1m) = %v after %v, want nil after 1m", err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start = time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Fatalf("Sleep(1h) with a 1s ctx = %v after %v, want the ctx error after 1s", err, time.Since(start))
		}
		if err := Sleep(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sleep(0) with a done ctx = %v, want its error", err)
		}
		if err := Sleep(context.Background(), -time.Second); err != nil {
			t.Fatalf("Sleep(-1s) = %v, want nil", err)
		}
	})
}
