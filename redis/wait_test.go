package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// deadlineCtx reports a deadline on the simulated clock without ever being
// done in real time (the simulated instants lie in the real future).
type deadlineCtx struct {
	context.Context
	dl time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.dl, true }

// TestWaitN: on a real server with caller-given instants (a simulated clock
// that each sleep advances), WaitN waits exactly until the refusal's ReadyAt
// and then is admitted; a deadline before ReadyAt is an error wrapping
// ErrDeadline, at once, admitting nothing; n above a limit or negative wraps
// ErrNeverReady; the log, the window and a group all follow it.
func TestWaitN(t *testing.T) {
	s, _, c := standalone(t)
	dbsize := func() string {
		out, err := redistest.Do(s.Addr(), "DBSIZE")
		require.NoError(t, err)
		return out
	}
	rules := []redis.Rule{{Limit: 2, Window: 100 * time.Millisecond}, {Limit: 3, Window: time.Second}}
	for _, kind := range []string{"log", "window"} {
		t.Run(kind, func(t *testing.T) {
			var l *redis.Limiter
			if kind == "log" {
				l = mustLog(t, c, redis.Options{Prefix: "wait"}, rules...)
			} else {
				l = mustWindow(t, c, redis.Options{Prefix: "wait"}, rules...)
			}
			// Simulated instants an hour ahead of the real clock, so that
			// a deadline on them is in the future for go-redis's socket.
			t0 := time.Now().Add(time.Hour).Truncate(time.Second).Add(50 * time.Millisecond)
			clk := &redis.SimClock{Now: t0}
			for range 2 {
				require.NoError(t, redis.WaitNSim(t.Context(), l, "k", 1, clk))
			}
			require.Empty(t, clk.Slept, "two calls fit at once")

			// The third waits until the refusal's ReadyAt, then fits.
			d, err := l.CheckN(t.Context(), "k", t0, 1)
			require.NoError(t, err)
			require.False(t, d.Allowed)
			want := d.ReadyAt.Sub(t0)
			require.Positive(t, want)
			require.NoError(t, redis.WaitNSim(t.Context(), l, "k", 1, clk))
			require.Equal(t, []time.Duration{want}, clk.Slept)
			require.Equal(t, t0.Add(want), clk.Now)

			// A deadline before the next ReadyAt: ErrDeadline at once,
			// nothing admitted.
			d, err = l.CheckN(t.Context(), "k", clk.Now, 1)
			require.NoError(t, err)
			require.False(t, d.Allowed)
			next := d.ReadyAt.Sub(clk.Now)
			before := d.Remaining
			clk.Slept = nil
			ctx := deadlineCtx{t.Context(), clk.Now.Add(next - time.Microsecond)}
			err = redis.WaitNSim(ctx, l, "k", 1, clk)
			require.ErrorIs(t, err, redis.ErrDeadline)
			require.ErrorIs(t, err, slidelimit.ErrDeadline)
			require.Empty(t, clk.Slept, "waited although the deadline was too early")
			d, err = l.CheckN(t.Context(), "k", clk.Now, 0)
			require.NoError(t, err)
			require.Equal(t, before, d.Remaining, "a WaitN that gave up admitted something")
			// A deadline exactly at ReadyAt is enough.
			ctx = deadlineCtx{t.Context(), clk.Now.Add(next)}
			require.NoError(t, redis.WaitNSim(ctx, l, "k", 1, clk))
			require.Equal(t, []time.Duration{next}, clk.Slept)

			// Never: n above a limit, and n < 0.
			keys := dbsize()
			for _, n := range []int{3, -1} {
				err = redis.WaitNSim(t.Context(), l, "other", n, clk)
				require.ErrorIs(t, err, redis.ErrNeverReady, "n %d", n)
				require.ErrorIs(t, err, slidelimit.ErrNeverReady, "n %d", n)
			}
			require.Equal(t, keys, dbsize(), "a WaitN that can never succeed wrote something")

			// A bad key is AllowN's error; a done context its error.
			require.ErrorContains(t, redis.WaitNSim(t.Context(), l, "", 1, clk), "redis: key must not be empty")
			done, cancel := context.WithCancel(t.Context())
			cancel()
			require.ErrorIs(t, redis.WaitNSim(done, l, "k", 1, clk), context.Canceled)
		})
	}

	t.Run("group", func(t *testing.T) {
		u := mustLog(t, c, redis.Options{Prefix: "wu"}, redis.Rule{Limit: 1, Window: 10 * time.Millisecond})
		gl := mustLog(t, c, redis.Options{Prefix: "wg"}, redis.Rule{Limit: 2, Window: 50 * time.Millisecond})
		g, err := redis.NewGroup(u, gl)
		require.NoError(t, err)
		clk := &redis.SimClock{Now: time.Now().Add(time.Hour).Truncate(time.Second)}
		keys := func(user string) []string { return []string{"{w}" + user, "{w}all"} }
		require.NoError(t, redis.GroupWaitNSim(t.Context(), g, keys("a"), 1, clk))
		require.NoError(t, redis.GroupWaitNSim(t.Context(), g, keys("b"), 1, clk))
		require.Empty(t, clk.Slept)
		// The global key is full until 50 ms, although user c is free.
		require.NoError(t, redis.GroupWaitNSim(t.Context(), g, keys("c"), 1, clk))
		require.Equal(t, []time.Duration{50 * time.Millisecond}, clk.Slept)
		err = redis.GroupWaitNSim(t.Context(), g, keys("d"), 2, clk)
		require.ErrorIs(t, err, redis.ErrNeverReady, "2 is above the user's limit")
	})
}

// TestWaitNServerTime: on the server's clock, WaitN admits a call that must
// wait for a window to pass, and gives up at once with ErrDeadline when the
// context's deadline is shorter than the wait.
func TestWaitNServerTime(t *testing.T) {
	_, _, c := standalone(t)
	l := mustLog(t, c, redis.Options{Prefix: "waitsrv"}, redis.Rule{Limit: 1, Window: 30 * time.Millisecond})
	require.NoError(t, l.Wait(t.Context(), "k"))
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	err := l.WaitN(ctx, "k", 1)
	if !errors.Is(err, context.DeadlineExceeded) { // a loaded machine may reach the deadline first
		require.ErrorIs(t, err, redis.ErrDeadline)
	}
	require.NoError(t, l.WaitN(t.Context(), "k", 1), "the second unit after the window passed")
}

// TestWaitNZeroCost: WaitN of cost 0 returns nil at once, for a key at its
// limit and for a group, and records nothing.
func TestWaitNZeroCost(t *testing.T) {
	_, _, c := standalone(t)
	l := mustLog(t, c, redis.Options{Prefix: "wait0"}, redis.Rule{Limit: 1, Window: time.Hour})
	l2 := mustLog(t, c, redis.Options{Prefix: "wait0b"}, redis.Rule{Limit: 1, Window: time.Hour})
	g, err := redis.NewGroup(l, l2)
	require.NoError(t, err)
	require.NoError(t, l.Wait(t.Context(), "{t}k"))
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	require.NoError(t, l.WaitN(ctx, "{t}k", 0), "n = 0 on a key at its limit")
	require.NoError(t, g.WaitN(ctx, []string{"{t}k", "{t}j"}, 0), "n = 0 on a group with a key at its limit")
	d, err := l2.AllowN(t.Context(), "{t}j", time.Time{}, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed, "the group's wait of 0 recorded nothing")
}
