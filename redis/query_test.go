package redis_test

import (
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
)

// TestQueries: TokensAt and ReadyAt answer what AllowN would do, record
// nothing, follow the edges of AllowN (n == 0 fits now, n above a limit never
// fits, n < 0 is an error), answer on the server's clock for the zero
// instant, and follow the failure policy when Redis does not answer. The
// shared suite checks them against the contract (conformance_test.go).
func TestQueries(t *testing.T) {
	_, _, c := standalone(t)
	rules := []redis.Rule{{Limit: 2, Window: time.Second}, {Limit: 3, Window: time.Minute}}
	l := mustLog(t, c, redis.Options{Prefix: "queries"}, rules...)
	ctx := t.Context()
	t0 := at(epoch)

	tokens := func(now time.Time) int {
		t.Helper()
		n, err := l.TokensAt(ctx, "k", now)
		require.NoError(t, err)
		return n
	}
	ready := func(now time.Time, n int) (time.Time, bool) {
		t.Helper()
		at, ok, err := l.ReadyAt(ctx, "k", now, n)
		require.NoError(t, err)
		return at, ok
	}
	require.Equal(t, 2, tokens(t0))
	for range 2 {
		d, err := l.AllowN(ctx, "k", t0, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	require.Equal(t, 0, tokens(t0))
	for range 3 { // asking again changes nothing
		r, ok := ready(t0, 1)
		require.True(t, ok)
		require.True(t, r.Equal(t0.Add(time.Second)), "ready at %v", r.Sub(t0))
	}
	r, ok := ready(t0, 0)
	require.True(t, ok)
	require.True(t, r.Equal(t0))
	_, ok = ready(t0, 3) // above the first rule's limit
	require.False(t, ok)
	_, _, err := l.ReadyAt(ctx, "k", t0, -1)
	require.Error(t, err)
	// A second later the first rule has room again, the second has one unit.
	t1 := t0.Add(time.Second)
	require.Equal(t, 1, tokens(t1))
	r, ok = ready(t1, 1)
	require.True(t, ok)
	require.True(t, r.Equal(t1))
	r, ok = ready(t1, 2) // the minute rule holds two of its three
	require.True(t, ok)
	require.True(t, r.Equal(t0.Add(time.Minute)), "ready at %v", r.Sub(t0))
	d, err := l.AllowN(ctx, "k", t1, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed, "the queries recorded nothing")
	require.Equal(t, []int{1, 0}, d.Remaining)

	// The zero instant is the server's clock: a fresh key fits at the
	// instant the server checked it, which lies between the calls.
	before := time.Now().Add(-time.Second) // the server and this process share a clock, to within rounding
	r, ok, err = l.ReadyAt(ctx, "fresh", time.Time{}, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, r.Before(before), "server instant %v", r)
	require.False(t, r.After(time.Now().Add(time.Second)), "server instant %v", r)
	n, err := l.TokensAt(ctx, "fresh", time.Time{})
	require.NoError(t, err)
	require.Equal(t, 2, n)
}

// TestQueriesFailure: with no server answering, TokensAt and ReadyAt follow
// the policy as CheckN does: FailClosed returns the error, FailOpen answers
// that everything fits (the smallest limit, now), FallBack answers from the
// in-process fallback, whose admissions they see and do not make.
func TestQueriesFailure(t *testing.T) {
	gc := goredis.NewClient(&goredis.Options{Addr: unreachableAddr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = gc.Close() })
	c, err := redis.NewGoRedis(gc)
	require.NoError(t, err)
	rules := []redis.Rule{{Limit: 5, Window: time.Second}, {Limit: 3, Window: time.Minute}}
	ctx := t.Context()
	t0 := at(epoch)
	opts := func(p redis.Policy) redis.Options {
		o := redis.Options{Prefix: "qfail", Timeout: 50 * time.Millisecond, OnError: p}
		if p == redis.FallBack {
			o.Fallback = []redis.Rule{{Limit: 2, Window: time.Second}}
		}
		return o
	}

	closed := mustLog(t, c, opts(redis.FailClosed), rules...)
	_, err = closed.TokensAt(ctx, "k", t0)
	require.Error(t, err)
	_, _, err = closed.ReadyAt(ctx, "k", t0, 1)
	require.Error(t, err)

	open := mustLog(t, c, opts(redis.FailOpen), rules...)
	n, err := open.TokensAt(ctx, "k", t0)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	r, ok, err := open.ReadyAt(ctx, "k", t0, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, r.Equal(t0))

	fb := mustLog(t, c, opts(redis.FallBack), rules...)
	n, err = fb.TokensAt(ctx, "k", t0)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for range 2 {
		d, err := fb.AllowN(ctx, "k", t0, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		require.Equal(t, redis.FromFallback, d.Source)
	}
	n, err = fb.TokensAt(ctx, "k", t0)
	require.NoError(t, err)
	require.Equal(t, 0, n)
	r, ok, err = fb.ReadyAt(ctx, "k", t0, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, r.Equal(t0.Add(time.Second)), "ready at %v", r.Sub(t0))
}

// TestGroupQueries: a Group's TokensAt and ReadyAt answer for every key at
// once what its AllowN would do, record nothing, and take its edges (a wrong
// number of keys is an error that sends nothing; n above a limit never
// fits). Under FailOpen, with no server, everything fits: the group's
// smallest limit, now.
func TestGroupQueries(t *testing.T) {
	_, _, c := standalone(t)
	user := mustLog(t, c, redis.Options{Prefix: "gq-user"}, redis.Rule{Limit: 2, Window: time.Second})
	ip := mustLog(t, c, redis.Options{Prefix: "gq-ip"}, redis.Rule{Limit: 3, Window: time.Minute})
	g, err := redis.NewGroup(user, ip)
	require.NoError(t, err)
	ctx := t.Context()
	t0 := at(epoch)
	keys := []string{"{client}alice", "{client}10.0.0.1"}
	tokens := func(now time.Time) int {
		t.Helper()
		n, err := g.TokensAt(ctx, keys, now)
		require.NoError(t, err)
		return n
	}
	require.Equal(t, 2, tokens(t0))
	for range 2 {
		d, err := g.AllowN(ctx, keys, t0, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	require.Equal(t, 0, tokens(t0))
	for range 2 { // asking again changes nothing
		r, ok, err := g.ReadyAt(ctx, keys, t0, 1)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, r.Equal(t0.Add(time.Second)), "ready at %v", r.Sub(t0))
	}
	// A second later the user has room again; the address holds two of its
	// three, so two units wait for the minute.
	t1 := t0.Add(time.Second)
	require.Equal(t, 1, tokens(t1))
	r, ok, err := g.ReadyAt(ctx, keys, t1, 2)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, r.Equal(t0.Add(time.Minute)), "ready at %v", r.Sub(t0))
	_, ok, err = g.ReadyAt(ctx, keys, t1, 3) // above the user's limit
	require.NoError(t, err)
	require.False(t, ok)
	d, err := g.AllowN(ctx, keys, t1, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed, "the queries recorded nothing")
	require.Equal(t, []int{1, 0}, d.Remaining)

	_, err = g.TokensAt(ctx, keys[:1], t1)
	require.Error(t, err)
	_, _, err = g.ReadyAt(ctx, keys[:1], t1, 1)
	require.Error(t, err)

	gc := goredis.NewClient(&goredis.Options{Addr: unreachableAddr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = gc.Close() })
	down, err := redis.NewGoRedis(gc)
	require.NoError(t, err)
	o := redis.Options{Prefix: "gq-open", Timeout: 50 * time.Millisecond, OnError: redis.FailOpen}
	open, err := redis.NewGroup(mustLog(t, down, o, redis.Rule{Limit: 5, Window: time.Second}), mustLog(t, down, o, redis.Rule{Limit: 4, Window: time.Second}))
	require.NoError(t, err)
	n, err := open.TokensAt(ctx, keys, t0)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	r, ok, err = open.ReadyAt(ctx, keys, t0, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, r.Equal(t0))
}

// TestReadyAtNowItself: when the cost fits, ReadyAt answers the caller's
// instant itself, nanoseconds included, not the whole microsecond Redis
// decided at (for a key and for a group); a refusal's instant is Redis's.
func TestReadyAtNowItself(t *testing.T) {
	_, _, c := standalone(t)
	l := mustLog(t, c, redis.Options{Prefix: "ready-now"}, redis.Rule{Limit: 1, Window: time.Second})
	l2 := mustLog(t, c, redis.Options{Prefix: "ready-now2"}, redis.Rule{Limit: 2, Window: time.Second})
	g, err := redis.NewGroup(l, l2)
	require.NoError(t, err)
	now := at(epoch).Add(1500 * time.Nanosecond)
	r, ok, err := l.ReadyAt(t.Context(), "k", now, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, r.Equal(now), "ReadyAt %v, want now %v", r, now)
	r, ok, err = g.ReadyAt(t.Context(), []string{"{t}a", "{t}b"}, now, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, r.Equal(now), "group ReadyAt %v, want now %v", r, now)

	d, err := l.AllowN(t.Context(), "k", now, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	r, ok, err = l.ReadyAt(t.Context(), "k", now, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, r.Equal(at(epoch+1).Add(time.Second)), "refused: ready one window after the admission at %v, got %v", d.At, r)
}
