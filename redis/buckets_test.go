package redis_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/internal/conformance"
	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// bucketOracle is the naive model of NewBuckets, in microseconds: per rule, a
// map from sub-window index to the cost admitted in it, and the latest
// admission, at which a stale instant is decided.
type bucketOracle struct {
	rules  []redis.Rule
	counts []map[int64]int
	last   int64
}

func newBucketOracle(rules []redis.Rule) *bucketOracle {
	o := &bucketOracle{rules: rules}
	for range rules {
		o.counts = append(o.counts, map[int64]int{})
	}
	return o
}

// shape returns a rule's precision p and counter count k, in microseconds.
func shape(r redis.Rule) (p, k int64) {
	p = r.Precision.Microseconds()
	w := r.Window.Microseconds()
	return p, (w + p - 1) / p
}

// used is the cost rule i counts at t: its sub-windows b-k+1 .. b.
func (o *bucketOracle) used(i int, t int64) int {
	p, k := shape(o.rules[i])
	b := t / p
	sum := 0
	for j := b - k + 1; j <= b; j++ {
		sum += o.counts[i][j]
	}
	return sum
}

// allowN decides n at now (µs) as NewBuckets must: admitted, the instant
// decided at, ready (-1: never) and the remaining cost per rule afterwards.
func (o *bucketOracle) allowN(now int64, n int) (ok bool, at, ready int64, rem []int) {
	t := max(now, o.last)
	ok, ready = true, t
	for i, r := range o.rules {
		if n > r.Limit {
			ok, ready = false, -1
			continue
		}
		if n == 0 || o.used(i, t)+n <= r.Limit {
			continue
		}
		ok = false
		if ready < 0 {
			continue
		}
		// The first start of a sub-window at which n fits, nothing else
		// admitted meanwhile.
		p, _ := shape(r)
		u := (t/p + 1) * p
		for o.used(i, u)+n > r.Limit {
			u += p
		}
		ready = max(ready, u)
	}
	if ok && n > 0 {
		for i, r := range o.rules {
			p, _ := shape(r)
			o.counts[i][t/p] += n
		}
		o.last = t
	}
	for i, r := range o.rules {
		rem = append(rem, max(r.Limit-o.used(i, t), 0))
	}
	return ok, t, ready, rem
}

// Fits reports whether allowN(now, n) would admit, changing nothing.
func (o *bucketOracle) Fits(now int64, n int) bool {
	t := max(now, o.last)
	for i, r := range o.rules {
		if n > r.Limit || (n > 0 && o.used(i, t)+n > r.Limit) {
			return false
		}
	}
	return true
}

// Record applies a decision taken by the limiter the oracle shadows: an
// admission of n at now (moved up to the latest admission, as allowN does).
func (o *bucketOracle) Record(now int64, n int, admitted bool) {
	if !admitted || n <= 0 {
		return
	}
	t := max(now, o.last)
	for i, r := range o.rules {
		p, _ := shape(r)
		o.counts[i][t/p] += n
	}
	o.last = t
}

// bucketRuleSets are NewBuckets' replayed configurations: a window a multiple
// of its precision and one not, a fixed window, several rules at once, and a
// limit ten times its counters.
var bucketRuleSets = [][]redis.Rule{
	{{Limit: 20, Window: 100 * time.Millisecond, Precision: 10 * time.Millisecond}},
	{{Limit: 20, Window: 100 * time.Millisecond, Precision: 30 * time.Millisecond}},
	{{Limit: 10, Window: 50 * time.Millisecond, Precision: 50 * time.Millisecond}},
	{{Limit: 5, Window: 10 * time.Millisecond, Precision: time.Millisecond}, {Limit: 20, Window: 100 * time.Millisecond, Precision: 7 * time.Millisecond}, {Limit: 30, Window: time.Second, Precision: time.Second}},
	{{Limit: 100, Window: time.Second, Precision: 100 * time.Millisecond}},
}

// replayBuckets runs every workload through NewBuckets on c and the oracle,
// one key per workload: every decision, instant, ready and remaining must be
// identical, CheckN must answer what AllowN then decides, and the admissions
// must keep the bound: in every window of a rule's length, at most its limit
// plus the largest cost admitted in one of its sub-windows.
func replayBuckets(t *testing.T, c redis.Client) {
	const seed = 20261123
	t.Logf("seed %d", seed)
	for ri, rules := range bucketRuleSets {
		l, err := redis.NewBuckets(c, testOptions(redis.Options{Prefix: "bkt" + strconv.Itoa(ri)}), rules...)
		require.NoError(t, err)
		wl := workloads(seed+uint64(ri), rules[0].Limit, rules[0].Window)
		names := make([]string, 0, len(wl))
		for name := range wl {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			o := newBucketOracle(rules)
			var stamps []oracle.Stamp
			admitted, refused := 0, 0
			for i, cl := range wl[name] {
				where := fmt.Sprintf("rules %d %s step %d: t=%d n=%d", ri, name, i, cl.t-epoch, cl.n)
				chk, err := l.CheckN(ctxT(t), name, at(cl.t), cl.n)
				require.NoError(t, err, where)
				d, err := l.AllowN(ctxT(t), name, at(cl.t), cl.n)
				require.NoError(t, err, where)
				before := append([]int(nil), d.Remaining...)
				if d.Allowed && cl.n > 0 {
					for r := range before {
						before[r] += cl.n
					}
				}
				require.Equal(t, fmt.Sprint(d.Allowed, d.At, d.ReadyAt, before), fmt.Sprint(chk.Allowed, chk.At, chk.ReadyAt, chk.Remaining), "%s: CheckN, then AllowN", where)
				ok, atUS, ready, rem := o.allowN(cl.t, cl.n)
				requireDecision(t, where, d, ok, atUS, ready, rem)
				if ok {
					admitted++
					if cl.n > 0 {
						stamps = append(stamps, oracle.Stamp{At: atUS, Cost: int64(cl.n)})
					}
				} else {
					refused++
				}
			}
			require.Positive(t, admitted, "rules %d %s", ri, name)
			require.Positive(t, refused, "rules %d %s", ri, name)
			for _, r := range rules {
				p, _ := shape(r)
				perSub := map[int64]int64{}
				var most int64
				for _, s := range stamps {
					perSub[s.At/p] += s.Cost
					most = max(most, perSub[s.At/p])
				}
				got := oracle.MaxInWindow(stamps, r.Window.Microseconds())
				require.LessOrEqualf(t, got, int64(r.Limit)+most, "rules %d %s rule %+v: %d in one window, above the limit plus the most in one sub-window (%d)", ri, name, r, got, most)
			}
		}
	}
}

// TestBucketsMatchOracle: NewBuckets on a real server decides every replayed
// call as the naive sub-window model, for one rule and several, and keeps the
// bound on over-admission.
func TestBucketsMatchOracle(t *testing.T) {
	_, _, c := standalone(t)
	replayBuckets(t, c)
}

// TestBucketsCluster: the same replays on a three-master cluster.
func TestBucketsCluster(t *testing.T) {
	_, c := clusterClient(t, redistest.StartCluster(t))
	replayBuckets(t, c)
}

// TestBucketsBoundIsReached: the bound is tight. The limit admitted in the
// last microsecond of a rule's first sub-window and the limit again at the
// start of the sub-window where that one leaves the count are 2*limit within
// one window's length: with a fixed window (precision == window) and with ten
// sub-windows alike.
func TestBucketsBoundIsReached(t *testing.T) {
	_, _, c := standalone(t)
	const limit = 10
	w := time.Second
	for _, p := range []time.Duration{w, w / 10} {
		l, err := redis.NewBuckets(c, testOptions(redis.Options{Prefix: "tight" + p.String()}), redis.Rule{Limit: limit, Window: w, Precision: p})
		require.NoError(t, err)
		second := at(epoch).Add(w) // epoch is a multiple of w
		var stamps []oracle.Stamp
		for _, x := range []time.Time{at(epoch).Add(p - time.Microsecond), second} {
			d, err := l.AllowN(t.Context(), "k", x, limit)
			require.NoError(t, err)
			require.True(t, d.Allowed, "precision %v: AllowN(%v, limit)", p, x.Sub(at(epoch)))
			stamps = append(stamps, oracle.Stamp{At: x.UnixMicro(), Cost: limit})
		}
		require.EqualValues(t, 2*limit, oracle.MaxInWindow(stamps, w.Microseconds()), "precision %v", p)
		d, err := l.AllowN(t.Context(), "k", second.Add(p-time.Microsecond), 1)
		require.NoError(t, err)
		require.False(t, d.Allowed, "precision %v: the second burst's sub-window counts to its end", p)
		require.Equal(t, second.Add(w), d.ReadyAt, "precision %v: ReadyAt is when the second burst's sub-window leaves", p)
	}
}

// TestBucketsLayout: a limit of a million per hour with one-minute precision
// costs 16 + 16*60 bytes per key in Redis, whatever the limit; the key
// expires when its newest sub-window leaves the window (or after MinTTL); a
// refused call writes nothing.
func TestBucketsLayout(t *testing.T) {
	s, _, c := standalone(t)
	do := func(args ...string) int {
		out, err := redistest.Do(s.Addr(), args...)
		require.NoError(t, err)
		v, err := strconv.Atoi(out)
		require.NoError(t, err, "%v answered %q", args, out)
		return v
	}
	l, err := redis.NewBuckets(c, redis.Options{}, redis.Rule{Limit: 1_000_000, Window: time.Hour, Precision: time.Minute})
	require.NoError(t, err)
	now := at(epoch).Add(90 * time.Second) // half way through the second minute
	d, err := l.AllowN(t.Context(), "k", now, 1_000_000)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, []int{0}, d.Remaining)
	rk, err := redis.RedisKey(l, "k")
	require.NoError(t, err)
	require.Equal(t, 16+16*60, do("STRLEN", rk))
	// The minute [60 s, 120 s) leaves the hour at 3660 s: 3570 s from now.
	require.InDelta(t, 3570_002, do("PTTL", rk), 50, "key TTL")
	d, err = l.AllowN(t.Context(), "k", now.Add(time.Second), 1)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	require.Equal(t, now.Add(-30*time.Second+time.Hour), d.ReadyAt)
	require.InDelta(t, 3570_002, do("PTTL", rk), 1000, "a refused call must not extend the TTL")

	long, err := redis.NewBuckets(c, redis.Options{Prefix: "long", MinTTL: 2 * time.Hour}, redis.Rule{Limit: 1, Window: time.Minute, Precision: time.Second})
	require.NoError(t, err)
	_, err = long.AllowN(t.Context(), "k", now, 1)
	require.NoError(t, err)
	rk, err = redis.RedisKey(long, "k")
	require.NoError(t, err)
	require.InDelta(t, 7200_002, do("PTTL", rk), 50, "key TTL with MinTTL")
}

// TestBucketsErrors: a precision out of range, or one given to another kind,
// is refused with an error naming the rule and the value.
func TestBucketsErrors(t *testing.T) {
	_, _, c := standalone(t)
	for _, tc := range []struct {
		rule redis.Rule
		want string
	}{
		{redis.Rule{Limit: 1, Window: time.Second}, "redis: rule 0: precision must be a whole number of microseconds between 1µs and the window 1s, got 0s"},
		{redis.Rule{Limit: 1, Window: time.Second, Precision: -time.Second}, "got -1s"},
		{redis.Rule{Limit: 1, Window: time.Second, Precision: 2 * time.Second}, "got 2s"},
		{redis.Rule{Limit: 1, Window: time.Second, Precision: 1500 * time.Nanosecond}, "got 1.5µs"},
		{redis.Rule{Limit: 1, Window: time.Second, Precision: time.Millisecond}, "redis: rule 0: precision 1ms splits the window 1s into 1000 counters"},
		{redis.Rule{Limit: 1, Window: 1025 * time.Millisecond, Precision: time.Millisecond}, "into 1025 counters, more than 1024"},
		{redis.Rule{Limit: redis.MaxWindowLimit + 1, Window: time.Second, Precision: time.Second}, "limit must be between 1 and 67108863"},
	} {
		l, err := redis.NewBuckets(c, redis.Options{}, tc.rule)
		if tc.rule.Precision == time.Millisecond && tc.rule.Window == time.Second {
			require.NoError(t, err, "1000 counters are allowed")
			continue
		}
		require.ErrorContains(t, err, tc.want, "%+v", tc.rule)
		require.Nil(t, l)
	}
	for _, f := range []func(redis.Client, redis.Options, ...redis.Rule) (*redis.Limiter, error){redis.NewLog, redis.NewWindow} {
		l, err := f(c, redis.Options{}, redis.Rule{Limit: 1, Window: time.Second}, redis.Rule{Limit: 1, Window: time.Second, Precision: time.Second})
		require.ErrorContains(t, err, "redis: rule 1: precision is for NewBuckets only and must be 0 here, got 1s")
		require.Nil(t, l)
	}
	_, err := redis.NewBuckets(c, redis.Options{OnError: redis.FallBack, Fallback: []redis.Rule{{Limit: 1, Window: time.Second, Precision: time.Second}}},
		redis.Rule{Limit: 1, Window: time.Second, Precision: time.Second})
	require.ErrorContains(t, err, "redis: fallback rule 0: precision is for NewBuckets only")
}

// TestBucketsConformance runs the parts of the shared suite that hold for
// any model on NewBuckets (precision a third of the window, rounded up, so
// that most windows are not a multiple of it): edges, time going backwards,
// ReadyAt, TokensAt, a refusal writing nothing. Its decisions follow neither
// the log nor the two-counter formula; TestBucketsMatchOracle replays them
// against their own model.
func TestBucketsConformance(t *testing.T) {
	_, _, c := standalone(t)
	opts := suiteOptions(t, c, false)
	newRules := func(rules ...conformance.Rule) (conformance.Limiter, error) {
		rs := make([]redis.Rule, len(rules))
		for i, r := range rules {
			w := r.Window * 1000 // ns of the suite, µs in Redis
			rs[i] = redis.Rule{Limit: r.Limit, Window: w, Precision: (w/time.Microsecond + 2) / 3 * time.Microsecond}
		}
		l, err := redis.NewBuckets(c, testOptions(redis.Options{Prefix: "conformance"}), rs...)
		if err != nil {
			return nil, err
		}
		return &adapter{t: t, ctx: t.Context(), l: l, key: fmt.Sprint("b", suiteKeys.Add(1))}, nil
	}
	opts.NewRules = newRules
	opts.New = func(limit int, window time.Duration) (conformance.Limiter, error) {
		return newRules(conformance.Rule{Limit: limit, Window: window})
	}
	reason := "sub-window counters follow neither the sliding log nor the two-counter formula: TestBucketsMatchOracle replays them against their own model"
	opts.Skip["Oracle"] = reason
	opts.Skip["OracleRules"] = reason
	conformance.Run(t, opts)
}

// TestOutsideBuckets: 8 goroutines on one key, weighted calls, caller-given
// increasing instants: from the instants the script returns, no window of a
// rule's length holds more than its limit plus the most admitted in one of
// its sub-windows.
func TestOutsideBuckets(t *testing.T) {
	_, _, c := standalone(t)
	rules := []redis.Rule{{Limit: 8, Window: 10 * time.Millisecond, Precision: 3 * time.Millisecond}, {Limit: 20, Window: 50 * time.Millisecond, Precision: 50 * time.Millisecond}}
	l, err := redis.NewBuckets(c, testOptions(redis.Options{}), rules...)
	require.NoError(t, err)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	const goroutines, calls = 8, 150
	recs := make([][]oracle.Stamp, goroutines)
	var clock, done = make(chan int64, 1), make(chan struct{}, goroutines)
	clock <- epoch
	for g := range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for range calls {
				now := <-clock + rng.Int64N(400)
				clock <- now
				n := 1 + rng.IntN(3)
				d, err := l.AllowN(t.Context(), "k", at(now), n)
				if err != nil {
					t.Errorf("goroutine %d: %v", g, err)
					return
				}
				if d.Allowed {
					recs[g] = append(recs[g], oracle.Stamp{At: d.At.UnixMicro(), Cost: int64(n)})
				}
			}
		}()
	}
	for range goroutines {
		<-done
	}
	var stamps []oracle.Stamp
	for _, r := range recs {
		stamps = append(stamps, r...)
	}
	require.NotEmpty(t, stamps)
	for _, r := range rules {
		p, _ := shape(r)
		perSub := map[int64]int64{}
		var most, total int64
		for _, s := range stamps {
			perSub[s.At/p] += s.Cost
			most = max(most, perSub[s.At/p])
			total += s.Cost
		}
		got := oracle.MaxInWindow(stamps, r.Window.Microseconds())
		require.LessOrEqualf(t, got, int64(r.Limit)+most, "seed %d rule %+v: %d in one window", seed, r, got)
		for sub, cost := range perSub {
			require.LessOrEqualf(t, cost, int64(r.Limit), "seed %d rule %+v: sub-window %d admitted %d", seed, r, sub, cost)
		}
	}
}

// bucketBound returns, for stamps admitted by one rule of NewBuckets, the
// largest cost in any window of its length and the bound on it: the limit
// plus the most admitted in one sub-window.
func bucketBound(s []oracle.Stamp, r redis.Rule) (got, bound int64) {
	p := r.Precision.Microseconds()
	perSub := map[int64]int64{}
	var most int64
	for _, x := range s {
		perSub[x.At/p] += x.Cost
		most = max(most, perSub[x.At/p])
	}
	return oracle.MaxInWindow(s, r.Window.Microseconds()), int64(r.Limit) + most
}

// TestOutsideBucketsFaults: NewBuckets on the server's clock under 8
// goroutines: SCRIPT FLUSH in the middle costs no error; a server killed in
// the middle and restarted empty makes fail closed answer errors and admit
// nothing, and Redis decides again after the restart. The admissions Redis
// made keep the bound throughout.
func TestOutsideBucketsFaults(t *testing.T) {
	s, _, c := standalone(t)
	rule := redis.Rule{Limit: 20, Window: 50 * time.Millisecond, Precision: 10 * time.Millisecond}
	l, err := redis.NewBuckets(c, redis.Options{Timeout: 200 * time.Millisecond}, rule)
	require.NoError(t, err)
	check := func(what string, ds []redis.Decision) map[redis.Source][]oracle.Stamp {
		bySrc := split(ds)
		got, bound := bucketBound(bySrc[redis.FromRedis], rule)
		require.LessOrEqual(t, got, bound, "%s: admitted in one window", what)
		return bySrc
	}

	flush := func() {
		_, err := redistest.Do(s.Addr(), "SCRIPT", "FLUSH")
		require.NoError(t, err)
	}
	bySrc := check("flush", load(t, l, "flush", 8, 60, flush))
	require.Len(t, bySrc, 1, "every call decided by Redis: %v", keys(bySrc))

	bySrc = check("kill", load(t, l, "kill", 8, 40, s.Stop))
	require.NotEmpty(t, bySrc[redis.FromError], "the server was down for half the calls")
	s.Restart()
	var after []redis.Decision
	require.Eventually(t, func() bool {
		ds := load(t, l, "kill", 8, 20, nil)
		after = append(after, ds...)
		for _, d := range ds {
			if d.Source != redis.FromRedis {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "Redis never decided a whole load again after the restart")
	require.NotEmpty(t, check("after the restart", after)[redis.FromRedis])
}
