// Package clock converts instants to the integer nanosecond offsets the
// limiters compute with, and implements the blocking Wait loop they share.
//
// A limiter records a Base when it is created. Instants are measured from it
// with time.Time.Sub, so two instants that both carry a monotonic clock
// reading (anything from time.Now) are compared on the monotonic clock, and
// instants built by hand (time.Unix, time.Date) are compared on the wall
// clock, exactly as time.Time.Sub does. Offsets saturate at the int64 range
// instead of overflowing.
package clock

import (
	"context"
	"fmt"
	"time"

	"github.com/slidelimit/slidelimit"
)

// Base is the instant a limiter measures time from. The zero Base is not
// valid; use NewBase.
type Base struct {
	t time.Time
}

// NewBase returns a Base at the current instant, with a monotonic reading.
func NewBase() Base { return Base{t: time.Now()} }

// Offset returns now - b in nanoseconds, saturated to the int64 range.
func (b Base) Offset(now time.Time) int64 { return int64(now.Sub(b.t)) }

// Now returns the current offset from b, read on the monotonic clock. It is
// cheaper than Offset(time.Now()) because it reads only the monotonic clock.
func (b Base) Now() int64 { return int64(time.Since(b.t)) }

// Time converts an offset back to an instant, on b's clock (for the
// limiter's own use; an answer to a caller goes through At).
func (b Base) Time(off int64) time.Time { return b.t.Add(time.Duration(off)) }

// exact bounds the offsets of instants At derives from the caller's own:
// within it, off and at are exact and their difference cannot overflow.
const exact = 1 << 62

// At converts the offset at back to an instant on the clock of now, the
// instant the caller asked at, whose own offset (Offset(now)) is off: now
// plus the difference, so that the answer has now's location and a
// monotonic reading only when now has one. A caller who passes instants
// built by hand (time.Date, time.Unix, parsed) gets such instants back,
// equal (==) to the instants it computes itself, whichever limiter answered;
// one who passes readings of time.Now gets readings it can compare on the
// monotonic clock. For a now too far from b for its offset to be exact, the
// instant is taken from b and put on now's clock (OnClockOf).
func (b Base) At(now time.Time, off, at int64) time.Time {
	if -exact <= off && off <= exact {
		return now.Add(time.Duration(at - off))
	}
	return b.far(now, at)
}

// far is At for a now whose offset is not exact: the rare path, kept out
// of At.
func (b Base) far(now time.Time, at int64) time.Time {
	return OnClockOf(now, b.t.Add(time.Duration(at)))
}

// OnClockOf returns the instant t on the clock of now: t itself when now has
// a monotonic reading (a reading of time.Now, as t is), and otherwise t in
// now's location without a monotonic reading.
func OnClockOf(now, t time.Time) time.Time {
	if now != now.Round(0) {
		return t // now has a monotonic reading
	}
	return t.In(now.Location()) // In drops t's monotonic reading
}

// Ready converts a limiter's ReadyAt answer, computed in offsets for the
// instant now (whose offset is off), back to an instant on now's clock (At):
// now itself, unchanged, when the answer is off (n fits now), the zero Time
// when ok is false.
func (b Base) Ready(now time.Time, off, at int64, ok bool) (time.Time, bool) {
	if !ok {
		return time.Time{}, false
	}
	if at != off {
		now = b.At(now, off, at)
	}
	return now, true
}

// ReadyFrom is Ready for an answer computed at the instant t, which may not
// be off (a limiter decides a stale or out-of-range instant at a later one):
// now itself when the answer is t.
func (b Base) ReadyFrom(now time.Time, off, t, at int64, ok bool) (time.Time, bool) {
	if !ok {
		return time.Time{}, false
	}
	if at != t {
		now = b.At(now, off, at)
	}
	return now, true
}

// Waiter is what Wait needs of a limiter.
type Waiter interface {
	AllowN(now time.Time, n int) bool
	ReadyAt(now time.Time, n int) (time.Time, bool)
}

// ErrNeverReady is wrapped by the error Wait returns when n can never be
// admitted (n < 0, n above the limit, or a window that stays full at the end
// of the range of instants the limiter can represent). It is the module's
// slidelimit.ErrNeverReady.
var ErrNeverReady = slidelimit.ErrNeverReady

// ErrDeadline is wrapped by the error Wait returns when the context's
// deadline falls before the instant n could be admitted. It is the module's
// slidelimit.ErrDeadline.
var ErrDeadline = slidelimit.ErrDeadline

// Bounds on a waiter's retries when ReadyAt says "now" but AllowN refuses.
const (
	immediateRetries = 3
	maxRetryWait     = time.Millisecond
)

// RetryDelay is how long a waiter sleeps before its retries-th retry in a
// row of a call that was refused although ready at its own instant (another
// caller took the room between the two answers): 0, retry at once, for the
// first few, then 1µs doubling up to a millisecond, so that such a loop can
// never spin. Wait and the Redis limiters' WaitN share it.
func RetryDelay(retries int) time.Duration {
	if retries <= immediateRetries {
		return 0
	}
	return min(time.Microsecond<<min(retries-immediateRetries-1, 20), maxRetryWait)
}

// Wait blocks until l admits n at the current time, ctx is done, or it is
// clear that ctx's deadline falls before l could admit n. pkg prefixes the
// returned errors ("ring", "window", ...). It returns nil on admission, the
// context's error when ctx is done first, and an error wrapping ErrNeverReady
// or ErrDeadline when waiting cannot succeed; in every error case nothing is
// admitted.
//
// Each round tries AllowN; when refused it asks ReadyAt when n would fit if
// nothing else were admitted, sleeps until then on a timer, and tries again:
// a concurrent caller may have taken the room, in which case it waits again.
// When ReadyAt says n fits now but AllowN still refuses, it retries at once a
// few times, then sleeps a little (at most a millisecond) between tries: it
// never spins. Under testing/synctest the timer and the clock are the bubble's fake ones.
func Wait(ctx context.Context, pkg string, l Waiter, n int) error {
	if n == 0 {
		return nil
	}
	var timer *time.Timer
	retries := 0 // consecutive rounds refused although ReadyAt said now
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := time.Now()
		if l.AllowN(now, n) {
			return nil
		}
		at, ok := l.ReadyAt(now, n)
		if !ok {
			return fmt.Errorf("%s: WaitN(n=%d): %w", pkg, n, ErrNeverReady)
		}
		// Compared as durations from now: at is read from the base on the
		// monotonic clock, and a deadline without a monotonic reading (made
		// from a wall-clock time) compared with it directly would be off by
		// any step of the wall clock since the base was taken.
		if dl, has := ctx.Deadline(); has && dl.Sub(now) < at.Sub(now) {
			return fmt.Errorf("%s: WaitN(n=%d) must wait until %v: %w", pkg, n, at.Sub(now), ErrDeadline)
		}
		d := at.Sub(now)
		if d <= 0 {
			// ReadyAt says now, but AllowN refused: another caller took
			// the room between the two calls. Try again at once, but
			// only a few times in a row: then back off on the timer
			// (1µs, doubling up to maxRetryWait), so that a limiter
			// whose answers disagree, or a burst of competitors, can
			// never make this loop spin.
			retries++
			if d = RetryDelay(retries); d == 0 {
				continue
			}
		} else {
			retries = 0
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
	}
}
