package redis_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// What TestSentinelFailoverUnderLoad and TestClusterFailoverUnderLoad share:
// limiters of every kind, rule and policy, goroutines that call them without
// pause while a master fails, and the checks made from the callers' answers.

// failoverCall is one call of a failover load, as its caller saw it.
type failoverCall struct {
	key        int
	n          int
	start, end time.Time
	d          redis.Decision
	err        error
}

// failoverLimiter is one limiter of a failover load: a kind (exact log or
// window), a rule (an hour long, so that the whole test lies in one window,
// or 100 ms, shorter than any failover) and a policy.
type failoverLimiter struct {
	name   string
	exact  bool
	rule   redis.Rule
	policy redis.Policy
	opts   redis.Options
	l      *redis.Limiter
	// replicated is, per key, the cost the replica held in the rule's
	// window just after the master failed (long rules, keys of the
	// failed master only).
	replicated []int64
	// afterPromotion counts the calls on keys of the failed master
	// answered by Redis that began after the promotion was seen.
	afterPromotion atomic.Int64
	calls          []failoverCall
}

var (
	// failoverFallback is the in-process rule under FallBack.
	failoverFallback = redis.Rule{Limit: 6, Window: 100 * time.Millisecond}
	// failoverLong holds the whole test in one window.
	failoverLong = redis.Rule{Limit: 100, Window: time.Hour}
	// failoverShort is shorter than any failover.
	failoverShort = redis.Rule{Limit: 20, Window: 100 * time.Millisecond}
)

// failoverLimiters returns, on c, a limiter for each kind, rule and policy,
// with the given timeout, under prefixes that start with prefix.
func failoverLimiters(t *testing.T, c redis.Client, prefix string, timeout time.Duration, keys int) []*failoverLimiter {
	t.Helper()
	var ls []*failoverLimiter
	for _, exact := range []bool{true, false} {
		for _, rule := range []redis.Rule{failoverLong, failoverShort} {
			for _, p := range []redis.Policy{redis.FailClosed, redis.FailOpen, redis.FallBack} {
				kind := map[bool]string{true: "log", false: "window"}[exact]
				name := fmt.Sprintf("%s/%v/policy%d", kind, rule.Window, p)
				fl := &failoverLimiter{name: name, exact: exact, rule: rule, policy: p, replicated: make([]int64, keys),
					opts: redis.Options{Prefix: prefix + strings.ReplaceAll(name, "/", "-"), Timeout: timeout, OnError: p,
						Fallback: []redis.Rule{failoverFallback}}}
				fl.l = fl.on(t, c, fl.opts)
				ls = append(ls, fl)
			}
		}
	}
	return ls
}

// on returns a limiter of fl's kind and rule on c with options o.
func (fl *failoverLimiter) on(t *testing.T, c redis.Client, o redis.Options) *redis.Limiter {
	if fl.exact {
		return mustLog(t, c, o, fl.rule)
	}
	return mustWindow(t, c, o, fl.rule)
}

// readReplicated records in fl.replicated what the replica behind rc holds
// for each key whose master failed (long rules only).
func (fl *failoverLimiter) readReplicated(t *testing.T, rc redis.Client, keys []string, failed []bool) {
	t.Helper()
	if fl.rule != failoverLong {
		return
	}
	o := fl.opts
	o.OnError = redis.FailClosed
	rl := fl.on(t, rc, o)
	for k, key := range keys {
		if !failed[k] {
			continue
		}
		d, err := rl.CheckN(t.Context(), key, time.Time{}, 0)
		require.NoError(t, err, "%s: reading the replica", fl.name)
		fl.replicated[k] = int64(fl.rule.Limit - d.Remaining[0])
	}
}

// failoverLoad runs two goroutines per limiter, each calling its limiter
// on the server's clock, a key and a cost of 1 to 3 at random, every
// millisecond (every 6 ms for the hour's rule, so that its limit is not used
// up before the failover), until Stop.
type failoverLoad struct {
	ls         []*failoverLimiter
	failed     []bool // per key: its master fails
	stop       atomic.Bool
	promotedAt atomic.Int64 // UnixNano; 0 until the promotion is seen
	wg         sync.WaitGroup
	mu         sync.Mutex
}

func startFailoverLoad(t *testing.T, ls []*failoverLimiter, keys []string, failed []bool) *failoverLoad {
	f := &failoverLoad{ls: ls, failed: failed}
	for li, fl := range ls {
		for g := range 2 {
			f.wg.Go(func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s: panic: %v", fl.name, r)
					}
				}()
				rng := rand.New(rand.NewPCG(uint64(li), uint64(g)))
				pause := time.Millisecond
				if fl.rule == failoverLong {
					pause = 6 * time.Millisecond
				}
				var mine []failoverCall
				for !f.stop.Load() {
					fc := failoverCall{key: rng.IntN(len(keys)), n: 1 + rng.IntN(3), start: time.Now()}
					fc.d, fc.err = fl.l.AllowN(context.Background(), keys[fc.key], time.Time{}, fc.n)
					fc.end = time.Now()
					if p := f.promotedAt.Load(); p != 0 && failed[fc.key] && fc.err == nil && fc.d.Source == redis.FromRedis && fc.start.UnixNano() > p {
						fl.afterPromotion.Add(1)
					}
					mine = append(mine, fc)
					time.Sleep(pause)
				}
				f.mu.Lock()
				fl.calls = append(fl.calls, mine...)
				f.mu.Unlock()
			})
		}
	}
	return f
}

// Stop ends the load and waits for its goroutines.
func (f *failoverLoad) Stop() { f.stop.Store(true); f.wg.Wait() }

// promoted records that the replica was seen promoted at p.
func (f *failoverLoad) promoted(p time.Time) { f.promotedAt.Store(p.UnixNano()) }

// waitResumed waits until every limiter has had at least 20 calls on keys
// of the failed master decided by Redis since the promotion.
func (f *failoverLoad) waitResumed(t *testing.T) {
	t.Helper()
	for _, fl := range f.ls {
		require.Eventually(t, func() bool { return fl.afterPromotion.Load() >= 20 }, 20*time.Second, 10*time.Millisecond,
			"%s: decisions did not resume on the new master", fl.name)
	}
}

// resumed returns the earliest end of a call on a key of the failed master
// that began after killed and was decided by Redis (by the new master),
// over every limiter: a call begun later is sent where the client then knows
// the new master to be.
func (f *failoverLoad) resumed(killed time.Time) time.Time {
	first := time.Time{}
	for _, fl := range f.ls {
		for _, fc := range fl.calls {
			if f.failed[fc.key] && fc.err == nil && fc.d.Source == redis.FromRedis && fc.start.After(killed) &&
				(first.IsZero() || fc.end.Before(first)) {
				first = fc.end
			}
		}
	}
	return first
}

// failoverTimes are the instants of a failover that the checks need.
type failoverTimes struct {
	killing time.Time // Redis answers every call that ends before this
	killed  time.Time // the old master is gone: no call begun after this is its
	settled time.Time // the policy answers no call begun after this
	promote time.Time // the promotion was seen
}

// checkFailover checks, from fl's calls (after Stop), for each key, the
// failure policy and the bounds on what Redis admitted:
//
//   - an error only under FailClosed, with Source FromError and nothing
//     admitted; otherwise Redis's decision (no Err) or the policy's
//     (FailOpen admits, the fallback decides, both with Err set);
//   - the policy answers only keys whose master failed, only calls that
//     ended after the kill and began before tm.settled, and it answered
//     some (the outage was seen); the fallback admits at most its own limit
//     per window per key;
//   - with the 100 ms rule, shorter than the outage (checked: from the kill
//     to the new master's first admission), Redis's admissions keep the
//     kind's bound in every window, across the failover;
//   - with the hour's rule, on a key whose master failed, Redis admits
//     across the failover at most the limit plus what the old master
//     admitted and the replica did not hold when the master died:
//     T <= limit + (A_old - R), where A_old is the cost Redis admitted for
//     calls that began before the kill and R the cost the replica held; so
//     at most twice the limit ("Failure policy" in docs/redis.md); on any
//     other key, at most the limit.
func checkFailover(t *testing.T, fl *failoverLimiter, failed []bool, tm failoverTimes) {
	t.Helper()
	nk := len(failed)
	bySrc := map[redis.Source]int{}
	redisSt, fbSt := make([][]oracle.Stamp, nk), make([][]oracle.Stamp, nk)
	total, old := make([]int64, nk), make([]int64, nk)
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
				if fc.start.Before(tm.killed) {
					old[fc.key] += int64(fc.n)
				} else if failed[fc.key] {
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
		// The policy answered: Redis failed, which it did only for the
		// failed master's keys, and only once the master was killed.
		require.True(t, failed[fc.key], "%s: the policy answered a call on key %d, whose master did not fail, begun %v after the kill: %v",
			fl.name, fc.key, fc.start.Sub(tm.killed), cmp.Or(fc.err, d.Err))
		require.True(t, fc.end.After(tm.killing), "%s: the policy answered a call that ended %v before the kill: %v",
			fl.name, tm.killing.Sub(fc.end), fc.err)
		if fc.start.After(lastPolicy) {
			lastPolicy = fc.start
			lastErr = cmp.Or(fc.err, d.Err)
		}
	}
	wantSrc := map[redis.Policy]redis.Source{redis.FailClosed: redis.FromError, redis.FailOpen: redis.FromFailOpen, redis.FallBack: redis.FromFallback}[fl.policy]
	require.Positive(t, bySrc[wantSrc], "%s: the outage was not seen: %v", fl.name, bySrc)
	require.True(t, lastPolicy.Before(tm.settled),
		"%s: the policy answered a call begun %v after the promotion: %v", fl.name, lastPolicy.Sub(tm.promote), lastErr)
	if fl.rule == failoverShort {
		// No window holds both an admission the old master took (at the
		// kill or before) and one of the new master's.
		require.Greater(t, firstNew-tm.killing.UnixMicro(), fl.rule.Window.Microseconds(),
			"%s: the premise: the outage is longer than the window", fl.name)
	}
	for k := range nk {
		fb := oracle.MaxInWindow(fbSt[k], failoverFallback.Window.Microseconds())
		require.LessOrEqual(t, fb, int64(failoverFallback.Limit), "%s key %d: the fallback's admissions in one window", fl.name, k)
		got := oracle.MaxInWindow(redisSt[k], fl.rule.Window.Microseconds())
		if fl.rule == failoverShort {
			require.LessOrEqual(t, got, loadBound(fl.rule, fl.exact), "%s key %d: Redis's admissions in one window", fl.name, k)
			continue
		}
		// One window holds the whole test.
		limit, r := int64(fl.rule.Limit), fl.replicated[k]
		require.Equal(t, total[k], got, fl.name)
		if !failed[k] {
			require.LessOrEqual(t, total[k], limit, "%s key %d: Redis's admissions, its master up throughout", fl.name, k)
			continue
		}
		require.LessOrEqual(t, total[k], limit+old[k]-r,
			"%s key %d: admitted %d (%d before the kill, of which the replica held at most %d)", fl.name, k, total[k], old[k], r)
		require.LessOrEqual(t, total[k], 2*limit, fl.name)
		t.Logf("%s key %d: Redis admitted %d (limit %d): %d before the kill, the replica held %d, lost at most %d",
			fl.name, k, total[k], limit, old[k], r, max(old[k]-r, 0))
	}
	t.Logf("%s: %d calls, sources %v", fl.name, len(fl.calls), bySrc)
}

// checkUnseen checks, with the hour's rule, what the new master holds of
// each key whose master failed, read through fl's limiter after the load:
// at least what the replica held plus the cost Redis admitted to calls begun
// after the kill (the new master's), and at most that plus the cost Redis
// admitted to calls begun before the kill and answered after it (either
// master's) and the cost of the calls the policy answered, whose scripts may
// have been applied all the same (sent, or still queued, when their callers
// gave up). It returns, over the keys, what the new master holds beyond
// every admission a caller saw: cost applied for calls whose callers were
// given the policy's answer.
func checkUnseen(t *testing.T, fl *failoverLimiter, keys []string, failed []bool, tm failoverTimes) int64 {
	t.Helper()
	if fl.rule != failoverLong {
		return 0
	}
	unseen := int64(0)
	for k, key := range keys {
		if !failed[k] {
			continue
		}
		var sure, either, policy int64
		for _, fc := range fl.calls {
			switch {
			case fc.key != k:
			case fc.d.Source != redis.FromRedis:
				policy += int64(fc.n)
			case !fc.d.Allowed || !fc.end.After(tm.killed):
			case fc.start.After(tm.killed):
				sure += int64(fc.n)
			default:
				either += int64(fc.n)
			}
		}
		d, err := fl.l.CheckN(t.Context(), key, time.Time{}, 0)
		require.NoError(t, err, fl.name)
		require.Equal(t, redis.FromRedis, d.Source, fl.name)
		held, r := int64(fl.rule.Limit-d.Remaining[0]), fl.replicated[k]
		require.GreaterOrEqual(t, held, r+sure,
			"%s key %d: the new master holds %d, less than the replica's %d and the %d it admitted", fl.name, k, held, r, sure)
		require.LessOrEqual(t, held, r+sure+either+policy,
			"%s key %d: the new master holds %d: the replica's %d, %d admitted, %d perhaps, %d under the policy", fl.name, k, held, r, sure, either, policy)
		unseen += max(held-r-sure-either, 0)
	}
	return unseen
}

// awaitPromotion reads, through rc, what replica holds of each limiter's
// keys, requires that it was still a replica then (so that the reads are
// the state the new master starts from), waits for its promotion, tells
// load, and returns the instant the promotion was seen.
func awaitPromotion(t *testing.T, load *failoverLoad, ls []*failoverLimiter, rc redis.Client, replica *redistest.Server, keys []string, failed []bool) time.Time {
	t.Helper()
	for _, fl := range ls {
		fl.readReplicated(t, rc, keys, failed)
	}
	require.True(t, strings.HasPrefix(role(replica), "slave"), "the replica was read before its promotion")
	require.Eventually(t, func() bool { return strings.HasPrefix(role(replica), "master") },
		20*time.Second, 10*time.Millisecond, "the replica promoted")
	p := time.Now()
	load.promoted(p)
	return p
}

// checkOnNewMaster requires that each failed key of each limiter lives on
// the promoted replica and is decided there by Redis.
func checkOnNewMaster(t *testing.T, ls []*failoverLimiter, replica *redistest.Server, keys []string, failed []bool) {
	t.Helper()
	for _, fl := range ls {
		for k, key := range keys {
			if !failed[k] {
				continue
			}
			v, err := redistest.Do(replica.Addr(), "EXISTS", mustKey(t, fl.l, key))
			require.NoError(t, err)
			require.Equal(t, "1", v, fl.name)
			d, err := fl.l.CheckN(t.Context(), key, time.Time{}, 1)
			require.NoError(t, err, fl.name)
			require.Equal(t, redis.FromRedis, d.Source, fl.name)
		}
	}
}
