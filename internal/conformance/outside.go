package conformance

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// This file checks a limiter from the outside: only the instants the callers
// passed and the answers they got are used, never the limiter's state.
//
// Callers take their instants from a shared increasing clock (an atomic
// counter) just before each call. Under concurrency a call can reach the
// limiter after one that read a later instant, and the limiter may then
// decide it at a later instant than the one passed. So an admission is known
// to take effect at some instant in [lo, hi]: lo the instant passed, hi the
// shared clock after the call returned. Safety is checked on what is certain:
// the admissions whose whole interval lies in one window (u-W, u] total at
// most the bound (limit for Exact, 2*limit-1 for Approx), for every u and
// every rule.
//
// Maximality and accounting are checked in same-instant phases: after a gap
// longer than two windows (so that even a two-counter limiter has forgotten
// everything), every goroutine calls at one instant T. The phase admits at
// most the smallest limit, refuses no call whose cost still fitted after the
// phase, and leaves TokensAt(T) equal to what is left: no admission lost or
// counted twice.
//
// Meanwhile a querier asks TokensAt, ReadyAt and IdleAt at instants an hour
// away and makes calls above the limit; none of it may change a decision.

// interval is one admission seen from the outside: it took effect at some
// instant in [lo, hi] (offsets from t0), for cost n.
type interval struct {
	lo, hi int64
	n      int
}

// outsideRules are the rule sets RunOutside drives: windows in nanoseconds, so
// that the shared clock sweeps many windows.
var outsideRules = [][]Rule{
	{{1, 64}}, {{2, 128}}, {{8, 1000}}, {{16, 4000}},
	{{3, 300}, {8, 2000}},
	{{4, 200}, {4, 1000}, {9, 4000}},
}

// RunOutside runs the outside-view concurrency check on several rule sets
// (the several-rule ones only with Options.NewRules), with 4 goroutines
// calling and one querying. Run it from a test named TestOutside... so that
// it runs with a high -count and -cpu 2,8.
func RunOutside(t *testing.T, opts Options) {
	t.Helper()
	s := &suite{Options: opts}
	seed := newSeed(t)
	for i, rules := range outsideRules {
		if len(rules) > 1 && s.NewRules == nil {
			continue
		}
		t.Run(fmt.Sprint(rules), func(t *testing.T) {
			var l Limiter
			if len(rules) == 1 {
				l = s.newLimiter(t, rules[0].Limit, rules[0].Window)
			} else {
				var err error
				l, err = s.NewRules(rules...)
				require.NoErrorf(t, err, "NewRules(%v)", rules)
			}
			s.outside(t, seed+uint64(i), rules, l)
		})
	}
}

func (s *suite) outside(t *testing.T, seed uint64, rules []Rule, l Limiter) {
	const goroutines, rounds, ops = 4, 10, 100
	minLimit := slices.MinFunc(rules, func(a, b Rule) int { return a.Limit - b.Limit }).Limit
	var maxW, step int64 = 0, 1 << 62
	for _, r := range rules {
		maxW = max(maxW, int64(r.Window))
		step = min(step, int64(r.Window)/int64(r.Limit))
	}
	step = 2 * max(step, 1) // about twice the sustainable rate: half the calls fit
	t0 := time.Now()
	inst := func(off int64) time.Time { return t0.Add(time.Duration(off)) }
	var clk atomic.Int64
	clk.Store(int64(time.Hour))

	var stop atomic.Bool
	var oversize atomic.Int64 // admissions of a cost above the limit
	var qwg sync.WaitGroup
	qwg.Add(1)
	go func() {
		defer qwg.Done()
		rng := newRand(seed, 100)
		for i := 0; !stop.Load(); i++ {
			off := clk.Load() + int64(time.Hour)*(rng.Int64N(3)-1)
			switch i % 4 {
			case 0:
				l.TokensAt(inst(off))
			case 1:
				l.ReadyAt(inst(off), 1+rng.IntN(minLimit))
			case 2:
				if id, ok := l.(Idler); ok {
					id.IdleAt(inst(off))
				}
			case 3:
				if l.AllowN(inst(off), minLimit+1) {
					oversize.Add(1)
				}
			}
		}
	}()
	defer func() {
		stop.Store(true)
		qwg.Wait()
		if n := oversize.Load(); n != 0 {
			t.Errorf("AllowN(now, %d), above the limit, admitted %d times", minLimit+1, n)
		}
	}()

	var admitted []interval
	for round := range rounds {
		// Free-running segment.
		recs := make([][]interval, goroutines)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := newRand(seed, uint64(round*goroutines+g))
				for range ops {
					lo := clk.Add(rng.Int64N(step + 1))
					n := 1 + rng.IntN(min(minLimit, 3))
					if l.AllowN(inst(lo), n) {
						recs[g] = append(recs[g], interval{lo, clk.Load(), n})
					}
				}
			}()
		}
		wg.Wait()
		for _, r := range recs {
			admitted = append(admitted, r...)
		}

		// Same-instant phase, after an idle gap.
		T := clk.Add(2*maxW + 1)
		got := make([][]int, goroutines) // cost of each call, negative if refused
		start := make(chan struct{})
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := newRand(seed, uint64(1000+round*goroutines+g))
				<-start
				for range minLimit {
					n := 1 + rng.IntN(min(minLimit, 3))
					if l.AllowN(inst(T), n) {
						got[g] = append(got[g], n)
					} else {
						got[g] = append(got[g], -n)
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		sum := 0
		for _, calls := range got {
			for _, n := range calls {
				if n > 0 {
					sum += n
					admitted = append(admitted, interval{T, T, n})
				}
			}
		}
		where := fmt.Sprintf("seed %d rules %v round %d, every goroutine at t0%+dns", seed, rules, round, T)
		require.LessOrEqualf(t, sum, minLimit, "%s: admitted cost above the smallest limit", where)
		require.Equalf(t, minLimit-sum, l.TokensAt(inst(T)), "%s: TokensAt after the phase, with %d admitted (an admission lost or counted twice)", where, sum)
		for g, calls := range got {
			for _, n := range calls {
				require.Falsef(t, n < 0 && -n <= minLimit-sum, "%s: goroutine %d was refused %d though %d was still free after the phase", where, g, -n, minLimit-sum)
			}
		}
		clk.Add(2*maxW + 1)
	}

	// The windows to try end at each admission's hi. An admission inside
	// (u-W, u] has lo > u-W, so hi > u-W too: with the admissions sorted by
	// hi, the candidates for u are a run ending at u's own.
	slices.SortFunc(admitted, func(a, b interval) int { return cmp.Compare(a.hi, b.hi) })
	for _, r := range rules {
		bound := r.Limit
		if s.Kind == Approx {
			bound = 2*r.Limit - 1
		}
		w := int64(r.Window)
		first := 0 // the first admission with hi > u-W
		for j := range admitted {
			u := admitted[j].hi
			if j+1 < len(admitted) && admitted[j+1].hi == u {
				continue // the window ending at u also holds the next one
			}
			for admitted[first].hi <= u-w {
				first++
			}
			sum := 0
			for _, a := range admitted[first : j+1] {
				if a.lo > u-w {
					sum += a.n
				}
			}
			require.LessOrEqualf(t, sum, bound, "seed %d rules %v: admissions certainly inside (t0%+dns, t0%+dns] total %d, above %d for rule %v", seed, rules, u-w, u, sum, bound, r)
		}
	}
}
