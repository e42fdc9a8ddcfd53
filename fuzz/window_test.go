package fuzz

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/window"
)

// FuzzWindow decodes a configuration from the first two bytes and a call
// sequence from the rest (decodeOps), replays it on simulated time through
// window.Limiter and through the two-counter model (oracle.TwoCounter with
// window's rules: windows anchored at an admission into an idle limiter and
// following back to back, a stale instant decided at the start of the
// current window), and fails on the first difference
// in AllowN, TokensAt, ReadyAt or IdleAt. A second limiter decides the same
// calls with DecideStatus, whose every field must be what the first one's
// queries answer right after the call. Whenever IdleAt is true it also
// starts a new limiter and checks that both decide every later call alike
// (until a call goes back before that instant, which the contract does not
// cover). At the end it checks the bound over windows of every alignment:
// at most 2*limit-1, and max(limit, 2*limit-2) for a sequential history.

// windowWindows are the windows a decoded configuration may get: tiny ones,
// where every nanosecond matters, up to an hour.
var windowWindows = [8]time.Duration{1, 2, 3, 7, 100, 1000, time.Second, time.Hour}

// windowLimits are the limits: small ones, where the rounding a peer does
// would show, and the largest supported.
var windowLimits = [8]int{1, 2, 3, 4, 5, 10, 100, window.MaxLimit}

// windowT0 is the simulated clock's origin. The limiter measures instants
// from its creation (now); any origin within decades of it gives the same
// decisions.
var windowT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// windowMaxOps bounds the calls replayed from one input, so that an input the
// fuzzer grows large still runs in milliseconds.
const windowMaxOps = 400

func windowSeeds(f *testing.F) {
	// Configuration bytes: limit index, window index. Then (step, n) pairs:
	// step 0 -> 0, 8 -> W, 9 -> W-1, 10 -> W+1, 11 -> W/2, 16 -> -1,
	// 18 -> -W, 19 -> 2W, 21 -> 2^40 ns, 0x80|k -> k*W/128; n < 160 -> 1,
	// 230..239 -> limit, 240.. -> limit+1.., 245..249 -> 0, 250.. -> -1...
	// TestSteps of window/: limit 4, W = 1s.
	f.Add([]byte{3, 6, 0, 0, 0, 232, 0, 0, 9, 0, 16, 0, 0xa0, 0, 0, 0, 0xa0, 0, 18, 0, 0xe0, 161, 0xf0, 0, 0x90, 245, 0, 250, 0, 241, 19, 235, 0xc0, 0, 9, 235, 0, 235, 21, 235, 8, 0})
	// Reaching 2*limit-2: anchor 1, limit-1 at W-1, limit-1 at 2W-2 (limit 10, W = 100ns).
	f.Add([]byte{5, 4, 0, 0, 9, 167, 9, 167, 16, 0})
	// Idle gaps: exactly 2W, 5W, 2^40 ns, and back.
	f.Add([]byte{2, 5, 0, 232, 19, 232, 19, 0, 20, 232, 21, 232, 18, 0, 8, 0})
	// One-nanosecond windows, n > limit and n <= 0.
	f.Add([]byte{0, 0, 0, 0, 1, 0, 4, 0, 0, 240, 0, 249, 0, 255, 8, 0, 9, 0})
	// The largest limit with a one-hour window.
	f.Add([]byte{7, 7, 0, 235, 0, 200, 11, 235, 0x90, 180, 8, 0, 19, 235})
}

func FuzzWindow(f *testing.F) {
	windowSeeds(f)
	f.Fuzz(replayWindow)
}

// replayWindow is FuzzWindow's body.
func replayWindow(t *testing.T, data []byte) {
	{
		if len(data) < 2 {
			return
		}
		limit := windowLimits[data[0]%8]
		w := windowWindows[data[1]%8]
		l, err := window.New(limit, w)
		if err != nil {
			t.Fatalf("New(%d, %v): %v", limit, w, err)
		}
		ds, _ := window.New(limit, w) // decides with DecideStatus
		o := oracle.NewTwoCounter(oracle.StaleToStart, oracle.AnchorIdle, oracle.R(limit, w))
		var shadow *window.Limiter // a new limiter started when l was idle
		var idleSince int64
		var sim int64
		ops := decodeOps(data[2:], w, limit)
		ops = ops[:min(len(ops), windowMaxOps)]
		for i, op := range ops {
			sim += int64(op.dt)
			now := windowT0.Add(time.Duration(sim))

			if got, want := l.TokensAt(now), o.TokensAt(sim); got != want {
				t.Fatalf("op %d (limit %d, W %v): TokensAt(t0%+d) = %d, want %d", i, limit, w, sim, got, want)
			}
			checkReadyAt(t, i, l, o, limit, now, sim, op.n)
			idle := o.IdleAt(sim)
			if got := l.IdleAt(now); got != idle {
				t.Fatalf("op %d (limit %d, W %v): IdleAt(t0%+d) = %v, want %v", i, limit, w, sim, got, idle)
			}
			if shadow != nil && sim < idleSince {
				shadow = nil
			}
			if shadow == nil && idle {
				shadow, _ = window.New(limit, w)
				idleSince = sim
			}

			wantRetry, retryOK := l.ReadyAt(now, op.n) // a refusal changes nothing
			want := o.AllowN(sim, op.n)
			if got := l.AllowN(now, op.n); got != want {
				t.Fatalf("op %d (limit %d, W %v): AllowN(t0%+d, %d) = %v, want %v", i, limit, w, sim, op.n, got, want)
			}
			// ds decides the same calls with DecideStatus: the same
			// decision, and the answers l's queries give right after it.
			st := ds.DecideStatus(now, op.n)
			wantSt := window.Status{Admitted: want, Remaining: l.TokensAt(now)}
			if !want && op.n != 0 && retryOK {
				wantSt.RetryAt = wantRetry
			}
			wantSt.ResetAt, _ = l.ReadyAt(now, limit)
			if !sameStatus(st, wantSt) {
				t.Fatalf("op %d (limit %d, W %v): DecideStatus(t0%+d, %d) = %+v, the queries say %+v", i, limit, w, sim, op.n, st, wantSt)
			}
			if shadow != nil {
				if got := shadow.AllowN(now, op.n); got != want {
					t.Fatalf("op %d: a limiter idle since t0%+d decided %v, a new one %v", i, idleSince, want, got)
				}
			}
		}
		best := oracle.MaxInWindow(o.Stamps(0), int64(w))
		if best > int64(2*limit-1) {
			t.Fatalf("%d admitted in one window of %v, bound 2*limit-1 = %d", best, w, 2*limit-1)
		}
		if seq := int64(max(limit, 2*limit-2)); best > seq {
			t.Fatalf("%d admitted in one window of %v, sequential bound max(limit, 2*limit-2) = %d", best, w, seq)
		}
	}
}

// checkReadyAt checks ReadyAt(now, n) against the model: n fits at the
// returned instant, and not one nanosecond before it unless it is now.
func checkReadyAt(t *testing.T, i int, l *window.Limiter, o *oracle.TwoCounter, limit int, now time.Time, sim int64, n int) {
	t.Helper()
	at, ok := l.ReadyAt(now, n)
	switch {
	case n == 0:
		if !ok || !at.Equal(now) {
			t.Fatalf("op %d: ReadyAt(now, 0) = %v, %v; want now, true", i, at, ok)
		}
		return
	case n < 0 || n > limit:
		if ok || !at.IsZero() {
			t.Fatalf("op %d: ReadyAt(now, %d) = %v, %v; want zero, false", i, n, at, ok)
		}
		return
	}
	if !ok {
		t.Fatalf("op %d: ReadyAt(now, %d) not ok", i, n)
	}
	r := int64(at.Sub(windowT0))
	if r < sim {
		t.Fatalf("op %d: ReadyAt(t0%+d, %d) = t0%+d, before now", i, sim, n, r)
	}
	if !o.Fits(r, n) {
		t.Fatalf("op %d: ReadyAt(t0%+d, %d) = t0%+d, where %d does not fit", i, sim, n, r, n)
	}
	if r > sim && o.Fits(r-1, n) {
		t.Fatalf("op %d: ReadyAt(t0%+d, %d) = t0%+d, but %d fits 1ns earlier", i, sim, n, r, n)
	}
}

// The outside-view tests of the two-counter limiters (window.Limiter here,
// multi.Approx in approx_test.go) record a small concurrent history — each
// call's instant, cost and answer, and its invocation and response order from
// a shared counter — and search for a sequential order of the calls that
// respects real time (a call that returned before another was invoked comes
// first) and in which every answer is what twoSpec, the two-counter formula
// written out naively, gives. Only instants the callers passed and answers
// they got are used.
//
// window's contract under concurrency allows one thing more (docs/window.md,
// "Races"): a call may move the window start to its own instant's window (an
// advance, admitting nothing) before it decides, and keep that move when it
// is refused. The search therefore lets each window AllowN perform one
// advance at any point of its interval before its decision; multi.Approx gets
// no advances (a refused call writes nothing).

// twoSpec is the sequential two-counter model of the outside tests:
// oracle.TwoCounter with window's rules, whose Advance is the move a call may
// make before it decides.
func twoSpec(rules []multi.Rule) *oracle.TwoCounter {
	return oracle.NewTwoCounter(oracle.StaleToStart, oracle.AnchorIdle, oracleRules(rules)...)
}

// call is one recorded call: AllowN(u, n) answering ok, or TokensAt(u)
// answering tokens (n == 0); inv and resp order it against the others.
type call struct {
	u, n      int64
	ok        bool
	tokens    int64
	inv, resp int64
}

// linearize searches an order of the calls, with advances when advances is
// true, in which twoSpec gives every answer. It returns, for each admitted
// call, the instants each rule decided it at, or false.
func linearize(rules []multi.Rule, calls []call, advances bool) ([][]int64, bool) {
	k := len(calls)
	at := make([][]int64, k)
	seen := map[string]bool{}
	var dfs func(s *oracle.TwoCounter, done, adv uint64) bool
	ready := func(done uint64, j int) bool { // every call that returned before j began is done
		for i := range calls {
			if done&(1<<i) == 0 && calls[i].resp < calls[j].inv {
				return false
			}
		}
		return true
	}
	dfs = func(s *oracle.TwoCounter, done, adv uint64) bool {
		if done == 1<<k-1 {
			return true
		}
		key := fmt.Sprint(done, adv, s.Key())
		if seen[key] {
			return false
		}
		seen[key] = true
		for j, c := range calls {
			if done&(1<<j) != 0 || !ready(done, j) {
				continue
			}
			switch {
			case c.n == 0: // TokensAt
				if int64(s.TokensAt(c.u)) == c.tokens && dfs(s, done|1<<j, adv) {
					return true
				}
			case c.ok:
				if s.Fits(c.u, int(c.n)) {
					s2 := s.Clone()
					at[j] = s2.DecisionInstants(c.u)
					s2.Record(c.u, int(c.n), true)
					if dfs(s2, done|1<<j, adv) {
						return true
					}
				}
			default:
				if !s.Fits(c.u, int(c.n)) && dfs(s, done|1<<j, adv) {
					return true
				}
			}
			if advances && c.n > 0 && adv&(1<<j) == 0 {
				s2 := s.Clone()
				s2.Advance(c.u)
				if s2.Key() != s.Key() && dfs(s2, done, adv|1<<j) {
					return true
				}
			}
		}
		return false
	}
	if !dfs(twoSpec(rules), 0, 0) {
		return nil, false
	}
	return at, true
}

// twoUnderTest is what the outside tests call.
type twoUnderTest interface {
	AllowN(now time.Time, n int) bool
	TokensAt(now time.Time) int
}

// runOutsideTwo runs rounds of small concurrent histories on fresh limiters:
// goroutines take instants from one shared increasing clock (steps of up to
// W/2, now and then an idle gap of 3W), call AllowN with costs 1..limit or
// TokensAt at an instant up to W before or after, and the history must
// linearize. Every admission must also respect 2*limit-1 per window of each
// rule, on the instants the linearization decided it at, and on the callers'
// own instants when no admission was decided later than its caller's.
func runOutsideTwo(t *testing.T, rules []multi.Rule, mk func() twoUnderTest, advances bool, rounds int) {
	const goroutines, perG = 4, 4
	minLimit := rules[0].Limit
	for _, r := range rules {
		minLimit = min(minLimit, r.Limit)
	}
	w := int64(rules[0].Window)
	seed := rand.Uint64()
	concurrent := 0
	defer func() { t.Logf("seed %d: %d of %d histories had overlapping calls", seed, concurrent, rounds) }()
	for round := range rounds {
		l := mk()
		var clk, seq, ready atomic.Int64
		calls := make([]call, goroutines*perG)
		var start, wg sync.WaitGroup
		start.Add(1)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(round*goroutines+g)))
				ready.Add(1)
				start.Wait()
				for ready.Load() < goroutines {
					runtime.Gosched()
				}
				for i := range perG {
					step := rng.Int64N(w/2 + 1)
					if rng.IntN(8) == 0 {
						step = 3 * w
					}
					u := clk.Add(step)
					c := call{u: u}
					// A yield between taking the instant and calling lets
					// other goroutines' calls, at later instants, come
					// first: the interleavings of stale instants.
					pause := rng.IntN(2) == 0
					if rng.IntN(4) == 0 {
						c.u = u + rng.Int64N(2*w+1) - w
						c.inv = seq.Add(1)
						if pause {
							runtime.Gosched()
						}
						c.tokens = int64(l.TokensAt(windowT0.Add(time.Duration(c.u))))
					} else {
						c.n = 1 + rng.Int64N(int64(minLimit))
						c.inv = seq.Add(1)
						if pause {
							runtime.Gosched()
						}
						c.ok = l.AllowN(windowT0.Add(time.Duration(u)), int(c.n))
					}
					c.resp = seq.Add(1)
					calls[g*perG+i] = c
				}
			}()
		}
		start.Done()
		wg.Wait()
		if overlapping(calls) {
			concurrent++
		}
		at, ok := linearize(rules, calls, advances)
		if !ok {
			t.Fatalf("round %d (seed %d, rules %v): no sequential order explains the answers %+v", round, seed, rules, calls)
		}
		for i, r := range rules {
			var decided, own []oracle.Stamp
			late := false
			for j, c := range calls {
				if c.n > 0 && c.ok {
					decided = append(decided, oracle.Stamp{At: at[j][i], Cost: c.n})
					own = append(own, oracle.Stamp{At: c.u, Cost: c.n})
					late = late || at[j][i] != c.u
				}
			}
			bound := int64(2*r.Limit - 1)
			if m := oracle.MaxInWindow(decided, int64(r.Window)); m > bound {
				t.Fatalf("round %d: rule %v: %d admitted in one window (decided instants), bound %d: %+v", round, r, m, bound, calls)
			}
			if m := oracle.MaxInWindow(own, int64(r.Window)); !late && m > bound {
				t.Fatalf("round %d: rule %v: %d admitted in one window (caller instants), bound %d: %+v", round, r, m, bound, calls)
			}
		}
	}
}

// overlapping reports whether two calls of a history overlap in time.
func overlapping(calls []call) bool {
	for i, a := range calls {
		for _, b := range calls[i+1:] {
			if a.inv < b.resp && b.inv < a.resp {
				return true
			}
		}
	}
	return false
}

// TestOutsideWindow runs runOutsideTwo on window.Limiter for a few limits.
func TestOutsideWindow(t *testing.T) {
	for _, limit := range []int{1, 2, 3, 5} {
		r := multi.Rule{Limit: limit, Window: 1000}
		runOutsideTwo(t, []multi.Rule{r}, func() twoUnderTest {
			l, err := window.New(limit, 1000)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}, true, 200)
	}
}

// TestOutsideRefusedWindowCall replays docs/window.md's example ("Races") many
// times: window(2, 1000ns) after AllowN(0, 1); AllowN(500, 1) and
// AllowN(1250, 1) at once; then AllowN(2900, 2) and AllowN(3500, 1). When
// the call at 1250 moves the window start and then loses the room to the
// stale call at 500, the outcome is (true, false, false, true), which no
// order of the four calls alone explains. The test requires every outcome
// to be explained by window's documented concurrent contract (the calls
// plus the advance a refused call may leave), and logs how often the raced
// outcome occurred.
func TestOutsideRefusedWindowCall(t *testing.T) {
	rules := []multi.Rule{{Limit: 2, Window: 1000}}
	raced := 0
	const runs = 1000
	for range runs {
		l, err := window.New(2, 1000)
		if err != nil {
			t.Fatal(err)
		}
		at := func(ns int64) time.Time { return windowT0.Add(time.Duration(ns)) }
		calls := []call{{u: 0, n: 1, inv: 1, resp: 2}, {u: 500, n: 1}, {u: 1250, n: 1}, {u: 2900, n: 2, inv: 7, resp: 8}, {u: 3500, n: 1, inv: 9, resp: 10}}
		calls[0].ok = l.AllowN(at(0), 1)
		var gate atomic.Bool
		done := make(chan bool)
		go func() {
			for !gate.Load() {
				runtime.Gosched()
			}
			done <- l.AllowN(at(1250), 1)
		}()
		gate.Store(true)
		calls[1].ok = l.AllowN(at(500), 1)
		calls[2].ok = <-done
		calls[1].inv, calls[1].resp, calls[2].inv, calls[2].resp = 3, 5, 4, 6 // concurrent
		calls[3].ok = l.AllowN(at(2900), 2)
		calls[4].ok = l.AllowN(at(3500), 1)
		if _, ok := linearize(rules, calls, true); !ok {
			t.Fatalf("outcome %v %v %v %v %v not explained by the contract", calls[0].ok, calls[1].ok, calls[2].ok, calls[3].ok, calls[4].ok)
		}
		if _, ok := linearize(rules, calls, false); !ok {
			raced++
		}
	}
	t.Logf("%d of %d runs took the raced outcome (a refused call's advance was observed)", raced, runs)
}
