package redis_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// load runs g goroutines of calls calls each on one key at the server's clock
// (or, when Redis fails, whatever the policy decides) and returns every
// decision. mid, if set, runs once after half the calls.
func load(t *testing.T, l *redis.Limiter, key string, g, calls int, mid func()) []redis.Decision {
	t.Helper()
	var mu sync.Mutex
	var out []redis.Decision
	var done atomic.Int64
	var once sync.Once
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for range calls {
				d, err := l.AllowN(t.Context(), key, time.Time{}, 1)
				if err != nil && d.Source != redis.FromError {
					t.Errorf("error %v with a decision from %v", err, d.Source)
				}
				mu.Lock()
				out = append(out, d)
				mu.Unlock()
				if done.Add(1) == int64(g*calls/2) && mid != nil {
					once.Do(mid)
				}
			}
		})
	}
	wg.Wait()
	return out
}

// split returns the admitted stamps by source.
func split(ds []redis.Decision) map[redis.Source][]oracle.Stamp {
	m := map[redis.Source][]oracle.Stamp{}
	for _, d := range ds {
		if d.Source == redis.FromError {
			m[redis.FromError] = append(m[redis.FromError], oracle.Stamp{})
			continue
		}
		if d.Allowed {
			m[d.Source] = append(m[d.Source], oracle.Stamp{At: d.At.UnixMicro(), Cost: 1})
		}
	}
	return m
}

// TestOutsideKillRestart: the server is killed in the middle of a load on one
// key and restarted empty. Under each policy: no decision panics or hangs;
// while it is down, fail closed admits nothing, fail open admits every call,
// and the fallback admits at most its own limit per window; the admissions
// Redis made never exceed the limit in any window; after the restart every
// call is decided by Redis again (the script is sent anew after NOSCRIPT).
func TestOutsideKillRestart(t *testing.T) {
	s, _, c := standalone(t)
	fbRule := redis.Rule{Limit: 5, Window: 50 * time.Millisecond}
	for _, kind := range []string{"log", "buckets"} {
		t.Run(kind, func(t *testing.T) { killRestart(t, s, c, kind, fbRule) })
	}
}

// killRestart is TestOutsideKillRestart for one kind of limiter: the exact
// log (its Redis admissions at most the limit in any window) or the
// sub-window counters (at most the limit plus one sub-window's admissions).
func killRestart(t *testing.T, s *redistest.Server, c redis.Client, kind string, fbRule redis.Rule) {
	rule := redis.Rule{Limit: 20, Window: 50 * time.Millisecond}
	newf := redis.NewLog
	if kind == "buckets" {
		rule.Precision = 10 * time.Millisecond
		newf = redis.NewBuckets
	}
	bound := func(st []oracle.Stamp) (got, bound int64) {
		if kind == "buckets" {
			return bucketBound(st, rule)
		}
		return oracle.MaxInWindow(st, rule.Window.Microseconds()), int64(rule.Limit)
	}
	for _, p := range []redis.Policy{redis.FailClosed, redis.FailOpen, redis.FallBack} {
		o := redis.Options{Timeout: 200 * time.Millisecond, OnError: p, Fallback: []redis.Rule{fbRule}, Prefix: fmt.Sprintf("kill%d", p)}
		l, err := newf(c, testOptions(o), rule)
		require.NoError(t, err)
		during := load(t, l, "k", 8, 40, s.Stop)
		bySrc := split(during)
		t.Logf("%s, policy %d: %d decisions, sources %v", kind, p, len(during), counts(bySrc))
		got, most := bound(bySrc[redis.FromRedis])
		require.LessOrEqual(t, got, most, "policy %d", p)
		switch p {
		case redis.FailClosed:
			require.NotEmpty(t, bySrc[redis.FromError], "the server was down for half the calls")
		case redis.FailOpen:
			require.NotEmpty(t, bySrc[redis.FromFailOpen])
		case redis.FallBack:
			require.NotEmpty(t, bySrc[redis.FromFallback])
			require.LessOrEqual(t, oracle.MaxInWindow(bySrc[redis.FromFallback], fbRule.Window.Microseconds()), int64(fbRule.Limit))
		}
		s.Restart()
		// After a run of dial failures go-redis's pool stops dialling
		// new connections and probes the server once a second, so
		// recovery is eventual: load again until a whole load is decided
		// by Redis. Every Redis admission since the restart counts.
		var after []redis.Decision
		restarted := time.Now()
		require.Eventually(t, func() bool {
			ds := load(t, l, "k", 8, 20, nil)
			after = append(after, ds...)
			for _, d := range ds {
				if d.Source != redis.FromRedis {
					return false
				}
			}
			return true
		}, 10*time.Second, 10*time.Millisecond, "policy %d: Redis never decided a whole load again after the restart", p)
		t.Logf("%s, policy %d: Redis decided a whole load again %v after the restart", kind, p, time.Since(restarted).Round(time.Millisecond))
		bySrc = split(after)
		require.NotEmpty(t, bySrc[redis.FromRedis])
		got, most = bound(bySrc[redis.FromRedis])
		require.LessOrEqual(t, got, most, "policy %d after the restart", p)
	}
}

func keys(m map[redis.Source][]oracle.Stamp) []redis.Source {
	var k []redis.Source
	for s := range m {
		k = append(k, s)
	}
	return k
}

// TestOutsideScriptFlush: SCRIPT FLUSH in the middle of a load costs no
// error and no admission beyond the limit: EVALSHA's NOSCRIPT makes the
// limiter send the source, which did not run the first time.
func TestOutsideScriptFlush(t *testing.T) {
	s, _, c := standalone(t)
	scriptFlushLoad(t, s, c, "flush")
}

// scriptFlushLoad is TestOutsideScriptFlush's load and check, for the exact
// log and the window on client c of server s, their keys under prefix.
func scriptFlushLoad(t *testing.T, s *redistest.Server, c redis.Client, prefix string) {
	rule := redis.Rule{Limit: 25, Window: 40 * time.Millisecond}
	for _, exact := range []bool{true, false} {
		mk := mustWindow
		if exact {
			mk = mustLog
		}
		l := mk(t, c, redis.Options{Prefix: prefix, Timeout: time.Second}, rule)
		flush := func() {
			for range 3 {
				_, err := redistest.Do(s.Addr(), "SCRIPT", "FLUSH")
				require.NoError(t, err)
			}
		}
		bySrc := split(load(t, l, "flush", 8, 60, flush))
		require.Len(t, bySrc, 1, "every call decided by Redis: %v", keys(bySrc))
		require.LessOrEqual(t, oracle.MaxInWindow(bySrc[redis.FromRedis], rule.Window.Microseconds()), loadBound(rule, exact))
	}
}

// TestTimeout: a server that stops answering (CLIENT PAUSE) makes each
// decision end at its timeout under every policy, with the policy's answer;
// what the server applied afterwards never exceeds the limit; and no
// goroutine is left behind once the client is closed.
func TestTimeout(t *testing.T) {
	s := redistest.Start(t)
	base := runtime.NumGoroutine()
	gc := goredis.NewClient(&goredis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	c, err := redis.NewGoRedis(gc)
	require.NoError(t, err)
	for _, kind := range []string{"log", "buckets"} {
		t.Run(kind, func(t *testing.T) { timeoutPolicies(t, s, c, kind) })
	}
	require.NoError(t, gc.Close())
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= base+1 }, 5*time.Second, 20*time.Millisecond,
		"goroutines: %d before, %d after closing the client", base, runtime.NumGoroutine())
}

// timeoutPolicies is TestTimeout for one kind of limiter.
func timeoutPolicies(t *testing.T, s *redistest.Server, c redis.Client, kind string) {
	rule := redis.Rule{Limit: 3, Window: time.Hour}
	newf := redis.NewLog
	if kind == "buckets" {
		rule.Precision = time.Minute
		newf = redis.NewBuckets
	}
	const timeout = 50 * time.Millisecond
	mk := func(p redis.Policy) *redis.Limiter {
		l, err := newf(c, testOptions(redis.Options{Timeout: timeout, OnError: p, Fallback: []redis.Rule{{Limit: 1, Window: time.Hour}}, Prefix: fmt.Sprintf("to%d", p)}), rule)
		require.NoError(t, err)
		return l
	}
	closed, open, fb := mk(redis.FailClosed), mk(redis.FailOpen), mk(redis.FallBack)
	now := at(epoch)
	// Warm the connection and the script.
	_, err := closed.AllowN(t.Context(), "warm", now, 1)
	require.NoError(t, err)

	_, err = redistest.Do(s.Addr(), "CLIENT", "PAUSE", "600", "ALL")
	require.NoError(t, err)
	start := time.Now()
	d, err := closed.AllowN(t.Context(), "k", now, 1)
	require.Error(t, err)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
	require.False(t, d.Allowed)
	require.Equal(t, redis.FromError, d.Source)
	// A context that can never be cancelled shares its deadline with the
	// calls of the same slot of time; it ends at the timeout all the same.
	_, err = closed.AllowN(context.Background(), "k", now, 1)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
	d, err = open.AllowN(t.Context(), "k", now, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, redis.FromFailOpen, d.Source)
	require.Error(t, d.Err)
	for i, want := range []bool{true, false} {
		d, err = fb.AllowN(t.Context(), "k", now, 1)
		require.NoError(t, err)
		require.Equal(t, redis.FromFallback, d.Source)
		require.Equal(t, want, d.Allowed, "fallback call %d (fallback limit 1)", i)
	}
	// Five calls, each ended by its own timeout, not by the pause.
	require.Less(t, time.Since(start), 560*time.Millisecond)

	// Once the pause ends, the server may still run calls it had
	// received; whatever it ran is within the limit.
	require.Eventually(t, func() bool {
		d, err := closed.AllowN(t.Context(), "k", now, 0)
		return err == nil && d.Source == redis.FromRedis
	}, 5*time.Second, 20*time.Millisecond)
	d, err = closed.AllowN(t.Context(), "k", now, 0)
	require.NoError(t, err)
	// closed made two calls on "k" (open and fb have keys of their own):
	// each is applied at most once.
	applied := rule.Limit - d.Remaining[0]
	require.LessOrEqual(t, applied, 2, "%s: two calls timed out on this key", kind)
	t.Logf("%s: calls that timed out and were applied by the server later: %d of 2", kind, applied)
}

func counts(m map[redis.Source][]oracle.Stamp) map[redis.Source]int {
	c := map[redis.Source]int{}
	for s, v := range m {
		c[s] = len(v)
	}
	return c
}

// TestMaxMemory: a server past its memory limit under maxmemory-policy
// noeviction refuses every write. For each kind of limiter, on the server's
// clock and on the caller's: an admission fails with Redis's OOM error and
// takes the failure policy (fail closed refuses with the error, fail open
// admits, the fallback decides) and writes nothing, for one key or a group;
// a refusal and a dry check still answer from the state; once the limit is
// lifted, Redis decides again from the state it kept.
func TestMaxMemory(t *testing.T) {
	s, gc, c := standalone(t)
	config := func(args ...string) {
		t.Helper()
		_, err := redistest.Do(s.Addr(), append([]string{"CONFIG", "SET"}, args...)...)
		require.NoError(t, err)
	}
	config("maxmemory-policy", "noeviction")
	for _, kind := range []string{"log", "window", "buckets"} {
		for _, clock := range []string{"server", "caller"} {
			t.Run(kind+"/"+clock, func(t *testing.T) {
				rule := redis.Rule{Limit: 2, Window: time.Hour}
				newf := redis.NewLog
				switch kind {
				case "window":
					newf = redis.NewWindow
				case "buckets":
					rule.Precision = time.Minute
					newf = redis.NewBuckets
				}
				mk := func(p redis.Policy, prefix string) *redis.Limiter {
					l, err := newf(c, testOptions(redis.Options{OnError: p, Fallback: []redis.Rule{{Limit: 1, Window: time.Hour}},
						Prefix: fmt.Sprintf("mm-%s-%s-%s", kind, clock, prefix)}), rule)
					require.NoError(t, err)
					return l
				}
				closed, open, fb, other := mk(redis.FailClosed, "c"), mk(redis.FailOpen, "o"), mk(redis.FallBack, "f"), mk(redis.FailClosed, "g")
				g, err := redis.NewGroup(closed, other)
				require.NoError(t, err)
				now := time.Time{}
				if clock == "caller" {
					now = time.Now()
				}
				ctx := t.Context()
				for _, key := range []string{"full", "full", "free"} {
					d, err := closed.AllowN(ctx, key, now, 1)
					require.NoError(t, err)
					require.True(t, d.Allowed)
				}
				value := func(l *redis.Limiter, key string) string {
					v, err := gc.Get(ctx, mustKey(t, l, key)).Result()
					if errors.Is(err, goredis.Nil) {
						return "(none)"
					}
					require.NoError(t, err)
					return v
				}
				before := map[string]string{}
				for _, key := range []string{"full", "free", "new"} {
					before[key] = value(closed, key)
				}

				config("maxmemory", "1")
				for _, key := range []string{"free", "new"} {
					d, err := closed.AllowN(ctx, key, now, 1)
					require.ErrorContains(t, err, "OOM", "an admission at %s", key)
					require.False(t, d.Allowed)
					require.Equal(t, redis.FromError, d.Source)
				}
				_, err = g.AllowN(ctx, []string{"{g}a", "{g}b"}, now, 1)
				require.ErrorContains(t, err, "OOM", "a group's admission")
				d, err := open.AllowN(ctx, "k", now, 1)
				require.NoError(t, err)
				require.True(t, d.Allowed)
				require.Equal(t, redis.FromFailOpen, d.Source)
				require.ErrorContains(t, d.Err, "OOM")
				for i, want := range []bool{true, false} {
					d, err := fb.AllowN(ctx, "k", now, 1)
					require.NoError(t, err)
					require.Equal(t, redis.FromFallback, d.Source)
					require.ErrorContains(t, d.Err, "OOM")
					require.Equal(t, want, d.Allowed, "fallback call %d (fallback limit 1)", i)
				}
				// What needs no write is still Redis's answer.
				d, err = closed.AllowN(ctx, "full", now, 1)
				require.NoError(t, err)
				require.Equal(t, redis.FromRedis, d.Source)
				require.False(t, d.Allowed, "a full key under the memory limit")
				require.Equal(t, []int{0}, d.Remaining)
				d, err = closed.CheckN(ctx, "free", now, 1)
				require.NoError(t, err)
				require.Equal(t, redis.FromRedis, d.Source)
				require.True(t, d.Allowed)
				require.Equal(t, []int{1}, d.Remaining)
				for key, v := range before {
					require.Equal(t, v, value(closed, key), "key %q written under the memory limit", key)
				}
				for _, key := range []string{"{g}a", "{g}b"} {
					require.Equal(t, "(none)", value(closed, key), "group key %q written under the memory limit", key)
				}
				require.Equal(t, "(none)", value(open, "k"), "a fail-open admission reached Redis")

				config("maxmemory", "0")
				d, err = closed.AllowN(ctx, "free", now, 1)
				require.NoError(t, err)
				require.True(t, d.Allowed)
				require.Equal(t, []int{0}, d.Remaining, "the state kept through the memory limit")
				d, err = closed.AllowN(ctx, "free", now, 1)
				require.NoError(t, err)
				require.False(t, d.Allowed, "a third admission at limit 2")
			})
		}
	}
}

// TestReplicaReadOnly: a limiter pointed at a read-only replica (a
// misconfigured address, a failover the client has not seen yet) gets
// Redis's READONLY error on every admission, which takes the failure policy,
// while a refusal, which writes nothing, is answered from the replica's copy
// of the state.
func TestReplicaReadOnly(t *testing.T) {
	primary, replica := redistest.StartReplica(t)
	_, pc := connect(t, primary)
	_, rc := connect(t, replica)
	rule := redis.Rule{Limit: 1, Window: time.Hour}
	lp := mustLog(t, pc, redis.Options{Prefix: "ro"}, rule)
	d, err := lp.AllowN(t.Context(), "full", time.Time{}, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	closed := mustLog(t, rc, redis.Options{Prefix: "ro"}, rule)
	open := mustLog(t, rc, redis.Options{Prefix: "ro", OnError: redis.FailOpen}, rule)
	// The replica has the key once it has synchronised.
	require.Eventually(t, func() bool {
		d, err := closed.AllowN(t.Context(), "full", time.Time{}, 1)
		return err == nil && !d.Allowed && d.Source == redis.FromRedis
	}, 10*time.Second, 20*time.Millisecond, "a refusal from the replica's copy of the state")
	d, err = closed.AllowN(t.Context(), "new", time.Time{}, 1)
	require.ErrorContains(t, err, "READONLY")
	require.False(t, d.Allowed)
	require.Equal(t, redis.FromError, d.Source)
	d, err = open.AllowN(t.Context(), "new", time.Time{}, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, redis.FromFailOpen, d.Source)
	require.ErrorContains(t, d.Err, "READONLY")
}

// TestPolicyEdges: what each failure policy answers at its edges, with the
// server down. Under FailOpen a cost above the limit is still refused, with
// no instant at which it fits. Under FallBack a refusal says when the
// fallback would admit the cost, and a fallback store that is full sweeps
// its idle keys to make room for a new one, as a keyed store does, instead
// of refusing every new key for the rest of the outage. A caller that gives
// up during a call gets its context's error under every policy, not an
// admission.
func TestPolicyEdges(t *testing.T) {
	s := redistest.Start(t)
	_, c := connect(t, s)
	rule := redis.Rule{Limit: 3, Window: time.Hour}
	fbRule := redis.Rule{Limit: 1, Window: 10 * time.Millisecond}
	mk := func(p redis.Policy, prefix string) *redis.Limiter {
		l, err := redis.NewLog(c, redis.Options{Prefix: prefix, Timeout: 100 * time.Millisecond, OnError: p,
			Fallback: []redis.Rule{fbRule}, FallbackMaxKeys: 2}, rule)
		require.NoError(t, err)
		return l
	}
	closed, open, fb := mk(redis.FailClosed, "pe-c"), mk(redis.FailOpen, "pe-o"), mk(redis.FallBack, "pe-f")

	t.Run("cancelled", func(t *testing.T) {
		// The server stops answering; the caller gives up after 20 ms,
		// before the limiter's timeout of 100 ms.
		_, err := redistest.Do(s.Addr(), "CLIENT", "PAUSE", "400", "ALL")
		require.NoError(t, err)
		for _, l := range []*redis.Limiter{closed, open, fb} {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(20*time.Millisecond, cancel)
			d, err := l.AllowN(ctx, "k", time.Time{}, 1)
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorContains(t, err, `redis: key "k"`)
			require.False(t, d.Allowed)
			require.Equal(t, redis.FromError, d.Source)
		}
		// Wait for the pause to end.
		require.Eventually(t, func() bool {
			_, err := closed.AllowN(t.Context(), "k", time.Time{}, 0)
			return err == nil
		}, 5*time.Second, 20*time.Millisecond)
	})

	s.Stop()
	now := time.Now()
	t.Run("fail-open", func(t *testing.T) {
		d, err := open.AllowN(t.Context(), "k", now, rule.Limit+1)
		require.NoError(t, err)
		require.False(t, d.Allowed, "a cost above the limit, admitted unchecked")
		require.True(t, d.ReadyAt.IsZero())
		require.Equal(t, redis.FromFailOpen, d.Source)
		require.Error(t, d.Err)
		d, err = open.AllowN(t.Context(), "k", now, rule.Limit)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	})
	t.Run("fallback", func(t *testing.T) {
		for _, k := range []string{"a", "b"} {
			d, err := fb.AllowN(t.Context(), k, now, 1)
			require.NoError(t, err)
			require.True(t, d.Allowed, "key %q", k)
			d, err = fb.AllowN(t.Context(), k, now, 1)
			require.NoError(t, err)
			require.False(t, d.Allowed, "key %q, second call", k)
			require.Equal(t, fbRule.Window, d.ReadyAt.Sub(now), "key %q: when the fallback admits again", k)
		}
		// The store holds two keys, both busy: a third is refused.
		d, err := fb.AllowN(t.Context(), "c", now, 1)
		require.NoError(t, err)
		require.False(t, d.Allowed, "a third key while two are busy")
		// Both idle: the store makes room.
		later := now.Add(10 * fbRule.Window)
		for _, k := range []string{"c", "d"} {
			d, err = fb.AllowN(t.Context(), k, later, 1)
			require.NoError(t, err)
			require.True(t, d.Allowed, "key %q once the others are idle", k)
			require.Equal(t, redis.FromFallback, d.Source)
		}
		// Full again, with c and d idle later still: a dry check on a new
		// key answers as for a new key (a check cannot sweep), and a
		// group's records sweep the store to make room.
		later2 := later.Add(10 * fbRule.Window)
		d, err = fb.CheckN(t.Context(), "e", later2, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed, "a dry check on a new key of a full store")
		require.Equal(t, []int{fbRule.Limit}, d.Remaining)
		fb2 := mk(redis.FallBack, "pe-f2")
		g, err := redis.NewGroup(fb, fb2)
		require.NoError(t, err)
		d, err = g.AllowN(t.Context(), []string{"{g}x", "{g}y"}, later2, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed, "a group with a new key of a full store whose keys are idle")
		require.Equal(t, redis.FromFallback, d.Source)
	})
}

// badReplyClient answers every script call with one value, where the
// scripts answer three and one per rule.
type badReplyClient struct{}

func (badReplyClient) EvalSHA(context.Context, string, []string, []any) ([]int64, error) {
	return []int64{1}, nil
}
func (badReplyClient) Eval(context.Context, string, []string, []any) ([]int64, error) {
	return []int64{1}, nil
}
func (badReplyClient) Load(context.Context, string) error { return nil }

// TestMalformedReply: a reply that is not the script's (from a Client of the
// caller's own) is a Redis failure like any other, answered by the policy
// and named with the key, not an error under every policy.
func TestMalformedReply(t *testing.T) {
	mk := func(p redis.Policy) *redis.Limiter {
		l, err := redis.NewLog(badReplyClient{}, redis.Options{Prefix: "bad", OnError: p,
			Fallback: []redis.Rule{{Limit: 1, Window: time.Hour}}}, redis.Rule{Limit: 5, Window: time.Hour})
		require.NoError(t, err)
		return l
	}
	now := at(epoch)
	d, err := mk(redis.FailClosed).AllowN(t.Context(), "k", now, 1)
	require.ErrorContains(t, err, `redis: key "k": the log script answered 1 values, want 4`)
	require.False(t, d.Allowed)
	require.Equal(t, redis.FromError, d.Source)
	d, err = mk(redis.FailOpen).AllowN(t.Context(), "k", now, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, redis.FromFailOpen, d.Source)
	require.ErrorContains(t, d.Err, "answered 1 values")
	fb := mk(redis.FallBack)
	for i, want := range []bool{true, false} {
		d, err = fb.AllowN(t.Context(), "k", now, 1)
		require.NoError(t, err)
		require.Equal(t, redis.FromFallback, d.Source)
		require.Equal(t, want, d.Allowed, "fallback call %d (fallback limit 1)", i)
	}

	// A reply longer than the script's is not the script's either.
	long, err := redis.NewLog(longReplyClient{}, redis.Options{Prefix: "bad"}, redis.Rule{Limit: 5, Window: time.Hour})
	require.NoError(t, err)
	d, err = long.AllowN(t.Context(), "k", now, 1)
	require.ErrorContains(t, err, `redis: key "k": the log script answered 5 values, want 4`)
	require.False(t, d.Allowed)
	require.Equal(t, redis.FromError, d.Source)
}

// longReplyClient answers every script call with an admission and one value
// more than a one-rule script answers.
type longReplyClient struct{}

func (longReplyClient) EvalSHA(context.Context, string, []string, []any) ([]int64, error) {
	now := time.Now().UnixMicro()
	return []int64{1, now, now, 4, 4}, nil
}
func (c longReplyClient) Eval(ctx context.Context, _ string, keys []string, args []any) ([]int64, error) {
	return c.EvalSHA(ctx, "", keys, args)
}
func (longReplyClient) Load(context.Context, string) error { return nil }
