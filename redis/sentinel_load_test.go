package redis_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
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

// failoverCall is one call of TestSentinelFailoverUnderLoad, as its caller
// saw it.
type failoverCall struct {
	key        int
	n          int
	start, end time.Time
	d          redis.Decision
	err        error
}

// failoverLimiter is one limiter of TestSentinelFailoverUnderLoad: a kind
// (exact log or window), a rule (an hour long, so that the whole test lies
// in one window, or 100 ms, shorter than any failover) and a policy.
type failoverLimiter struct {
	name   string
	exact  bool
	rule   redis.Rule
	policy redis.Policy
	opts   redis.Options
	l      *redis.Limiter
	// replicated is, per key, the cost the replica held in the rule's
	// window just after the master died (long rules only).
	replicated [failoverKeys]int64
	// afterPromotion counts the calls answered by Redis that began after
	// the promotion was seen.
	afterPromotion atomic.Int64
	calls          []failoverCall
}

const failoverKeys = 3

// TestSentinelFailoverUnderLoad: goroutines decide continuously (weighted
// calls on three keys, on the server's clock) on an exact log and a window,
// each under every failure policy and with a rule of an hour and one of
// 100 ms, while the master Sentinel names is killed and its replica
// promoted. From the callers' side:
//
//   - every call has one answer: an error only under FailClosed, with Source
//     FromError and nothing admitted; otherwise Redis's decision (no Err) or
//     the policy's (FailOpen admits, the fallback decides, both with Err
//     set), and the policy answers only calls that ended after the kill;
//   - every policy answered some calls (the outage was seen), and the
//     fallback admitted at most its own limit per window per key;
//   - decisions resume on the new master: every limiter gets Redis's
//     answers again, and only those from 1.3 s after the promotion on (the
//     pool's probe after dial failures runs once a second);
//   - with the 100 ms rule, shorter than the outage (checked: from the kill
//     to the new master's first admission), Redis's admissions keep the
//     kind's bound in every window, across the failover;
//   - with the hour's rule, Redis admits across the failover at most the
//     limit plus what the old master admitted and the replica did not hold
//     when the master died: T <= limit + (A_old - R), where A_old is the
//     cost Redis admitted for calls that began before the kill and R the
//     cost the replica held (read from it before the promotion); so at most
//     twice the limit ("Failure policy" in docs/redis.md);
//   - no goroutine is left once the clients are closed, and nothing panics.
func TestSentinelFailoverUnderLoad(t *testing.T) {
	base := runtime.NumGoroutine()
	primary, replica := redistest.StartReplica(t)
	role := func(s *redistest.Server) string {
		out, err := redistest.Do(s.Addr(), "ROLE")
		if err != nil {
			return err.Error()
		}
		return out
	}
	sen := redistest.StartSentinel(t, "mymaster", primary)
	require.Eventually(t, func() bool {
		out, err := redistest.Do(sen.Addr(), "SENTINEL", "REPLICAS", "mymaster")
		return err == nil && strings.Contains(out, strconv.Itoa(replica.Port))
	}, 15*time.Second, 50*time.Millisecond, "Sentinel found the replica")

	gc := goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{sen.Addr()}, ContextTimeoutEnabled: true})
	defer func() { _ = gc.Close() }()
	c, err := redis.NewGoRedis(gc)
	require.NoError(t, err)
	// A client on the replica alone, to read what it holds.
	rgc := goredis.NewClient(&goredis.Options{Addr: replica.Addr(), ContextTimeoutEnabled: true})
	defer func() { _ = rgc.Close() }()
	rc, err := redis.NewGoRedis(rgc)
	require.NoError(t, err)

	const timeout = 300 * time.Millisecond // less than Sentinel's 500 ms
	fbRule := redis.Rule{Limit: 6, Window: 100 * time.Millisecond}
	long := redis.Rule{Limit: 100, Window: time.Hour}
	short := redis.Rule{Limit: 20, Window: 100 * time.Millisecond}
	var ls []*failoverLimiter
	for _, exact := range []bool{true, false} {
		for _, rule := range []redis.Rule{long, short} {
			for _, p := range []redis.Policy{redis.FailClosed, redis.FailOpen, redis.FallBack} {
				kind := map[bool]string{true: "log", false: "window"}[exact]
				name := fmt.Sprintf("%s/%v/policy%d", kind, rule.Window, p)
				fl := &failoverLimiter{name: name, exact: exact, rule: rule, policy: p,
					opts: redis.Options{Prefix: strings.ReplaceAll(name, "/", "-"), Timeout: timeout, OnError: p, Fallback: []redis.Rule{fbRule}}}
				mk := mustWindow
				if exact {
					mk = mustLog
				}
				fl.l = mk(t, c, fl.opts, rule)
				ls = append(ls, fl)
			}
		}
	}
	keyName := func(k int) string { return "k" + strconv.Itoa(k) }

	var stop atomic.Bool
	var promotedAt atomic.Int64 // UnixNano; 0 until the promotion is seen
	var wg sync.WaitGroup
	var mu sync.Mutex
	for li, fl := range ls {
		for g := range 2 {
			wg.Go(func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s: panic: %v", fl.name, r)
					}
				}()
				rng := rand.New(rand.NewPCG(uint64(li), uint64(g)))
				// The hour's rule is paced so that its limit is not
				// used up before the failover.
				pause := time.Millisecond
				if fl.rule == long {
					pause = 6 * time.Millisecond
				}
				var mine []failoverCall
				for !stop.Load() {
					fc := failoverCall{key: rng.IntN(failoverKeys), n: 1 + rng.IntN(3), start: time.Now()}
					fc.d, fc.err = fl.l.AllowN(context.Background(), keyName(fc.key), time.Time{}, fc.n)
					fc.end = time.Now()
					if p := promotedAt.Load(); p != 0 && fc.err == nil && fc.d.Source == redis.FromRedis && fc.start.UnixNano() > p {
						fl.afterPromotion.Add(1)
					}
					mine = append(mine, fc)
					time.Sleep(pause)
				}
				mu.Lock()
				fl.calls = append(fl.calls, mine...)
				mu.Unlock()
			})
		}
	}
	stopLoad := func() { stop.Store(true); wg.Wait() }
	defer stopLoad()

	time.Sleep(400 * time.Millisecond)
	killing := time.Now() // Redis answers every call that ends before this
	primary.Stop()
	killed := time.Now() // the old master is gone: no call begun after this is its
	// What the replica holds, read before Sentinel can promote it.
	for _, fl := range ls {
		if fl.rule != long {
			continue
		}
		o := fl.opts
		o.OnError = redis.FailClosed
		mk := mustWindow
		if fl.exact {
			mk = mustLog
		}
		rl := mk(t, rc, o, fl.rule)
		for k := range failoverKeys {
			d, err := rl.CheckN(t.Context(), keyName(k), time.Time{}, 0)
			require.NoError(t, err, "%s: reading the replica", fl.name)
			fl.replicated[k] = int64(fl.rule.Limit - d.Remaining[0])
		}
	}
	require.True(t, strings.HasPrefix(role(replica), "slave"), "the replica was read before its promotion")
	require.Eventually(t, func() bool { return strings.HasPrefix(role(replica), "master") },
		20*time.Second, 10*time.Millisecond, "the replica promoted")
	promoted := time.Now()
	promotedAt.Store(promoted.UnixNano())
	t.Logf("replica promoted %v after the kill", promoted.Sub(killed).Round(time.Millisecond))
	for _, fl := range ls {
		require.Eventually(t, func() bool { return fl.afterPromotion.Load() >= 20 }, 20*time.Second, 10*time.Millisecond,
			"%s: decisions did not resume on the new master", fl.name)
	}
	t.Logf("every limiter decided by the new master %v after the promotion", time.Since(promoted).Round(time.Millisecond))
	// go-redis's pool, after a run of dial failures, answers with the last
	// dial error and probes once a second: so a call can still fail up to a
	// second after the promotion, while others are decided on the new
	// master. The load runs past that.
	settled := promoted.Add(1300 * time.Millisecond)
	time.Sleep(max(time.Until(settled)+500*time.Millisecond, 400*time.Millisecond))
	stopLoad()

	for _, fl := range ls {
		bySrc := map[redis.Source]int{}
		var redisSt, fbSt [failoverKeys][]oracle.Stamp
		var total, old [failoverKeys]int64
		firstNew := int64(math.MaxInt64) // the new master's first admission (µs)
		var lastPolicy time.Time         // when the last call the policy answered began
		var lastErr error
		for _, fc := range fl.calls {
			d := fc.d
			bySrc[d.Source]++
			if fc.err != nil {
				require.Equal(t, redis.FailClosed, fl.policy, "%s: an error under another policy: %v", fl.name, fc.err)
				require.Equal(t, redis.FromError, d.Source, "%s: %v", fl.name, fc.err)
				require.False(t, d.Allowed, "%s: an error with an admission", fl.name)
			}
			switch d.Source {
			case redis.FromRedis:
				require.NoError(t, fc.err, fl.name)
				require.NoError(t, d.Err, "%s: Redis's decision with an error", fl.name)
				require.Len(t, d.Remaining, 1, fl.name)
				if d.Allowed {
					st := oracle.Stamp{At: d.At.UnixMicro(), Cost: int64(fc.n)}
					redisSt[fc.key] = append(redisSt[fc.key], st)
					total[fc.key] += int64(fc.n)
					if fc.start.Before(killed) {
						old[fc.key] += int64(fc.n)
					} else {
						firstNew = min(firstNew, st.At)
					}
				}
				continue
			case redis.FromError:
				require.Error(t, fc.err, "%s: FromError without an error", fl.name)
			case redis.FromFailOpen:
				require.Equal(t, redis.FailOpen, fl.policy, fl.name)
				require.True(t, d.Allowed, "%s: fail open refused a cost that fits", fl.name)
				require.Error(t, d.Err, fl.name)
			case redis.FromFallback:
				require.Equal(t, redis.FallBack, fl.policy, fl.name)
				require.Error(t, d.Err, fl.name)
				if d.Allowed {
					fbSt[fc.key] = append(fbSt[fc.key], oracle.Stamp{At: d.At.UnixMicro(), Cost: int64(fc.n)})
				}
			default:
				t.Fatalf("%s: source %v", fl.name, d.Source)
			}
			// The policy answered: Redis failed, which it did only once
			// the master was killed.
			require.True(t, fc.end.After(killing), "%s: the policy answered a call that ended %v before the kill: %v",
				fl.name, killing.Sub(fc.end), fc.err)
			lastPolicy = fc.start
			lastErr = cmp.Or(fc.err, d.Err)
		}
		wantSrc := map[redis.Policy]redis.Source{redis.FailClosed: redis.FromError, redis.FailOpen: redis.FromFailOpen, redis.FallBack: redis.FromFallback}[fl.policy]
		require.Positive(t, bySrc[wantSrc], "%s: the outage was not seen: %v", fl.name, bySrc)
		require.True(t, lastPolicy.Before(settled),
			"%s: the policy answered a call begun %v after the promotion: %v", fl.name, lastPolicy.Sub(promoted), lastErr)
		for k := range failoverKeys {
			fb := oracle.MaxInWindow(fbSt[k], fbRule.Window.Microseconds())
			require.LessOrEqual(t, fb, int64(fbRule.Limit), "%s key %d: the fallback's admissions in one window", fl.name, k)
			got := oracle.MaxInWindow(redisSt[k], fl.rule.Window.Microseconds())
			if fl.rule == short {
				// No window holds both an admission the old master took
				// (at the kill or before) and one of the new master's.
				require.Greater(t, firstNew-killing.UnixMicro(), fl.rule.Window.Microseconds(), "%s: the premise: the outage is longer than the window", fl.name)
				require.LessOrEqual(t, got, loadBound(fl.rule, fl.exact), "%s key %d: Redis's admissions in one window", fl.name, k)
				continue
			}
			// One window holds the whole test.
			limit, r := int64(fl.rule.Limit), fl.replicated[k]
			require.Equal(t, total[k], got, fl.name)
			require.LessOrEqual(t, total[k], limit+old[k]-r,
				"%s key %d: admitted %d (%d before the kill, of which the replica held at most %d)", fl.name, k, total[k], old[k], r)
			require.LessOrEqual(t, total[k], 2*limit, fl.name)
			t.Logf("%s key %d: Redis admitted %d (limit %d): %d before the kill, the replica held %d, lost at most %d",
				fl.name, k, total[k], limit, old[k], r, max(old[k]-r, 0))
		}
		t.Logf("%s: %d calls, sources %v", fl.name, len(fl.calls), bySrc)
	}

	// Each key lives on the new master, which decides it, and Sentinel
	// names it.
	for _, fl := range ls {
		for k := range failoverKeys {
			v, err := redistest.Do(replica.Addr(), "EXISTS", mustKey(t, fl.l, keyName(k)))
			require.NoError(t, err)
			require.Equal(t, "1", v, fl.name)
			d, err := fl.l.CheckN(t.Context(), keyName(k), time.Time{}, 1)
			require.NoError(t, err, fl.name)
			require.Equal(t, redis.FromRedis, d.Source, fl.name)
		}
	}
	addr, err := redistest.Do(sen.Addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1\n"+strconv.Itoa(replica.Port), addr)

	require.NoError(t, gc.Close())
	require.NoError(t, rgc.Close())
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= base+1 }, 5*time.Second, 20*time.Millisecond,
		"goroutines: %d before, %d after closing the clients", base, runtime.NumGoroutine())
}
