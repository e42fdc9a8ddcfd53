package conformance

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/internal/clock"
)

// wait checks WaitN in a testing/synctest bubble, where the clock is fake
// and advances only when every goroutine of the bubble is blocked.
func (s *suite) wait(t *testing.T) {
	if s.NoWait != "" {
		t.Skip(s.NoWait)
	}
	const limit = 4
	const w = time.Second
	synctest.Test(t, func(t *testing.T) {
		l := s.newLimiter(t, limit, w)
		start := time.Now()

		// A context that is already done: its error, nothing admitted,
		// even though n fits.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, l.WaitN(done, 1), context.Canceled, "WaitN(done ctx, 1)")
		assert.Equal(t, limit, l.TokensAt(start), "TokensAt(now) after WaitN(done ctx, 1): nothing may be admitted")

		// n out of range and n == 0: at once.
		for _, n := range []int{-1, limit + 1} {
			err := l.WaitN(context.Background(), n)
			assert.ErrorIsf(t, err, clock.ErrNeverReady, "WaitN(ctx, %d)", n)
		}
		assert.NoError(t, l.WaitN(context.Background(), 0), "WaitN(ctx, 0)")

		// Room now: admitted without waiting.
		require.NoError(t, l.WaitN(context.Background(), limit), "WaitN(ctx, limit) on a new limiter")
		require.Equal(t, time.Duration(0), time.Since(start), "WaitN(ctx, limit) on a new limiter waited")

		// A deadline before ReadyAt: ErrDeadline at once, nothing admitted.
		ready, ok := l.ReadyAt(start, 1)
		require.True(t, ok, "ReadyAt(now, 1) on a full limiter: ok")
		require.True(t, ready.After(start), "ReadyAt(now, 1) on a full limiter = now + %v: want after now", ready.Sub(start))
		dl, cancelDL := context.WithDeadline(context.Background(), start.Add(ready.Sub(start)-1))
		err := l.WaitN(dl, 1)
		cancelDL()
		assert.ErrorIs(t, err, clock.ErrDeadline, "WaitN(ctx with deadline ReadyAt-1ns, 1)")
		if err != nil {
			assert.Regexp(t, "^"+s.Pkg+": ", err.Error(), "WaitN error prefix")
		}
		assert.Equal(t, time.Duration(0), time.Since(start), "WaitN with a deadline before ReadyAt must fail without waiting")
		assert.Equal(t, 0, l.TokensAt(start), "TokensAt(now) after a failed WaitN")

		// The context ends first: its error, after exactly that long.
		ctx, cancelCtx := context.WithCancel(context.Background())
		wake := ready.Sub(start) / 4
		time.AfterFunc(wake, cancelCtx)
		assert.ErrorIs(t, l.WaitN(ctx, 1), context.Canceled, "WaitN(ctx canceled after ReadyAt/4, 1)")
		assert.Equal(t, wake, time.Since(start), "WaitN(ctx canceled after ReadyAt/4, 1) returned at the wrong instant")

		// A wait that succeeds ends exactly at ReadyAt.
		require.NoError(t, l.WaitN(context.Background(), 1), "WaitN(ctx, 1) on a full limiter")
		assert.Equal(t, ready.Sub(start), time.Since(start), "WaitN(ctx, 1) must return at ReadyAt(start, 1)")
		assert.Equal(t, time.Duration(0), time.Until(ready), "WaitN(ctx, 1) must return at ReadyAt(start, 1)")

		// Wait is WaitN(ctx, 1).
		if wl, ok := l.(interface{ Wait(context.Context) error }); ok {
			now := time.Now()
			next, ok := l.ReadyAt(now, 1)
			require.True(t, ok, "ReadyAt(now, 1)")
			require.NoError(t, wl.Wait(context.Background()), "Wait(ctx)")
			assert.Equal(t, next.Sub(now), time.Since(now), "Wait(ctx) must return at ReadyAt(now, 1)")
		}
	})
}
