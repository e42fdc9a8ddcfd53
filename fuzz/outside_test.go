package fuzz

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
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
// can have clamped it to was read before then), narrowed by the order of the
// calls (see tighten). Safety is checked on what is certain: the admissions
// whose whole interval lies in one window (u-W, u] must total at most the
// limit, for every u and every rule. With a window far longer than an
// interval, that is a sharp check.
//
// Maximality is checked in same-instant phases: after an idle gap longer than
// every window, all goroutines call at one instant T, so the room is known
// exactly: the phase must admit at most the room, refuse no call whose cost
// still fit after the phase, and leave TokensAt(T) equal to what is left.
//
// Between the two, one caller paces the clock: cost 1 at instants a stride
// apart that keeps every window at most about half full, so that every state
// has room, and the head moves as fast as one caller can move it.
//
// Meanwhile, other goroutines ask TokensAt, ReadyAt, IdleAt, RemainingAt and
// DecideStatus (with n 0 or above the limit, which admit nothing) at the
// shared clock, a little before it, and an hour before and after it, and make
// refused calls. None of that may change a decision, and every answer, as
// every refusal of the free-running and paced callers, must be one that some
// state the limiter may have been in during the call gives: the bounds and
// their argument are in outside_queries_test.go. Paced, a reader that mixes
// slots of two laps of the ring answers what no such state gives.

// exact is what the outside tests need of ring.Limiter and multi.Limiter.
type exact interface {
	AllowN(now time.Time, n int) bool
	TokensAt(now time.Time) int
	ReadyAt(now time.Time, n int) (time.Time, bool)
	IdleAt(now time.Time) bool
}

// statusDecider is DecideStatus, which both exact limiters have.
type statusDecider interface {
	DecideStatus(now time.Time, n int) slidelimit.Status
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

// pacedStride is a clock step that keeps every rule's window at most half
// full when each step admits one unit (one unit in a window for limits up to
// 3, which for a limit of 1 is full).
func (s subject) pacedStride() int64 {
	var st int64
	for _, r := range s.rules {
		st = max(st, int64(r.Window)/int64(max(1, r.Limit/2)))
	}
	return st + 1
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
	paced      int // calls per round by one caller at paced instants
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
	// seq orders calls in real time: every call is bracketed by two of its
	// values, taken just before it and just after it returned (see
	// outside_queries_test.go).
	var seq atomic.Uint64
	var stop, pacing atomic.Bool
	// busy[q] is odd while querier q is in a call.
	busy := make([]atomic.Uint64, cfg.queriers)
	var qwg sync.WaitGroup
	qadms := make([][]stamped, cfg.queriers)
	qseen := make([][]seen, cfg.queriers)
	var oversize atomic.Int64
	for q := range cfg.queriers {
		qwg.Add(1)
		go func() {
			defer qwg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(1000+q)))
			var buf []int
			// Answers are kept up to a fixed number (appending without
			// bound would slow the callers down through the collector, and
			// the checks take time): all of those asked while one caller
			// paces the clock (see below), one in four of the others. When
			// the buffer is full, every other one is dropped, and from then
			// on only every other one that would have been kept is kept.
			obs, every, kept := make([]seen, 0, maxQuerierSeen), 1, 0
			defer func() { qseen[q] = obs }()
			for i := 0; !stop.Load(); i++ {
				if i%64 == 0 {
					runtime.Gosched()
				}
				cs := clk.Load()
				off := cs
				switch r.IntN(6) {
				case 0, 1:
					off -= int64(time.Hour) // answered at the latest stamp
				case 2:
					off += int64(time.Hour)
				case 3:
					off -= r.Int64N(maxW + 1) // clamped or not
				}
				n := 1 + r.IntN(minLimit)
				busy[q].Add(1)
				o, admitted := seen{kind: seenNone, u: off, n: int32(n), qs: seq.Add(1)}, false
				switch i % 6 {
				case 0:
					o.kind = seenTokens
					o.tokens = int32(l.TokensAt(at(off)))
				case 1:
					o.kind = seenReady
					ready, ok := l.ReadyAt(at(off), n)
					o.ready, o.ok = readyOffset(t0, ready, ok)
				case 2:
					o.kind = seenIdle
					o.ok = l.IdleAt(at(off))
				case 3:
					if rl, ok := l.(multiRemaining); ok {
						o.kind = seenRemaining
						buf = rl.RemainingAt(at(off), buf[:0])
						for r, k := range buf {
							o.rem[r] = int32(k)
						}
					} else {
						o.kind = seenTokens
						o.tokens = int32(l.TokensAt(at(off)))
					}
				case 4:
					// Admits nothing: a query of the state at off.
					o.kind, o.n = seenStatus, 0
					if i%12 == 10 {
						o.n = int32(minLimit + 1)
					}
					statusSeen(&o, t0, l.(statusDecider).DecideStatus(at(off), int(o.n)))
				case 5:
					// Refused calls that may help an admission along: a
					// full-cost call an hour stale (decided at the latest
					// instant, where the window is rarely empty; if it is
					// admitted, it only takes room, is recorded as any
					// admission is, and is never at an instant a phase
					// uses), and one above the limit.
					if r.IntN(2) == 0 {
						o.kind, o.u, o.n = seenRefused, cs-int64(time.Hour), int32(minLimit)
						admitted = l.AllowN(at(o.u), minLimit)
					} else if l.AllowN(at(off), minLimit+1) {
						oversize.Store(int64(minLimit + 1))
					}
				}
				o.qe = seq.Add(1)
				o.ce = clk.Load()
				busy[q].Add(1)
				if admitted {
					qadms[q] = append(qadms[q], stamped{interval{lo: o.u, hi: o.ce, n: minLimit}, o.qs, o.qe})
				}
				if admitted || o.kind == seenNone {
					continue
				}
				if !pacing.Load() && r.IntN(4) != 0 {
					continue
				}
				if kept++; kept%every != 0 {
					continue
				}
				if len(obs) == cap(obs) {
					for k := range len(obs) / 2 {
						obs[k] = obs[2*k+1]
					}
					obs, every = obs[:len(obs)/2], 2*every
				}
				obs = append(obs, o)
			}
		}()
	}
	stopQueriers := func() {
		stop.Store(true)
		qwg.Wait()
	}
	defer stopQueriers()

	recs := make([][]stamped, cfg.goroutines)
	refusals := make([][]seen, cfg.goroutines)
	for g := range cfg.goroutines {
		recs[g] = make([]stamped, 0, cfg.rounds*(cfg.ops+cfg.phaseCalls))
		refusals[g] = make([]seen, 0, cfg.rounds*cfg.ops)
	}
	paced := make([]stamped, 0, cfg.rounds*cfg.paced)
	var pacedRefusals []seen
	stride := s.pacedStride()
	for round := range cfg.rounds {
		// Free-running: instants from the shared clock, weighted calls,
		// now and then an idle gap longer than every window, now and then
		// a call an hour stale (clamped forward by the limiter: its
		// interval spans the hour until tighten narrows it).
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
					call := seq.Add(1)
					ok := l.AllowN(at(c), n)
					ret := seq.Add(1)
					hi := clk.Load()
					if ok {
						recs[g] = append(recs[g], stamped{interval{lo: c, hi: hi, n: n}, call, ret})
					} else {
						refusals[g] = append(refusals[g], seen{kind: seenRefused, u: c, n: int32(n), qs: call, qe: ret, ce: hi})
					}
				}
			}()
		}
		wg.Wait()

		// Paced: one caller, cost 1, instants a stride apart, so that
		// every rule's window is at most about half full in every state
		// and a reader that mixes stamps of two laps of the ring (the
		// head runs as fast as the caller) answers what no state gives;
		// only this caller moves the clock, so its stamps are exact.
		pacing.Store(true)
		for range cfg.paced {
			c := clk.Add(stride)
			call := seq.Add(1)
			ok := l.AllowN(at(c), 1)
			ret := seq.Add(1)
			hi := clk.Load()
			if ok {
				paced = append(paced, stamped{interval{lo: c, hi: hi, n: 1}, call, ret})
			} else {
				pacedRefusals = append(pacedRefusals, seen{kind: seenRefused, u: c, n: 1, qs: call, qe: ret, ce: hi})
			}
		}
		// A querier descheduled in the middle of a call while the head
		// ran on must finish that call before the clock moves on: from
		// the outside, its answer can be told wrong only if every state
		// it may have read is a paced one.
		for q := range busy {
			if v := busy[q].Load(); v%2 == 1 {
				for k := 0; busy[q].Load() == v; k++ {
					if runtime.Gosched(); k > 100 {
						time.Sleep(10 * time.Microsecond)
					}
				}
			}
		}
		pacing.Store(false)

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
					call := seq.Add(1)
					ok := l.AllowN(at(T), n)
					ret := seq.Add(1)
					if ok {
						admitted.Add(int64(n))
						recs[g] = append(recs[g], stamped{interval{lo: T, hi: T, n: n}, call, ret})
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
	stopQueriers()
	if n := oversize.Load(); n != 0 {
		return fmt.Sprintf("%s: AllowN(n=%d) admitted above the smallest limit %d", s.name, n, minLimit)
	}
	// (Grouped, not concatenated: under the race detector, copying them
	// took longer than checking them.)
	views := tighten(append(append(recs, paced), qadms...), seq.Load())
	all := intervalsOf(views)
	for _, r := range s.rules {
		if msg := certainOverLimit(all, r.Limit, int64(r.Window)); msg != "" {
			return fmt.Sprintf("%s rule %v: %s", s.name, r, msg)
		}
	}
	if msg := checkSeen(s, views, append(append(refusals, pacedRefusals), qseen...), seq.Load()); msg != "" {
		return fmt.Sprintf("%s: %s", s.name, msg)
	}
	return ""
}

// certainOverLimit returns a description of a window (u-w, u] that surely
// holds more than limit: the admissions whose whole interval lies in it total
// more than limit. It returns "" if there is none. It suffices to try u = the
// hi of each admission (shrinking u to the largest hi inside loses nothing).
//
//go:norace
func certainOverLimit(all []interval, limit int, w int64) string {
	idx := make([]int32, len(all))
	key := make([]int64, len(all))
	for i := range all {
		idx[i], key[i] = int32(i), all[i].hi
	}
	sortByKey(idx, key)
	s := make([]interval, len(all))
	for k, i := range idx {
		s[k] = all[i]
	}
	// in lists the admissions counted for u, for the message.
	in := func(u int64) (in []interval) {
		for j := range s {
			if s[j].hi <= u && s[j].lo > u-w {
				in = append(in, s[j])
			}
		}
		return in
	}
	for i := range s {
		u := s[i].hi
		sum := 0
		// Every admission with hi <= u is before i+1 or shares u.
		for j := i; j < len(s) && s[j].hi == u; j++ {
			if s[j].lo > u-w {
				sum += s[j].n
			}
		}
		for j := i - 1; j >= 0 && s[j].hi > u-w; j-- {
			if s[j].lo > u-w {
				sum += s[j].n
			}
		}
		if sum > limit {
			return fmt.Sprintf("window (%d, %d] surely holds %d, limit %d: %v", u-w, u, sum, limit, in(u))
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
// costs from 1 to the limit, idle gaps, stale calls, a paced caller, and
// concurrent queries and refusals at the clock, before it and an hour before
// and after; every query answer and every refusal is checked against the
// states the limiter may have been in (outside_queries_test.go).
func TestOutsideExact(t *testing.T) {
	cfg := outsideConfig{goroutines: 8, rounds: 6, ops: 150, phaseCalls: 3, queriers: 2, stale: true, paced: 600}
	outsideCheck(t, outsideSubjects, cfg, 1)
}

// TestOutsideExactSixteen is TestOutsideExact with 16 goroutines and no stale
// calls, so that nearly every admission is certain.
func TestOutsideExactSixteen(t *testing.T) {
	cfg := outsideConfig{goroutines: 16, rounds: 4, ops: 100, phaseCalls: 2, queriers: 2, paced: 600}
	outsideCheck(t, outsideSubjects, cfg, 1)
}
