package multi_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slidelimit/slidelimit/multi"
)

// lim is the method set both flavours share.
type lim interface {
	Allow() bool
	AllowN(now time.Time, n int) bool
	TokensAt(now time.Time) int
	ReadyAt(now time.Time, n int) (time.Time, bool)
	IdleAt(now time.Time) bool
	Wait(ctx context.Context) error
	WaitN(ctx context.Context, n int) error
	MaxN() int
	LongestWindow() time.Duration
	Rules() []multi.Rule
}

var (
	_ lim = (*multi.Limiter)(nil)
	_ lim = (*multi.Approx)(nil)
)

// impls runs every shared test against both flavours (and their references).
var impls = []struct {
	name   string
	new    func(rules ...multi.Rule) (lim, error)
	oracle func(rules []multi.Rule) oracle
}{
	{
		name: "exact",
		new: func(rules ...multi.Rule) (lim, error) {
			l, err := multi.New(rules...)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
		oracle: func(rules []multi.Rule) oracle { return newLogOracle(rules) },
	},
	{
		name: "approx",
		new: func(rules ...multi.Rule) (lim, error) {
			l, err := multi.NewApprox(rules...)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
		oracle: func(rules []multi.Rule) oracle { return newApproxOracle(rules) },
	},
}

// remainingAt is l.RemainingAt, or nil, false for a flavour without it.
func remainingAt(l lim, at time.Time) ([]int, bool) {
	r, ok := l.(interface {
		RemainingAt(time.Time, []int) []int
	})
	if !ok {
		return nil, false
	}
	return r.RemainingAt(at, nil), true
}

func mustNew(t testing.TB, newf func(...multi.Rule) (lim, error), rules ...multi.Rule) lim {
	t.Helper()
	l, err := newf(rules...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestNewErrors checks what is multi's own in the constructors' errors: no
// rule at all, and the index of the bad rule among several (the shared
// suite checks one bad rule's limit and window).
func TestNewErrors(t *testing.T) {
	ms, s := time.Millisecond, time.Second
	many := func(k int) []multi.Rule {
		rs := make([]multi.Rule, k)
		for i := range rs {
			rs[i] = multi.Rule{Limit: 10 + i, Window: s}
		}
		return rs
	}
	for _, impl := range impls {
		maxLimit, maxWindow := multi.MaxLimit, multi.MaxWindow
		if impl.name == "approx" {
			maxLimit, maxWindow = multi.MaxApproxLimit, multi.MaxApproxWindow
		}
		wr := fmt.Sprintf("window must be between 1ns and %v, got", maxWindow)
		lr := fmt.Sprintf("limit must be between 1 and %d, got", maxLimit)
		tests := []struct {
			rules []multi.Rule
			want  string // "" for no error
		}{
			{nil, "multi: at least one rule is required, got none"},
			{[]multi.Rule{{10, s}, {-1, s}}, "multi: rule 1: " + lr + " -1"},
			{[]multi.Rule{{10, s}, {maxLimit + 1, s}}, "multi: rule 1: " + lr + " " + fmt.Sprint(maxLimit+1)},
			{[]multi.Rule{{10, s}, {5, ms}, {3, 0}}, "multi: rule 2: " + wr + " 0s"},
			{[]multi.Rule{{10, s}, {10, s}}, ""},       // duplicate
			{[]multi.Rule{{10, s}, {5, s}}, ""},        // redundant
			{[]multi.Rule{{3, maxWindow}, {1, 1}}, ""}, // extremes
			{many(multi.MaxRules), ""},
			{many(multi.MaxRules + 1), fmt.Sprintf("multi: at most %d rules are allowed, got %d", multi.MaxRules, multi.MaxRules+1)},
			{many(100_000), "multi: at most 64 rules are allowed, got 100000"},
		}
		for i, tt := range tests {
			l, err := impl.new(tt.rules...)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%s: case %d: New(%v) = %v, want no error", impl.name, i, tt.rules, err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("%s: case %d: New(%v) = %v, want %q", impl.name, i, tt.rules, err, tt.want)
			case tt.want != "" && l != nil:
				t.Errorf("%s: case %d: New(%v) returned a limiter with an error", impl.name, i, tt.rules)
			}
		}
	}
}

func TestAccessors(t *testing.T) {
	rules := []multi.Rule{{100, time.Hour}, {10, time.Second}, {50, time.Minute}}
	for _, impl := range impls {
		l := mustNew(t, impl.new, rules...)
		if l.MaxN() != 10 || l.LongestWindow() != time.Hour {
			t.Errorf("%s: MaxN, LongestWindow = %d, %v; want 10, 1h", impl.name, l.MaxN(), l.LongestWindow())
		}
		got := l.Rules()
		got[0].Limit = 7 // a copy
		if fmt.Sprint(l.Rules()) != fmt.Sprint(rules) {
			t.Errorf("%s: Rules() = %v, want %v", impl.name, l.Rules(), rules)
		}
	}
}

// step is one timed call: at t0+at, AllowN(n) must return want.
type step struct {
	at   time.Duration
	n    int
	want bool
}

func runSteps(t *testing.T, name string, l lim, t0 time.Time, steps []step) {
	t.Helper()
	for i, s := range steps {
		if got := l.AllowN(t0.Add(s.at), s.n); got != s.want {
			t.Errorf("%s: step %d: AllowN(t0+%v, %d) = %v, want %v", name, i, s.at, s.n, got, s.want)
		}
	}
}

func TestStepsExact(t *testing.T) {
	ms := time.Millisecond
	l, err := multi.New(multi.Rule{2, 10 * ms}, multi.Rule{3, 100 * ms})
	if err != nil {
		t.Fatal(err)
	}
	runSteps(t, "exact", l, time.Now(), []step{
		{0, 1, true},
		{0, 1, true},
		{0, 1, false},         // rule 0: 2 in 10ms
		{10*ms - 1, 1, false}, // the t0 units are still inside (t-10ms, t]
		{10 * ms, 1, true},    // ... and now outside; rule 1 holds 3
		{10 * ms, 1, false},   // rule 1 full, rule 0 would admit
		{50 * ms, 1, false},   // rule 1 still full
		{100 * ms, 1, true},   // t0's units leave rule 1's window
		{100 * ms, 2, false},  // rule 0: 1+2 > 2
		{50 * ms, 1, true},    // stale: decided at t0+100ms
		{50 * ms, 1, false},   // stale: rule 0 full at t0+100ms
		{0, 0, true},          // n == 0
		{0, -1, false},        // n < 0
		{0, 3, false},         // above the smallest limit
		{time.Hour, 2, true},  // everything has left
		{time.Hour + 5*ms, 1, false},
	})
}

func TestStepsApprox(t *testing.T) {
	ms := time.Millisecond
	l, err := multi.NewApprox(multi.Rule{4, 100 * ms}, multi.Rule{6, time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Both rules' windows start at the first admission, t0.
	runSteps(t, "approx", l, time.Now(), []step{
		{0, 2, true},
		{0, 2, true},
		{0, 1, false},           // A: curr 4+1 > 4
		{50 * ms, 1, false},     // same window of A
		{100 * ms, 1, false},    // A: 4*100 + 1*100 > 4*100
		{150 * ms, 1, true},     // A: 4*50 + 1*100 <= 400; B: 5 <= 6
		{150 * ms, 1, true},     // A: 4*50 + 2*100 <= 400; B: 6 <= 6
		{175 * ms, 1, false},    // B full; A (4*25 + 3*100 <= 400) must not count it
		{175 * ms, 1, false},    // again
		{time.Second, 1, false}, // A idle (new series); B: 6*1000 + 1*1000 > 6000
		{1500 * ms, 1, true},    // B: 6*500 + 1*1000 <= 6000; A new series at 1.5s
		{1500 * ms, 3, false},   // A: 4 <= 4, but B: 6*500 + 4*1000 > 6000
		{1500 * ms, 2, true},    // B: 6*500 + 3*1000 = 6000; A: 3 <= 4
		{1400 * ms, 1, false},   // stale, decided at 1.5s: B full
		{0, 0, true},
		{0, -1, false},
		{0, 5, false}, // above the smallest limit
		{10 * time.Second, 4, true},
	})
}

func TestReadyAtExact(t *testing.T) {
	ms := time.Millisecond
	l, _ := multi.New(multi.Rule{2, 10 * ms}, multi.Rule{3, 100 * ms})
	t0 := time.Now()
	l.AllowN(t0, 2)
	checkReady(t, "exact", l, t0, 0, 1, 10*ms, true)
	l.AllowN(t0.Add(10*ms), 1)
	checkReady(t, "exact", l, t0, 10*ms, 1, 100*ms, true) // rule 1 needs t0's units gone
	checkReady(t, "exact", l, t0, 10*ms, 2, 100*ms, true) // rule 0 at 20ms, rule 1 at 100ms
	checkReady(t, "exact", l, t0, 150*ms, 2, 150*ms, true)
	checkReady(t, "exact", l, t0, 10*ms, 0, 10*ms, true)
	checkReadyNever(t, "exact", l, t0, 3)
	checkReadyNever(t, "exact", l, t0, -1)
	if got := l.TokensAt(t0.Add(10 * ms)); got != 0 {
		t.Errorf("TokensAt(t0+10ms) = %d, want 0", got)
	}
	if got := l.TokensAt(t0.Add(20 * ms)); got != 0 {
		t.Errorf("TokensAt(t0+20ms) = %d, want 0 (rule 1)", got)
	}
	if got := l.TokensAt(t0.Add(100 * ms)); got != 2 {
		t.Errorf("TokensAt(t0+100ms) = %d, want 2", got)
	}
}

func TestReadyAtApprox(t *testing.T) {
	ms := time.Millisecond
	l, _ := multi.NewApprox(multi.Rule{4, 100 * ms}, multi.Rule{6, time.Second})
	t0 := time.Now()
	l.AllowN(t0, 4)
	// A's next window: 4*(100-e) + 1*100 <= 400 from e = 25ms.
	checkReady(t, "approx", l, t0, 0, 1, 125*ms, true)
	// n = 4: A admits it once its counters are both zero (t0+200ms), B
	// in its next window when 4*(1s-e) + 4*1s <= 6s: e >= 0.5s.
	checkReady(t, "approx", l, t0, 0, 4, 1500*ms, true)
	checkReady(t, "approx", l, t0, 0, 2, 150*ms, true)
	checkReady(t, "approx", l, t0, 130*ms, 1, 130*ms, true)
	checkReadyNever(t, "approx", l, t0, 5)
	if got := l.RemainingAt(t0.Add(150*ms), nil); fmt.Sprint(got) != "[2 2]" {
		t.Errorf("RemainingAt(t0+150ms) = %v, want [2 2]", got)
	}
	if got := l.TokensAt(t0.Add(150 * ms)); got != 2 {
		t.Errorf("TokensAt(t0+150ms) = %d, want 2", got)
	}
	// B: 6 at t0 = a full window. Its next window admits 1 when
	// 6*(1s-e) + 1s <= 6s: e >= 1s/6, rounded up to the nanosecond.
	l.AllowN(t0.Add(150*ms), 2)
	checkReady(t, "approx", l, t0, 150*ms, 1, time.Second+166666667, true)
}

func checkReady(t *testing.T, name string, l lim, t0 time.Time, at time.Duration, n int, want time.Duration, wantOK bool) {
	t.Helper()
	got, ok := l.ReadyAt(t0.Add(at), n)
	if ok != wantOK || got.Sub(t0) != want {
		t.Errorf("%s: ReadyAt(t0+%v, %d) = t0+%v, %v; want t0+%v, %v", name, at, n, got.Sub(t0), ok, want, wantOK)
	}
}

func checkReadyNever(t *testing.T, name string, l lim, t0 time.Time, n int) {
	t.Helper()
	if got, ok := l.ReadyAt(t0, n); ok || !got.IsZero() {
		t.Errorf("%s: ReadyAt(t0, %d) = %v, %v; want zero, false", name, n, got, ok)
	}
}

// TestRefusedCallChangesNothing (docs/multi.md, "All-or-nothing"): a call refused because one rule is
// full must leave every rule's state as it was, including the rules that
// would have admitted it. A twin limiter that never sees the refused calls
// must answer everything the same, now and later.
func TestRefusedCallChangesNothing(t *testing.T) {
	ms := time.Millisecond
	rules := []multi.Rule{{2, 10 * ms}, {5, time.Hour}, {3, 30 * ms}}
	for _, impl := range impls {
		l := mustNew(t, impl.new, rules...)
		twin := mustNew(t, impl.new, rules...)
		t0 := time.Now()
		l.AllowN(t0, 2)
		twin.AllowN(t0, 2)
		for i := range 100 {
			at := t0.Add(time.Duration(i) * 50 * time.Microsecond)
			var before []uint64
			if a, ok := l.(*multi.Approx); ok {
				before = multi.StateOf(a)
			}
			if l.AllowN(at, 1) {
				t.Fatalf("%s: AllowN(t0+%v, 1) admitted; rule 0 is full", impl.name, at.Sub(t0))
			}
			if a, ok := l.(*multi.Approx); ok {
				if after := multi.StateOf(a); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatalf("%s: refused call changed the state: %v -> %v", impl.name, before, after)
				}
			}
		}
		// Rule 1 (5 per hour) would have admitted every refused call; it
		// must still hold 2, so 3 remain at t0+20ms (rule 0 empty again).
		for _, p := range []lim{l, twin} {
			if got, ok := remainingAt(p, t0.Add(20*ms)); ok && fmt.Sprint(got) != "[2 3 1]" {
				t.Errorf("%s: RemainingAt(t0+20ms) = %v, want [2 3 1]", impl.name, got)
			}
			if got := p.TokensAt(t0.Add(20 * ms)); got != 1 {
				t.Errorf("%s: TokensAt(t0+20ms) = %v, want 1", impl.name, got)
			}
		}
		compareTwins(t, impl.name, l, twin, t0, 7)
	}
}

// compareTwins drives two limiters with the same random calls and requires
// the same answers from every method.
func compareTwins(t *testing.T, name string, a, b lim, t0 time.Time, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	at := t0
	for i := range 2000 {
		at = at.Add(time.Duration(rng.IntN(int(3 * time.Millisecond))))
		n := 1 + rng.IntN(2)
		if ga, gb := a.TokensAt(at), b.TokensAt(at); ga != gb {
			t.Fatalf("%s: call %d: TokensAt %d and %d", name, i, ga, gb)
		}
		ga, _ := remainingAt(a, at)
		gb, _ := remainingAt(b, at)
		if fmt.Sprint(ga) != fmt.Sprint(gb) {
			t.Fatalf("%s: call %d: RemainingAt %v and %v", name, i, ga, gb)
		}
		ra, _ := a.ReadyAt(at, n)
		rb, _ := b.ReadyAt(at, n)
		if !ra.Equal(rb) {
			t.Fatalf("%s: call %d: ReadyAt t0+%v and t0+%v", name, i, ra.Sub(t0), rb.Sub(t0))
		}
		if ga, gb := a.AllowN(at, n), b.AllowN(at, n); ga != gb {
			t.Fatalf("%s: call %d: AllowN %v and %v", name, i, ga, gb)
		}
	}
}

// TestOracleSerial replays random call sequences, with stale instants, bad n
// and long gaps, through both flavours and their naive references, and
// requires every answer to match. Seeds are fixed and named in failures.
func TestOracleSerial(t *testing.T) {
	ruleSets := [][]multi.Rule{
		{{1, 10}},
		{{3, 100}, {5, 1000}},
		{{2, 10}, {2, 10}},
		{{5, 100}, {2, 100}, {7, 1000}},
		{{10, 1000}, {1, 7}, {4, 50}, {20, 5000}},
		// More rules than Approx keeps on the stack.
		{{9, 90}, {3, 10}, {4, 20}, {5, 30}, {6, 40}, {7, 50}, {8, 60}, {9, 70}, {10, 80}, {20, 1000}},
	}
	for _, impl := range impls {
		for si, rules := range ruleSets {
			for seed := uint64(1); seed <= 4; seed++ {
				l := mustNew(t, impl.new, rules...)
				o := impl.oracle(rules)
				maxW, maxL := int64(0), 0
				for _, r := range rules {
					maxW, maxL = max(maxW, int64(r.Window)), max(maxL, r.Limit)
				}
				rng := rand.New(rand.NewPCG(seed, uint64(si)))
				t0 := time.Now()
				var now int64
				for i := range 500 {
					switch rng.IntN(8) {
					case 0:
						now -= rng.Int64N(maxW)
					case 1:
						now += maxW * rng.Int64N(3)
					case 2:
					default:
						now += rng.Int64N(maxW/int64(maxL) + 2)
					}
					n := 1
					if rng.IntN(3) == 0 {
						n = rng.IntN(maxL+3) - 1
					}
					at := t0.Add(time.Duration(now))
					want := o.RemainingAt(now)
					if g, ok := remainingAt(l, at); ok && fmt.Sprint(g) != fmt.Sprint(want) {
						t.Fatalf("%s rules %v seed %d call %d: RemainingAt(%d) = %v, oracle %v", impl.name, rules, seed, i, now, g, want)
					}
					if g, w := l.TokensAt(at), slices.Min(want); g != w {
						t.Fatalf("%s rules %v seed %d call %d: TokensAt(%d) = %d, oracle %d", impl.name, rules, seed, i, now, g, w)
					}
					if g, w := l.AllowN(at, n), o.AllowN(now, n); g != w {
						t.Fatalf("%s rules %v seed %d call %d: AllowN(%d, %d) = %v, oracle %v", impl.name, rules, seed, i, now, n, g, w)
					}
				}
			}
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	rules := []multi.Rule{{10, time.Millisecond}, {100, time.Second}}
	for _, impl := range impls {
		l := mustNew(t, impl.new, rules...)
		now := time.Now()
		buf := make([]int, 0, 4)
		cases := map[string]func(){
			"AllowN": func() { now = now.Add(30 * time.Microsecond); l.AllowN(now, 1) },
			"batch":  func() { now = now.Add(time.Second); l.AllowN(now, 5) },
			"deny":   func() { l.AllowN(now, 11) },
			"full":   func() { l.AllowN(now, 1); l.AllowN(now, 1) },
			"Allow":  func() { l.Allow() },
			"Tokens": func() { l.TokensAt(now) },
			"Remain": func() {
				if r, ok := l.(interface {
					RemainingAt(time.Time, []int) []int
				}); ok {
					buf = r.RemainingAt(now, buf[:0])
				}
			},
			"Ready": func() { l.ReadyAt(now, 3) },
			"Idle":  func() { l.IdleAt(now) },
		}
		for name, f := range cases {
			if a := testing.AllocsPerRun(1000, f); a != 0 {
				t.Errorf("%s: %s: %v allocs per call, want 0", impl.name, name, a)
			}
		}
	}
}

func TestIdleAt(t *testing.T) {
	for _, impl := range impls {
		l := mustNew(t, impl.new, multi.Rule{3, time.Second}, multi.Rule{10, time.Minute})
		t0 := time.Now()
		if !l.IdleAt(t0) {
			t.Errorf("%s: new limiter not idle", impl.name)
		}
		l.AllowN(t0, 1)
		if l.IdleAt(t0.Add(30 * time.Second)) {
			t.Errorf("%s: idle 30s after an admission with a 1 minute rule", impl.name)
		}
		// Exact: idle one longest window on. Approx: two (the counters of
		// the window after still weigh the first one).
		idleAfter := time.Minute
		if impl.name == "approx" {
			idleAfter = 2 * time.Minute
		}
		if l.IdleAt(t0.Add(idleAfter - 1)) {
			t.Errorf("%s: idle at t0+%v", impl.name, idleAfter-1)
		}
		if !l.IdleAt(t0.Add(idleAfter)) {
			t.Errorf("%s: not idle at t0+%v", impl.name, idleAfter)
		}
	}
}

func TestWaitN(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := mustNew(t, impl.new, multi.Rule{2, time.Second}, multi.Rule{3, 10 * time.Second})
				ctx := context.Background()
				start := time.Now()
				wantAt := []time.Duration{0, 0, time.Second, 10 * time.Second}
				if impl.name == "approx" {
					// Rule 0's next window admits 1 from 2*(1s-e)+1s <= 2s,
					// e >= 0.5s; rule 1's from 3*(10s-e)+10s <= 30s,
					// e >= 10s - 6.666666666s.
					wantAt = []time.Duration{0, 0, 1500 * time.Millisecond, 13333333334}
				}
				for i, w := range wantAt {
					if err := l.Wait(ctx); err != nil {
						t.Fatalf("Wait %d: %v", i, err)
					}
					if got := time.Since(start); got != w {
						t.Errorf("Wait %d returned at +%v, want +%v", i, got, w)
					}
				}
				if err := l.WaitN(ctx, 3); !errors.Is(err, multi.ErrNeverReady) || !strings.HasPrefix(err.Error(), "multi: ") {
					t.Errorf("WaitN(3) = %v, want ErrNeverReady", err)
				}
				if err := l.WaitN(ctx, 0); err != nil {
					t.Errorf("WaitN(0) = %v", err)
				}
				for l.Allow() {
				}
				before := time.Now()
				short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
				if err := l.Wait(short); !errors.Is(err, multi.ErrDeadline) {
					t.Errorf("Wait(100ms deadline) = %v, want ErrDeadline", err)
				}
				if time.Since(before) != 0 {
					t.Errorf("Wait with a hopeless deadline waited %v", time.Since(before))
				}
				cctx, cancel2 := context.WithCancel(ctx)
				go func() {
					time.Sleep(500 * time.Millisecond)
					cancel2()
				}()
				if err := l.Wait(cctx); !errors.Is(err, context.Canceled) {
					t.Errorf("Wait(cancelled) = %v, want context.Canceled", err)
				}
			})
		})
	}
}

func TestZeroValue(t *testing.T) {
	now := time.Now()
	for name, l := range map[string]lim{"exact": new(multi.Limiter), "approx": new(multi.Approx)} {
		if l.AllowN(now, 1) || l.Allow() || !l.AllowN(now, 0) {
			t.Errorf("%s: zero value admits", name)
		}
		if r, _ := remainingAt(l, now); l.TokensAt(now) != 0 || len(r) != 0 || !l.IdleAt(now) {
			t.Errorf("%s: zero value: TokensAt %d, RemainingAt %v, IdleAt %v", name, l.TokensAt(now), r, l.IdleAt(now))
		}
		if _, ok := l.ReadyAt(now, 1); ok {
			t.Errorf("%s: zero value: ReadyAt(1) ok", name)
		}
	}
}

// TestSnapshotConsistency has readers check, while writers admit, that every
// RemainingAt answer comes from one state: the three rules share their
// window, so their remaining counts always differ by exactly the difference
// of their limits. A torn read (some rules before an admission, some after)
// would break it.
func TestSnapshotConsistency(t *testing.T) {
	rules := []multi.Rule{{1000, time.Hour}, {2000, time.Hour}, {3000, time.Hour}}
	for round := range 20 {
		l, _ := multi.NewApprox(rules...)
		at := time.Now()
		var wg sync.WaitGroup
		var stop atomic.Bool
		for range 4 {
			wg.Go(func() {
				for l.AllowN(at, 1) {
				}
			})
		}
		var bad atomic.Value
		readers := sync.WaitGroup{}
		for range 2 {
			readers.Go(func() {
				buf := make([]int, 0, 3)
				for !stop.Load() {
					buf = l.RemainingAt(at, buf[:0])
					if buf[1]-buf[0] != 1000 || buf[2]-buf[0] != 2000 {
						bad.Store(fmt.Sprint(buf))
						return
					}
				}
			})
		}
		wg.Wait()
		stop.Store(true)
		readers.Wait()
		if v := bad.Load(); v != nil {
			t.Fatalf("round %d: torn snapshot %v", round, v)
		}
		if got := l.RemainingAt(at, nil); fmt.Sprint(got) != "[0 1000 2000]" {
			t.Fatalf("round %d: RemainingAt after the writers = %v, want [0 1000 2000]", round, got)
		}
	}
}
