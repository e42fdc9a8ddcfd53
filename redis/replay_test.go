package redis_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	benchreplay "github.com/slidelimit/slidelimit/internal/replay"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/window"
)

// ruleSets are the replayed configurations: one rule, and several at once.
var ruleSets = [][]redis.Rule{
	{{Limit: 20, Window: 100 * time.Millisecond}},
	{{Limit: 5, Window: 10 * time.Millisecond}, {Limit: 20, Window: 100 * time.Millisecond}},
	{{Limit: 3, Window: 7 * time.Millisecond}, {Limit: 10, Window: 50 * time.Millisecond}, {Limit: 40, Window: time.Second}},
}

// replay runs every workload through a Redis limiter and its oracle, one key
// per workload, and requires every decision to be identical: admitted, the
// instant decided at, when the cost would fit, and the remaining cost per
// rule. Each call is preceded by CheckN at the same instant, which must answer
// what AllowN then decides (so it wrote nothing).
func replay(t *testing.T, c redis.Client, exact bool) {
	const seed = 20260101
	t.Logf("seed %d", seed)
	for ri, rules := range ruleSets {
		var l *redis.Limiter
		if exact {
			l = mustLog(t, c, redis.Options{Prefix: fmt.Sprintf("replay%d", ri)}, rules...)
		} else {
			l = mustWindow(t, c, redis.Options{Prefix: fmt.Sprintf("replay%d", ri)}, rules...)
		}
		wl := workloads(seed+uint64(ri), rules[0].Limit, rules[0].Window)
		names := make([]string, 0, len(wl))
		for name := range wl {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			lo := &logOracle{rules: rules}
			wo := &windowOracle{rules: rules}
			twin := inProcessTwin(t, rules, exact)
			key := "key-" + name
			admitted, refused := 0, 0
			for i, cl := range wl[name] {
				chk, err := l.CheckN(ctxT(t), key, at(cl.t), cl.n)
				require.NoError(t, err, "rules %d %s step %d: CheckN", ri, name, i)
				d, err := l.AllowN(ctxT(t), key, at(cl.t), cl.n)
				require.NoError(t, err, "rules %d %s step %d", ri, name, i)
				// CheckN wrote nothing and answered what AllowN then did;
				// its Remaining is the state before the admission.
				before := append([]int(nil), d.Remaining...)
				if d.Allowed {
					for r := range before {
						before[r] += cl.n
					}
				}
				if chk.Allowed != d.Allowed || !chk.At.Equal(d.At) || !chk.ReadyAt.Equal(d.ReadyAt) || fmt.Sprint(chk.Remaining) != fmt.Sprint(before) {
					t.Fatalf("rules %d %s step %d: CheckN(t=%d, n=%d) = %+v, then AllowN = %+v", ri, name, i, cl.t-epoch, cl.n, chk, d)
				}
				var ok bool
				var atUS, ready int64
				var rem []int
				if exact {
					ok, atUS, ready, rem = lo.allowN(cl.t, cl.n)
				} else {
					atUS = cl.t
					ok, ready, rem = wo.allowN(cl.t, cl.n)
				}
				gotReady := int64(-1)
				if !d.ReadyAt.IsZero() {
					gotReady = d.ReadyAt.UnixMicro()
				}
				if d.Allowed != ok || d.At.UnixMicro() != atUS || gotReady != ready || fmt.Sprint(d.Remaining) != fmt.Sprint(rem) {
					t.Fatalf("rules %d %s step %d: AllowN(t=%d, n=%d) = {allowed %v at %d ready %d remaining %v}, oracle {allowed %v at %d ready %d remaining %v}",
						ri, name, i, cl.t-epoch, cl.n, d.Allowed, d.At.UnixMicro()-epoch, gotReady-epoch, d.Remaining,
						ok, atUS-epoch, ready-epoch, rem)
				}
				if twin != nil && twin(at(cl.t), cl.n) != d.Allowed {
					t.Fatalf("rules %d %s step %d: AllowN(t=%d, n=%d) = %v, the in-process limiter says %v",
						ri, name, i, cl.t-epoch, cl.n, d.Allowed, !d.Allowed)
				}
				if ok {
					admitted++
				} else {
					refused++
				}
			}
			// A replay that only admits or only refuses proves little.
			require.Positive(t, admitted, "rules %d %s", ri, name)
			require.Positive(t, refused, "rules %d %s", ri, name)
		}
	}
}

// TestLogMatchesOracle: the exact log on a real server decides every replayed
// call exactly as the naive sliding log, for one rule and several.
func TestLogMatchesOracle(t *testing.T) {
	_, _, c := standalone(t)
	replay(t, c, true)
}

// TestWindowMatchesFormula: the two-counter window decides every replayed
// call as the exact integer formula does, rule by rule, all or nothing.
func TestWindowMatchesFormula(t *testing.T) {
	_, _, c := standalone(t)
	replay(t, c, false)
}

// TestWindowExactAtExtremes: with limits near MaxWindowLimit and windows near
// MaxWindow the formula's products reach 2^76, far beyond a Lua double; the
// script's two-limb arithmetic still decides every call as the big-integer
// formula does.
func TestWindowExactAtExtremes(t *testing.T) {
	_, _, c := standalone(t)
	rules := []redis.Rule{
		{Limit: redis.MaxWindowLimit, Window: redis.MaxWindow},
		{Limit: 50_000_017, Window: 3*time.Hour + 7*time.Microsecond},
	}
	l := mustWindow(t, c, redis.Options{Prefix: "extreme"}, rules...)
	o := &windowOracle{rules: rules}
	r := rand.New(rand.NewPCG(7, 11))
	tm := epoch
	admitted, refused := 0, 0
	for i := range 400 {
		tm += r.Int64N(int64(2 * time.Hour / time.Microsecond))
		n := 1 + r.IntN(30_000_000)
		d, err := l.AllowN(t.Context(), "k", at(tm), n)
		require.NoError(t, err)
		ok, ready, rem := o.allowN(tm, n)
		gotReady := int64(-1)
		if !d.ReadyAt.IsZero() {
			gotReady = d.ReadyAt.UnixMicro()
		}
		require.Equal(t, ok, d.Allowed, "step %d", i)
		require.Equal(t, ready, gotReady, "step %d: ready", i)
		require.Equal(t, rem, d.Remaining, "step %d: remaining", i)
		if ok {
			admitted++
		} else {
			refused++
		}
	}
	require.Positive(t, admitted)
	require.Positive(t, refused)

	// A call the formula refuses by one part in 2^75: limit L = 2^25-1
	// admitted in one window of W = 2^50 µs, then one more unit at
	// elapsed 2^25+1 into the next: L*(W-el) = (L-1)*W + 1. In doubles the
	// +1 is lost and the call would be admitted. One microsecond later it
	// fits exactly.
	const L = 1<<25 - 1
	edge := mustWindow(t, c, redis.Options{Prefix: "edge"}, redis.Rule{Limit: L, Window: redis.MaxWindow})
	d, err := edge.AllowN(t.Context(), "k", at(epoch), L)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	t1 := epoch + 1<<50 + 1<<25 + 1
	d, err = edge.AllowN(t.Context(), "k", at(t1), 1)
	require.NoError(t, err)
	require.False(t, d.Allowed, "L*(W-el) = (L-1)*W + 1 must be refused")
	require.Equal(t, t1+1, d.ReadyAt.UnixMicro())
	d, err = edge.AllowN(t.Context(), "k", at(t1+1), 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
}

// TestLogLargeRing: a log longer than 8 KiB is read with GETRANGE and
// written in place with SETRANGE, unlike the short logs of the other
// replays; weighted calls wrap its ring many times, splitting writes at the
// wrap, and every decision stays the oracle's.
func TestLogLargeRing(t *testing.T) {
	_, _, c := standalone(t)
	rules := []redis.Rule{{Limit: 1400, Window: 100 * time.Millisecond}, {Limit: 700, Window: 30 * time.Millisecond}}
	l := mustLog(t, c, redis.Options{Prefix: "large"}, rules...)
	o := &logOracle{rules: rules}
	r := rand.New(rand.NewPCG(3, 5))
	tm := epoch
	admitted, refused, units := 0, 0, 0
	for i := range 600 {
		tm += r.Int64N(20000)
		if r.IntN(10) == 0 {
			tm -= r.Int64N(5000) // stale
		}
		n := r.IntN(320)
		d, err := l.AllowN(t.Context(), "k", at(tm), n)
		require.NoError(t, err)
		ok, atUS, ready, rem := o.allowN(tm, n)
		requireDecision(t, fmt.Sprintf("step %d: AllowN(t=%d, n=%d)", i, tm-epoch, n), d, ok, atUS, ready, rem)
		if ok {
			admitted++
			units += n
		} else {
			refused++
		}
	}
	require.Positive(t, refused)
	require.Greater(t, units, 10*1400, "the ring must wrap many times (admitted %d calls)", admitted)

	// A long log reads its newest 128 stamps at once and the others one
	// or a range at a time: single units walk the count in the window up
	// through 128 and, as they leave the window one by one, down through it
	// again, on a ring that wraps meanwhile.
	o = &logOracle{rules: rules}
	tm = epoch
	for i := range 2400 {
		n := 1
		if i >= 1600 {
			n = 0 // only the stamps leaving the window move the count
		}
		if i < 1600 || i%2 == 0 {
			tm += 90
		} else {
			tm += 260
		}
		d, err := l.AllowN(t.Context(), "walk", at(tm), n)
		require.NoError(t, err)
		ok, atUS, ready, rem := o.allowN(tm, n)
		requireDecision(t, fmt.Sprintf("walk %d: AllowN(t=%d, n=%d)", i, tm-epoch, n), d, ok, atUS, ready, rem)
	}
}

// inProcessTwin returns the in-process limiter of the core module that the
// Redis limiter claims to decide like: multi's exact limiter for the log,
// window's for a one-rule window. Several window rules have no twin: multi's
// approximate flavour clamps stale instants to the latest admission, not to
// each rule's window start.
func inProcessTwin(t *testing.T, rules []redis.Rule, exact bool) func(time.Time, int) bool {
	t.Helper()
	if exact {
		mr := make([]multi.Rule, len(rules))
		for i, r := range rules {
			mr[i] = multi.Rule{Limit: r.Limit, Window: r.Window}
		}
		m, err := multi.New(mr...)
		require.NoError(t, err)
		return m.AllowN
	}
	if len(rules) == 1 {
		w, err := window.New(rules[0].Limit, rules[0].Window)
		require.NoError(t, err)
		return w.AllowN
	}
	return nil
}

// TestLogRebase: the log stores 6-byte offsets from a per-key base and
// re-bases a key whose base falls more than 2^47-2 µs behind; caller instants
// that jump by up to 2^47 µs (4.5 years) at a time, with the longest window
// a log takes, keep every decision the oracle's, for a ring read whole and
// one read with GETRANGE.
func TestLogRebase(t *testing.T) {
	_, gc, c := standalone(t)
	for _, rules := range [][]redis.Rule{
		{{Limit: 3, Window: redis.MaxLogWindow}, {Limit: 5, Window: time.Second}},
		{{Limit: 1400, Window: redis.MaxLogWindow}, {Limit: 700, Window: time.Second}},
	} {
		l := mustLog(t, c, redis.Options{Prefix: fmt.Sprintf("rebase%d", rules[0].Limit)}, rules...)
		o := &logOracle{rules: rules}
		r := rand.New(rand.NewPCG(uint64(rules[0].Limit), 9))
		tm := epoch
		jumps, admitted, refused := 0, 0, 0
		for i := range 400 {
			switch x := r.IntN(100); {
			case x < 2 && jumps < 8:
				tm += 1<<47 - r.Int64N(1000) // just short of, or past, the base's range
				jumps++
			case x < 4 && jumps < 8:
				tm += 1<<46 + r.Int64N(3)
				jumps++
			default:
				tm += r.Int64N(300_000)
			}
			now := tm
			if r.IntN(10) == 0 {
				now -= r.Int64N(1 << 30)
			}
			n := r.IntN(rules[0].Limit/2 + 2)
			d, err := l.AllowN(t.Context(), "k", at(now), n)
			require.NoError(t, err)
			ok, atUS, ready, rem := o.allowN(now, n)
			requireDecision(t, fmt.Sprintf("step %d: AllowN(t=%d, n=%d)", i, now-epoch, n), d, ok, atUS, ready, rem)
			if ok {
				admitted++
			} else {
				refused++
			}
		}
		require.Equal(t, 8, jumps)
		// Inside view: the key was re-based (its base is no longer the
		// instant of its first admission).
		rk, err := redis.RedisKey(l, "k")
		require.NoError(t, err)
		hdr, err := gc.GetRange(t.Context(), rk, 0, 7).Result()
		require.NoError(t, err)
		base := math.Float64frombits(binary.LittleEndian.Uint64([]byte(hdr)))
		require.Greater(t, int64(base), epoch+1<<46, "the key was never re-based")
		require.Positive(t, admitted)
		require.Positive(t, refused)
	}
}

// TestBenchWorkloads: every accuracy workload of the comparison (package
// internal/replay, the in-process table's) replayed with caller-given
// instants, stale ones included, through the log and the window, for the
// comparison's rule (100 per second) and for it with a tighter second rule:
// every decision, instant, ready and remaining identical to the naive
// sliding log (the log) or to the exact formula (the window), all or
// nothing, and every decision to the in-process twin's.
func TestBenchWorkloads(t *testing.T) {
	_, _, c := standalone(t)
	sets := [][]redis.Rule{
		{{Limit: benchreplay.Limit, Window: benchreplay.Window}},
		{{Limit: benchreplay.Limit, Window: benchreplay.Window}, {Limit: 15, Window: 100 * time.Millisecond}},
	}
	for _, exact := range []bool{true, false} {
		for si, rules := range sets {
			// The four replays are independent (keys of their own) and
			// mostly wait for round trips: run them at once.
			t.Run(fmt.Sprintf("exact=%v/rules=%d", exact, len(rules)), func(t *testing.T) {
				t.Parallel()
				mk := mustWindow
				if exact {
					mk = mustLog
				}
				l := mk(t, c, redis.Options{Prefix: fmt.Sprintf("bench%d", si)}, rules...)
				for _, w := range benchreplay.Workloads() {
					replayBench(t, l, rules, exact, w)
				}
			})
		}
	}
}

// replayBench replays w through l, with caller-given instants, on a key of
// its own, and requires every decision to be the oracle's and the in-process
// twin's.
func replayBench(t *testing.T, l *redis.Limiter, rules []redis.Rule, exact bool, w benchreplay.Workload) {
	t.Helper()
	lo := &logOracle{rules: rules}
	wo := &windowOracle{rules: rules}
	twin := inProcessTwin(t, rules, exact)
	admitted, refused := 0, 0
	for i, cl := range w.Calls {
		tm := epoch + cl.Presented().Microseconds()
		d, err := l.AllowN(ctxT(t), w.Name, at(tm), cl.N)
		require.NoError(t, err, "%s step %d", w.Name, i)
		var ok bool
		var atUS, ready int64
		var rem []int
		if exact {
			ok, atUS, ready, rem = lo.allowN(tm, cl.N)
		} else {
			atUS = tm
			ok, ready, rem = wo.allowN(tm, cl.N)
		}
		what := fmt.Sprintf("%s step %d: AllowN(t=%d, n=%d)", w.Name, i, tm-epoch, cl.N)
		requireDecision(t, what, d, ok, atUS, ready, rem)
		if twin != nil && twin(at(tm), cl.N) != d.Allowed {
			t.Fatalf("%s = %v, the in-process limiter says %v", what, d.Allowed, !d.Allowed)
		}
		if ok {
			admitted++
		} else {
			refused++
		}
	}
	require.Positive(t, admitted, w.Name)
	t.Logf("%s: %d calls, %d admitted, %d refused", w.Name, len(w.Calls), admitted, refused)
}
