package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/keyed"
)

// ErrNeverReady is wrapped by the error WaitN returns, at once and having
// admitted nothing, when n can never be admitted: n is negative or above a
// limit. It is the module's [slidelimit.ErrNeverReady], so errors.Is matches
// either.
var ErrNeverReady = slidelimit.ErrNeverReady

// ErrDeadline is wrapped by the error WaitN returns, without waiting and
// having admitted nothing, when the context's deadline falls before the
// instant n could be admitted. It is the module's [slidelimit.ErrDeadline].
var ErrDeadline = slidelimit.ErrDeadline

// Wait is shorthand for WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) error { return l.WaitN(ctx, key, 1) }

// WaitN blocks until n units of cost for key are admitted on the Redis
// server's clock, ctx is done, or it is clear that ctx's deadline falls
// before n could be admitted. It returns nil on admission, the context's
// error when ctx is done first, an error wrapping ErrNeverReady (n < 0, or n
// above a limit) or ErrDeadline, at once, when waiting cannot succeed, an
// error wrapping keyed.ErrFull when under FallBack the fallback had no room
// for the key, and a decision's error (a bad key; Redis failing under
// FailClosed) as AllowN returns it. WaitN admitted nothing when it returns an
// error, with the exception AllowN has: a decision whose reply was lost or
// came after the timeout may have been applied by the server all the same
// (docs/redis.md, "Failure policy and what it costs"). Group.WaitN has a
// second: under FallBack, a group refused because a key found its fallback
// full may have recorded the keys before it in their fallbacks.
//
// As for AllowN, a round cut short by ctx's deadline (rather than by a
// cancellation) is a Redis failure, answered by the policy: under FailOpen
// it admits and under FallBack the fallback decides, so WaitN can return nil
// just after ctx's deadline. A caller that must not be admitted past its
// deadline gives the limiter a Timeout shorter than the time it can wait.
//
// Each round is one AllowN at the server's clock: when refused, WaitN sleeps
// until the decision's ReadyAt (measured on the server's clock, from the
// decision's At) and decides again; another caller may have taken the room
// meanwhile, and then it waits again. Under FailOpen a failed decision
// admits; under FallBack the fallback decides, and its ReadyAt is waited
// for. n == 0 is one decision that admits and records nothing.
func (l *Limiter) WaitN(ctx context.Context, key string, n int) error {
	return waitN(ctx, n, realClock, func(ctx context.Context, now time.Time) (Decision, error) {
		return l.AllowN(ctx, key, now, n)
	})
}

// WaitN blocks until n units of cost are admitted for every key at once, as
// Limiter.WaitN does for one key: each round is one Group.AllowN at the
// server's clock, and a refusal's ReadyAt is when every key fits.
func (g *Group) WaitN(ctx context.Context, keys []string, n int) error {
	return waitN(ctx, n, realClock, func(ctx context.Context, now time.Time) (Decision, error) {
		return g.AllowN(ctx, keys, now, n)
	})
}

// waitClock is the time WaitN runs on: now is the instant a decision is
// asked for (the zero Time: the server's clock), sleep waits d or until ctx
// is done, and until is how long is left before a deadline. Tests replace it
// with a simulated clock on caller-given instants.
type waitClock struct {
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	until func(deadline time.Time) time.Duration
}

var realClock = waitClock{
	now: func() time.Time { return time.Time{} },
	sleep: func(ctx context.Context, d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		}
	},
	until: time.Until,
}

func waitN(ctx context.Context, n int, clk waitClock, decide func(context.Context, time.Time) (Decision, error)) error {
	if n < 0 {
		return fmt.Errorf("redis: WaitN(n=%d): %w", n, ErrNeverReady)
	}
	retries := 0 // consecutive refusals whose ReadyAt was their own instant
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, err := decide(ctx, clk.now())
		if err != nil {
			return err
		}
		if d.Allowed {
			return nil
		}
		if d.ReadyAt.IsZero() {
			if errors.Is(d.Err, keyed.ErrFull) {
				// The fallback's store has no room for the key: not
				// "never", but nothing to wait for either.
				return fmt.Errorf("redis: WaitN(n=%d): %w", n, d.Err)
			}
			return fmt.Errorf("redis: WaitN(n=%d): %w", n, ErrNeverReady)
		}
		wait := d.ReadyAt.Sub(d.At)
		if dl, ok := ctx.Deadline(); ok && clk.until(dl) < wait {
			return fmt.Errorf("redis: WaitN(n=%d) must wait %v: %w", n, wait, ErrDeadline)
		}
		if wait <= 0 {
			// Refused, yet ready at its own instant (a fallback
			// decision whose room another caller took between its
			// check and its record). Retry at once a few times, then
			// back off, as the in-process limiters do: never spin.
			retries++
			if wait = clock.RetryDelay(retries); wait == 0 {
				continue
			}
		} else {
			retries = 0
		}
		if err := clk.sleep(ctx, wait); err != nil {
			return err
		}
	}
}
