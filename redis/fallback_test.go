package redis_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// stopped returns a client of a real redis-server that has been stopped, so
// that every decision fails as it does when Redis is down (connection
// refused): these tests are about what the failure policy decides.
func stopped(t *testing.T) redis.Client {
	t.Helper()
	s := redistest.Start(t)
	_, c := connect(t, s)
	s.Stop()
	return c
}

// TestFallbackFull: during an outage, a new key that finds the fallback's
// store full (its keys busy) is refused with no instant to name, and told
// apart from "never": Err wraps keyed.ErrFull, WaitN fails with it (not
// ErrNeverReady, which means a cost above a limit), and the HTTP adapter
// answers Full (503), not Never. In a group, a key merely over its limit
// still names when it fits, beside a key new to a full store.
func TestFallbackFull(t *testing.T) {
	c := stopped(t)
	mk := func(prefix string, fbLimit, maxKeys int) *redis.Limiter {
		l, err := redis.NewLog(c, redis.Options{Prefix: prefix, Timeout: 200 * time.Millisecond, OnError: redis.FallBack,
			Fallback: []redis.Rule{{Limit: fbLimit, Window: time.Minute}}, FallbackMaxKeys: maxKeys},
			redis.Rule{Limit: 5, Window: time.Minute})
		require.NoError(t, err)
		return l
	}
	l := mk("full", 5, 1)
	d, err := l.AllowN(t.Context(), "busy", time.Time{}, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	d, err = l.AllowN(t.Context(), "newcomer", time.Time{}, 1)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	require.True(t, d.ReadyAt.IsZero())
	require.ErrorIs(t, d.Err, keyed.ErrFull)
	require.ErrorContains(t, d.Err, `redis: key "newcomer"`, "the Redis error is kept")

	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	err = l.WaitN(ctx, "newcomer", 1)
	require.ErrorIs(t, err, keyed.ErrFull)
	require.NotErrorIs(t, err, redis.ErrNeverReady)

	h, err := redis.NewHTTP(l, false)
	require.NoError(t, err)
	hd, err := h.Decide(t.Context(), "newcomer2", time.Now(), 1)
	require.NoError(t, err)
	require.Equal(t, httplimit.Full, hd.Reason)

	// Groups, in both orders: a's store is full (of "other"); b's key y is
	// at its limit, its key z fresh.
	a, b := mk("full-a", 1, 1), mk("full-b", 1, 10)
	now := time.Now()
	_, err = a.AllowN(t.Context(), "other", now, 1)
	require.NoError(t, err)
	d, err = b.AllowN(t.Context(), "{t}y", now, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	for _, order := range []string{"ab", "ba"} {
		g, err := redis.NewGroup(a, b)
		require.NoError(t, err)
		keys := func(bKey string) []string { return []string{"{t}x", bKey} }
		if order == "ba" {
			g, err = redis.NewGroup(b, a)
			require.NoError(t, err)
			keys = func(bKey string) []string { return []string{bKey, "{t}x"} }
		}
		// Refused by b's key: it names when that fits; a's new key is
		// no reason for never.
		for _, dry := range []bool{true, false} {
			f := g.AllowN
			if dry {
				f = g.CheckN
			}
			d, err = f(t.Context(), keys("{t}y"), now, 1)
			require.NoError(t, err)
			require.False(t, d.Allowed, "%s, dry %v", order, dry)
			require.WithinDuration(t, now.Add(time.Minute), d.ReadyAt, time.Microsecond, "%s, dry %v", order, dry)
		}
		// Refused only because a's store has no room for x: Full.
		d, err = g.AllowN(t.Context(), keys("{t}z-"+order), now, 1)
		require.NoError(t, err)
		require.False(t, d.Allowed, order)
		require.True(t, d.ReadyAt.IsZero(), order)
		require.ErrorIs(t, d.Err, keyed.ErrFull, order)
	}
}

// TestFallbackLimits: under FallBack a cost above a Redis rule's limit is
// refused whatever the fallback's limit (as under FailOpen), with no instant
// at which it fits; and Remaining never exceeds the Redis rule's limit, which
// is what the RateLimit fields announce.
func TestFallbackLimits(t *testing.T) {
	c := stopped(t)
	l, err := redis.NewLog(c, redis.Options{Prefix: "fb-limits", Timeout: 200 * time.Millisecond, OnError: redis.FallBack,
		Fallback: []redis.Rule{{Limit: 100, Window: time.Minute}}},
		redis.Rule{Limit: 5, Window: time.Minute})
	require.NoError(t, err)
	for _, dry := range []bool{false, true} {
		f := l.AllowN
		if dry {
			f = l.CheckN
		}
		d, err := f(t.Context(), "k", time.Time{}, 50)
		require.NoError(t, err)
		require.False(t, d.Allowed, "dry %v: n = 50 above a limit of 5", dry)
		require.True(t, d.ReadyAt.IsZero(), "dry %v", dry)
		require.Equal(t, redis.FromFallback, d.Source)
	}
	d, err := l.AllowN(t.Context(), "k", time.Time{}, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, []int{5}, d.Remaining, "the fallback's 99 left, bounded by the Redis rule's 5")
	h, err := redis.NewHTTP(l, false)
	require.NoError(t, err)
	hd, err := h.Decide(t.Context(), "k2", time.Now(), 1)
	require.NoError(t, err)
	require.LessOrEqual(t, hd.Quota[0].Remaining, 5)
}

// TestSweepFallback: after an outage, SweepFallback gives back the keys that
// carry no information and keeps the others, and no caller can tell: a
// limiter swept at random instants answers every call as a twin that is
// never swept (same stopped server, same calls, weighted, several keys).
// A limiter without a fallback sweeps nothing.
func TestSweepFallback(t *testing.T) {
	c := stopped(t)
	mk := func(prefix string) *redis.Limiter {
		l, err := redis.NewLog(c, redis.Options{Prefix: prefix, Timeout: 200 * time.Millisecond, OnError: redis.FallBack,
			Fallback: []redis.Rule{{Limit: 3, Window: time.Minute}, {Limit: 5, Window: 3 * time.Minute}}, FallbackMaxKeys: 100},
			redis.Rule{Limit: 10, Window: time.Minute})
		require.NoError(t, err)
		return l
	}
	swept, twin := mk("fb-swept"), mk("fb-twin")
	t0 := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	now := t0
	removed := 0
	for i := range 400 {
		now = now.Add(time.Duration(rng.IntN(20_000)) * time.Millisecond)
		key := fmt.Sprintf("k%d", rng.IntN(12))
		n := 1 + rng.IntN(2)
		a, err := swept.AllowN(t.Context(), key, now, n)
		require.NoError(t, err)
		b, err := twin.AllowN(t.Context(), key, now, n)
		require.NoError(t, err)
		require.Equal(t, redis.FromFallback, a.Source)
		require.Equal(t, b.Allowed, a.Allowed, "call %d: %s n=%d at %v", i, key, n, now.Sub(t0))
		require.Equal(t, b.ReadyAt, a.ReadyAt, "call %d", i)
		require.Equal(t, b.Remaining, a.Remaining, "call %d", i)
		if rng.IntN(10) == 0 {
			removed += swept.SweepFallback(now)
		}
	}
	require.Positive(t, removed, "the random gaps leave keys idle")
	// A long pause: every key is idle after the longest window.
	later := now.Add(3 * time.Minute)
	require.Equal(t, twin.FallbackLen(), twin.SweepFallback(later))
	require.Positive(t, swept.FallbackLen())
	require.Equal(t, swept.FallbackLen(), swept.SweepFallback(later))
	require.Zero(t, swept.FallbackLen())

	// A key busy in its longest window stays, and keeps its count.
	for range 3 {
		d, err := swept.AllowN(t.Context(), "busy", later, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	require.Zero(t, swept.SweepFallback(later.Add(2*time.Minute)), "its 3-minute rule still counts")
	d, err := swept.AllowN(t.Context(), "busy", later.Add(2*time.Minute), 3)
	require.NoError(t, err)
	require.False(t, d.Allowed, "3 more would make 6 in 3 minutes, above 5")

	plain, err := redis.NewLog(c, redis.Options{Prefix: "fb-none", Timeout: 200 * time.Millisecond, OnError: redis.FailOpen},
		redis.Rule{Limit: 10, Window: time.Minute})
	require.NoError(t, err)
	require.Zero(t, plain.SweepFallback(later))
	require.Zero(t, plain.FallbackLen())
}

// switchClient passes every call to a real Client until down is set, and
// then fails every script call as a server that is down would.
type switchClient struct {
	redis.Client
	down atomic.Bool
}

var errDown = errors.New("connection refused (test)")

func (c *switchClient) EvalSHA(ctx context.Context, sha string, keys []string, args []any) ([]int64, error) {
	if c.down.Load() {
		return nil, errDown
	}
	return c.Client.EvalSHA(ctx, sha, keys, args)
}

func (c *switchClient) Eval(ctx context.Context, src string, keys []string, args []any) ([]int64, error) {
	if c.down.Load() {
		return nil, errDown
	}
	return c.Client.Eval(ctx, src, keys, args)
}

// TestFallbackOnlyWhenRedisFails: decisions Redis answered leave the
// fallback untouched, alone or in a group: it holds no key (FallbackLen),
// and once Redis fails it decides from its own state, admitting its whole
// limit on a key Redis had just admitted calls for.
func TestFallbackOnlyWhenRedisFails(t *testing.T) {
	_, _, c := standalone(t)
	sc := &switchClient{Client: c}
	mk := func(prefix string) *redis.Limiter {
		l, err := redis.NewLog(sc, testOptions(redis.Options{Prefix: prefix, OnError: redis.FallBack,
			Fallback: []redis.Rule{{Limit: 2, Window: time.Minute}}}), redis.Rule{Limit: 5, Window: time.Minute})
		require.NoError(t, err)
		return l
	}
	l, l2 := mk("fb-only"), mk("fb-only2")
	g, err := redis.NewGroup(l, l2)
	require.NoError(t, err)
	t0 := at(epoch)
	for i := range 2 {
		d, err := l.AllowN(t.Context(), "{t}k", t0, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed, "call %d", i)
		require.Equal(t, redis.FromRedis, d.Source)
		d, err = g.AllowN(t.Context(), []string{"{t}k", "{t}j"}, t0, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed, "group call %d", i)
		require.Equal(t, redis.FromRedis, d.Source)
	}
	require.Zero(t, l.FallbackLen(), "Redis answered every call")
	require.Zero(t, l2.FallbackLen(), "Redis answered every call")

	sc.down.Store(true)
	for i, want := range []bool{true, true, false} {
		d, err := l.AllowN(t.Context(), "{t}k", t0, 1)
		require.NoError(t, err)
		require.Equal(t, redis.FromFallback, d.Source)
		require.ErrorIs(t, d.Err, errDown)
		require.Equal(t, want, d.Allowed, "fallback call %d (its limit 2, from its own state)", i)
	}
	for i, want := range []bool{true, true, false} {
		d, err := l2.AllowN(t.Context(), "{t}j", t0, 1)
		require.NoError(t, err)
		require.Equal(t, want, d.Allowed, "second limiter's fallback call %d", i)
	}
}

// TestCostAboveSmallestLimit: with several Redis rules, a cost above the
// smallest limit never fits, even though it fits the others: while every
// call to Redis fails it is refused under FailOpen and under FallBack (whose
// own limit is larger), with no instant at which it fits, alone, as a check
// and in a group; a cost at the smallest limit is admitted.
func TestCostAboveSmallestLimit(t *testing.T) {
	c := &switchClient{}
	c.down.Store(true)
	rules := []redis.Rule{{Limit: 10, Window: time.Hour}, {Limit: 3, Window: time.Minute}}
	for _, p := range []redis.Policy{redis.FailOpen, redis.FallBack} {
		mk := func(prefix string) *redis.Limiter {
			l, err := redis.NewLog(c, redis.Options{Prefix: prefix, OnError: p,
				Fallback: []redis.Rule{{Limit: 100, Window: time.Minute}}}, rules...)
			require.NoError(t, err)
			return l
		}
		l := mk(fmt.Sprintf("above-%d", p))
		g, err := redis.NewGroup(l, mk(fmt.Sprintf("above2-%d", p)))
		require.NoError(t, err)
		now := at(epoch)
		calls := map[string]func(n int) (redis.Decision, error){
			"AllowN": func(n int) (redis.Decision, error) { return l.AllowN(t.Context(), "k", now, n) },
			"CheckN": func(n int) (redis.Decision, error) { return l.CheckN(t.Context(), "k", now, n) },
			"group": func(n int) (redis.Decision, error) {
				return g.AllowN(t.Context(), []string{"{g}a", "{g}b"}, now, n)
			},
		}
		for name, f := range calls {
			d, err := f(5)
			require.NoError(t, err)
			require.NotEqual(t, redis.FromRedis, d.Source)
			require.False(t, d.Allowed, "policy %d, %s: n = 5 above the limit 3", p, name)
			require.True(t, d.ReadyAt.IsZero(), "policy %d, %s: never fits", p, name)
			d, err = f(3)
			require.NoError(t, err)
			require.True(t, d.Allowed, "policy %d, %s: n = 3 at the limit 3", p, name)
		}
		_, ok, err := l.ReadyAt(t.Context(), "k2", now, 5)
		require.NoError(t, err)
		require.False(t, ok, "policy %d: ReadyAt of n = 5 above the limit 3", p)
	}
}
