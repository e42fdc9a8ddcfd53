package fuzz

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
)

// This file tests the exact limiters (ring and multi.New) from the outside:
// the checks use only the instants the callers passed and the answers they
// got, never the limiter's internal stamps.
//
// A caller's instant comes from a shared increasing clock (an atomic counter)
// read just before the call. Under concurrency a call can reach the limiter
// after a call that read a later instant; the limiter then decides it at that
// later instant (time never goes backwards). So the instant an admission takes
// effect is known only to lie in [lo, hi]: lo the instant the caller passed,
// hi the shared clock just after the call returned (every instant the limiter
// can have clamped it to was read before then). Safety is checked on what is
// certain: the admissions whose whole interval lies in one window (u-W, u]
// must total at most the limit, for every u and every rule. With a window far
// longer than an interval, that is a sharp check.
//
// Maximality is checked in same-instant phases: after an idle gap longer than
// every window, all goroutines call at one instant T, so the room is known
// exactly: the phase must admit at most the room, refuse no call whose cost
// still fit after the phase, and leave TokensAt(T) equal to what is left.
//
// Meanwhile, other goroutines ask TokensAt, ReadyAt, IdleAt (and RemainingAt)
// at instants an hour in the past and in the future, and make refused calls.
// None of that may change a decision.

// exact is what the outside tests need of ring.Limiter and multi.Limiter.
type exact interface {
	AllowN(now time.Time, n int) bool
	TokensAt(now time.Time) int
	ReadyAt(now time.Time, n int) (time.Time, bool)
	IdleAt(now time.Time) bool
}

// subject is one limiter configuration under test.
type subject struct {
	name  string
	rules []multi.Rule
	new   func(t testing.TB) exact
}

func (s subject) minLimit() int {
	m := s.rules[0].Limit
	for _, r := range s.rules {
		m = min(m, r.Limit)
	}
	return m
}

func (s subject) maxWindow() int64 {
	var m int64
	for _, r := range s.rules {
		m = max(m, int64(r.Window))
	}
	return m
}

// step is the largest clock step between two calls: about twice the
// sustainable rate of the tightest rule, so that about half the calls fit.
func (s subject) step() int64 {
	st := int64(1) << 62
	for _, r := range s.rules {
		st = min(st, int64(r.Window)/int64(r.Limit))
	}
	return max(1, st)
}

func ringSubject(limit int, window time.Duration) subject {
	return subject{
		name:  fmt.Sprintf("ring(%d,%v)", limit, window),
		rules: []multi.Rule{{Limit: limit, Window: window}},
		new: func(t testing.TB) exact {
			l, err := ring.New(limit, window)
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
	}
}

func multiSubject(rules ...multi.Rule) subject {
	return subject{
		name:  fmt.Sprintf("multi%v", rules),
		rules: rules,
		new: func(t testing.TB) exact {
			l, err := multi.New(rules...)
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
	}
}

// outsideSubjects are the configurations the outside tests run: windows in
// nanoseconds so that the shared clock sweeps many windows quickly.
var outsideSubjects = []subject{
	ringSubject(1, 64),
	ringSubject(2, 128),
	ringSubject(8, 1000),
	ringSubject(16, 4000),
	multiSubject(multi.Rule{Limit: 8, Window: 1000}),
	multiSubject(multi.Rule{Limit: 3, Window: 300}, multi.Rule{Limit: 8, Window: 2000}),
	multiSubject(multi.Rule{Limit: 4, Window: 200}, multi.Rule{Limit: 4, Window: 1000}, multi.Rule{Limit: 9, Window: 4000}),
}

// interval is one admission seen from the outside: it took effect at some
// instant in [lo, hi] (offsets from t0), for cost n.
type interval struct {
	lo, hi int64
	n      int
}

// outsideConfig sizes one run.
type outsideConfig struct {
	goroutines int // callers
	rounds     int // each: a free-running segment, then a same-instant phase
	ops        int // calls per goroutine per free-running segment
	phaseCalls int // calls per goroutine per phase
	queriers   int // goroutines asking at other instants
	stale      bool
}

// runOutside drives one limiter as the file comment says and returns its
// first violation, or "" if none was seen.
func runOutside(t testing.TB, s subject, cfg outsideConfig, seed uint64) string {
	t.Helper()
	t0 := time.Now()
	l := s.new(t)
	at := func(off int64) time.Time { return t0.Add(time.Duration(off)) }
	minLimit, maxW, maxStep := s.minLimit(), s.maxWindow(), 2*s.step()
	var clk atomic.Int64
	clk.Store(int64(time.Hour)) // room for "an hour ago" without going before t0
	var stop atomic.Bool
	var qwg sync.WaitGroup
	for q := range cfg.queriers {
		qwg.Add(1)
		go func() {
			defer qwg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(1000+q)))
			var buf []int
			for i := 0; !stop.Load(); i++ {
				off := clk.Load()
				switch r.IntN(3) {
				case 0:
					off -= int64(time.Hour)
				case 1:
					off += int64(time.Hour)
				}
				n := 1 + r.IntN(minLimit)
				switch i % 5 {
				case 0:
					l.TokensAt(at(off))
				case 1:
					l.ReadyAt(at(off), n)
				case 2:
					l.IdleAt(at(off))
				case 3:
					if rl, ok := l.(multiRemaining); ok {
						buf = rl.RemainingAt(at(off), buf[:0])
					}
				case 4:
					// Refused calls that may help an admission along: a
					// full-cost call an hour stale (decided at the latest
					// instant, where the window is rarely empty; if it is
					// admitted, it only takes room, and it is never at an
					// instant a phase uses), and one above the limit.
					if r.IntN(2) == 0 {
						l.AllowN(at(clk.Load()-int64(time.Hour)), minLimit)
					} else {
						l.AllowN(at(off), minLimit+1)
					}
				}
				if i%64 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	defer func() {
		stop.Store(true)
		qwg.Wait()
	}()

	recs := make([][]interval, cfg.goroutines)
	for round := range cfg.rounds {
		// Free-running: instants from the shared clock, weighted calls,
		// now and then an idle gap longer than every window, now and then
		// a call an hour stale (clamped forward by the limiter: its
		// interval then spans the hour and never counts as certain).
		var wg sync.WaitGroup
		for g := range cfg.goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seed, uint64(round*cfg.goroutines+g)))
				for range cfg.ops {
					d := r.Int64N(maxStep + 1)
					if r.IntN(300) == 0 {
						d += maxW + 1
					}
					c := clk.Add(d)
					n := 1
					if r.IntN(2) == 0 {
						n = 1 + r.IntN(minLimit)
					}
					if cfg.stale && r.IntN(20) == 0 {
						c -= int64(time.Hour)
					}
					if l.AllowN(at(c), n) {
						recs[g] = append(recs[g], interval{lo: c, hi: clk.Load(), n: n})
					}
				}
			}()
		}
		wg.Wait()

		// Same-instant phase after an idle gap: the room is minLimit.
		T := clk.Add(maxW + 1)
		var admitted atomic.Int64
		refused := make([][]int, cfg.goroutines)
		var start sync.WaitGroup
		start.Add(1)
		for g := range cfg.goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seed^0x5eed, uint64(round*cfg.goroutines+g)))
				start.Wait()
				for range cfg.phaseCalls {
					n := 1 + r.IntN(minLimit)
					if l.AllowN(at(T), n) {
						admitted.Add(int64(n))
						recs[g] = append(recs[g], interval{lo: T, hi: T, n: n})
					} else {
						refused[g] = append(refused[g], n)
					}
				}
			}()
		}
		start.Done()
		wg.Wait()
		a := int(admitted.Load())
		if a > minLimit {
			return fmt.Sprintf("%s round %d: phase at %d admitted %d, room %d", s.name, round, T, a, minLimit)
		}
		for _, rs := range refused {
			for _, n := range rs {
				if n <= minLimit-a {
					return fmt.Sprintf("%s round %d: phase at %d refused n=%d with %d still free (admitted %d of %d)",
						s.name, round, T, n, minLimit-a, a, minLimit)
				}
			}
		}
		if got := l.TokensAt(at(T)); got != minLimit-a {
			return fmt.Sprintf("%s round %d: TokensAt(%d) = %d after a phase that admitted %d of %d",
				s.name, round, T, got, a, minLimit)
		}
		clk.Add(1)
	}
	var all []interval
	for _, rs := range recs {
		all = append(all, rs...)
	}
	for _, r := range s.rules {
		if msg := certainOverLimit(all, r.Limit, int64(r.Window)); msg != "" {
			return fmt.Sprintf("%s rule %v: %s", s.name, r, msg)
		}
	}
	return ""
}

// certainOverLimit returns a description of a window (u-w, u] that surely
// holds more than limit: the admissions whose whole interval lies in it total
// more than limit. It returns "" if there is none. It suffices to try u = the
// hi of each admission (shrinking u to the largest hi inside loses nothing).
func certainOverLimit(all []interval, limit int, w int64) string {
	s := slices.Clone(all)
	slices.SortFunc(s, func(a, b interval) int {
		switch {
		case a.hi < b.hi:
			return -1
		case a.hi > b.hi:
			return 1
		}
		return 0
	})
	for i := range s {
		u := s[i].hi
		sum := 0
		var in []interval
		// Every admission with hi <= u is before i+1 or shares u.
		for j := i; j < len(s) && s[j].hi == u; j++ {
			if s[j].lo > u-w {
				sum += s[j].n
				in = append(in, s[j])
			}
		}
		for j := i - 1; j >= 0 && s[j].hi > u-w; j-- {
			if s[j].lo > u-w {
				sum += s[j].n
				in = append(in, s[j])
			}
		}
		if sum > limit {
			return fmt.Sprintf("window (%d, %d] surely holds %d, limit %d: %v", u-w, u, sum, limit, in)
		}
	}
	return ""
}

// outsideCheck runs cfg on every subject, each at the configured repetitions,
// and fails on the first violation.
func outsideCheck(t *testing.T, subjects []subject, cfg outsideConfig, runs int) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, GOMAXPROCS %d", seed, runtime.GOMAXPROCS(0))
	for _, s := range subjects {
		for run := range runs {
			if msg := runOutside(t, s, cfg, seed+uint64(run)); msg != "" {
				t.Fatalf("run %d: %s", run, msg)
			}
		}
	}
}

// TestOutsideExact checks safety (on caller instants) and same-instant
// maximality for ring and multi.New, with 8 goroutines on one shared clock,
// costs from 1 to the limit, idle gaps, stale calls, and concurrent queries
// and refusals an hour before and after.
func TestOutsideExact(t *testing.T) {
	cfg := outsideConfig{goroutines: 8, rounds: 6, ops: 150, phaseCalls: 3, queriers: 2, stale: true}
	outsideCheck(t, outsideSubjects, cfg, 1)
}

// TestOutsideExactSixteen is TestOutsideExact with 16 goroutines and no stale
// calls, so that nearly every admission is certain.
func TestOutsideExactSixteen(t *testing.T) {
	cfg := outsideConfig{goroutines: 16, rounds: 4, ops: 100, phaseCalls: 2, queriers: 2}
	outsideCheck(t, outsideSubjects, cfg, 1)
}
