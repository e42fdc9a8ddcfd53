package slidelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// TestErrorsAreShared checks that every package exports the module's errors
// themselves, so that errors.Is matches across packages, and that a WaitN
// error of each limiter wraps them.
func TestErrorsAreShared(t *testing.T) {
	for name, e := range map[string]error{
		"ring": ring.ErrNeverReady, "window": window.ErrNeverReady,
		"multi": multi.ErrNeverReady, "keyed": keyed.ErrNeverReady,
	} {
		if e != slidelimit.ErrNeverReady {
			t.Errorf("%s.ErrNeverReady = %v, want slidelimit.ErrNeverReady", name, e)
		}
	}
	for name, e := range map[string]error{
		"ring": ring.ErrDeadline, "window": window.ErrDeadline,
		"multi": multi.ErrDeadline, "keyed": keyed.ErrDeadline,
	} {
		if e != slidelimit.ErrDeadline {
			t.Errorf("%s.ErrDeadline = %v, want slidelimit.ErrDeadline", name, e)
		}
	}
	r, _ := ring.New(1, time.Hour)
	w, _ := window.New(1, time.Hour)
	m, _ := multi.New(multi.Rule{Limit: 1, Window: time.Hour})
	a, _ := multi.NewApprox(multi.Rule{Limit: 1, Window: time.Hour})
	for name, l := range map[string]interface {
		WaitN(ctx context.Context, n int) error
		AllowN(now time.Time, n int) bool
	}{"ring": r, "window": w, "multi.Limiter": m, "multi.Approx": a} {
		if err := l.WaitN(context.Background(), 2); !errors.Is(err, slidelimit.ErrNeverReady) {
			t.Errorf("%s: WaitN(ctx, 2) with limit 1 = %v, want an error wrapping slidelimit.ErrNeverReady", name, err)
		}
		l.AllowN(time.Now(), 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := l.WaitN(ctx, 1); !errors.Is(err, slidelimit.ErrDeadline) {
			t.Errorf("%s: WaitN(ctx with a 1 min deadline, 1) on a full limiter of 1 per hour = %v, want an error wrapping slidelimit.ErrDeadline", name, err)
		}
		cancel()
	}
}
