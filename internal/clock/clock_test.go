package clock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// disagreeing is a Waiter whose ReadyAt always says "now" while AllowN
// refuses until admitAfter calls: the worst a limiter (or a crowd of
// competitors taking the room first every time) can do to Wait.
type disagreeing struct {
	calls      int
	admitAfter int
}

func (d *disagreeing) AllowN(time.Time, int) bool {
	d.calls++
	return d.admitAfter > 0 && d.calls > d.admitAfter
}

func (d *disagreeing) ReadyAt(now time.Time, _ int) (time.Time, bool) { return now, true }

// Wait must not spin when ReadyAt says now and AllowN refuses: it backs off
// on the timer, so the fake clock advances and the context's deadline ends
// it. (Before the bound, this test hung: a spinning goroutine never lets a
// synctest bubble's clock advance.)
func TestWaitDoesNotSpin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &disagreeing{}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := Wait(ctx, "test", d, 1)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v, want the context's deadline", err)
		}
		if got := time.Since(start); got < time.Second {
			t.Fatalf("Wait returned after %v, before the deadline", got)
		}
		// One second at most one try per maxRetryWait, plus the ramp up.
		if max := int(time.Second/maxRetryWait) + immediateRetries + 20; d.calls > max {
			t.Fatalf("AllowN called %d times in one second, want at most %d", d.calls, max)
		}
	})
}

// A refusal that clears after a few tries is retried at once first: no
// waiting for a competitor that merely took the room in between.
func TestWaitRetriesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &disagreeing{admitAfter: immediateRetries}
		start := time.Now()
		if err := Wait(context.Background(), "test", d, 1); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 0 {
			t.Fatalf("Wait slept %v before its immediate retries", got)
		}
		d = &disagreeing{admitAfter: immediateRetries + 5}
		if err := Wait(context.Background(), "test", d, 1); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got <= 0 || got > time.Millisecond {
			t.Fatalf("Wait took %v after its immediate retries, want a short back-off", got)
		}
	})
}
