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
	at         []time.Time // the instant of each AllowN call
}

func (d *disagreeing) AllowN(now time.Time, _ int) bool {
	d.calls++
	d.at = append(d.at, now)
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

// TestWaitBackoffCapped: the back-off between retries refused although
// ready grows to a millisecond and no further, so a waiter behind a crowd of
// competitors tries again at least once a millisecond, as documented: no
// pause between two tries is longer, and after the ramp every pause is that
// long.
func TestWaitBackoffCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tries = 60
		d := &disagreeing{admitAfter: tries}
		if err := Wait(context.Background(), "test", d, 1); err != nil {
			t.Fatal(err)
		}
		if len(d.at) != tries+1 {
			t.Fatalf("AllowN called %d times, want %d", len(d.at), tries+1)
		}
		for i := 1; i < len(d.at); i++ {
			gap := d.at[i].Sub(d.at[i-1])
			if gap > maxRetryWait {
				t.Fatalf("pause %d between refused tries: %v, want at most %v", i, gap, maxRetryWait)
			}
			if i >= immediateRetries+12 && gap != maxRetryWait {
				t.Fatalf("pause %d: %v, want the cap %v once the back-off has grown", i, gap, maxRetryWait)
			}
		}
	})
}

// TestAtOnCallersClock: At names the same instant as Time, on the caller's
// clock: with a monotonic reading only when now has one, in now's location;
// also for instants too far from the base for their offset to be exact (the
// zero Time, the year 9999), which take the other path.
func TestAtOnCallersClock(t *testing.T) {
	b := NewBase()
	loc := time.FixedZone("UTC-7", -7*3600)
	nows := []time.Time{
		time.Now(),
		time.Now().Round(0).In(loc),
		time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC),
		{},
		time.Date(9999, 12, 31, 23, 59, 59, 0, loc),
	}
	for _, now := range nows {
		off := b.Offset(now)
		mono := now != now.Round(0)
		for _, at := range []int64{0, 1, off, off + 1, off + int64(time.Hour), 1 << 61, -(1 << 61)} {
			got := b.At(now, off, at)
			if !got.Equal(b.Time(at)) {
				t.Errorf("At(%v, %d): %v, want the instant %v", now, at, got, b.Time(at))
			}
			if (got != got.Round(0)) != mono {
				t.Errorf("At(%v, %d) = %v: monotonic reading %v, now's %v", now, at, got, got != got.Round(0), mono)
			}
			if got.Location() != now.Location() {
				t.Errorf("At(%v, %d) = %v: in %v, want %v", now, at, got, got.Location(), now.Location())
			}
		}
	}
}
