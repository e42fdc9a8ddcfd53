package twoword

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/slidelimit/slidelimit/internal/twocount"
)

// state is one (at, cnt) pair, as a caller of this package lays it out.
type state struct {
	at, cnt atomic.Uint64
}

func newState() *state {
	s := &state{}
	s.at.Store(New())
	return s
}

func (s *state) decide(r *twocount.Rule, off int64, n int) (bool, bool, Seen) {
	return Decide(&s.at, &s.cnt, r, off, n)
}

// words returns both words, to check that a call wrote nothing.
func (s *state) words() [2]uint64 { return [2]uint64{s.at.Load(), s.cnt.Load()} }

// countWord builds a count word: generation gen, counters prev and curr.
func countWord(gen, prev, curr uint64) uint64 {
	return gen<<GenShift | prev<<CountBits | curr
}

func TestPackAtRoundTrip(t *testing.T) {
	starts := []int64{twocount.StartNew, twocount.OffMin, -1, 0, 1, 12345, twocount.OffMax, twocount.OffMax + 2*twocount.MaxWindow}
	for _, start := range starts {
		for _, roll := range []bool{false, true} {
			for parity := range uint64(2) {
				a := PackAt(start, roll, parity)
				if got := StartOf(a); got != start {
					t.Errorf("StartOf(PackAt(%d, %v, %d)) = %d", start, roll, parity, got)
				}
				if got := a&rollBit != 0; got != roll {
					t.Errorf("PackAt(%d, %v, %d): roll bit %v", start, roll, parity, got)
				}
				if got := a & 1; got != parity {
					t.Errorf("PackAt(%d, %v, %d): parity %d", start, roll, parity, got)
				}
			}
		}
	}
	if got := StartOf(New()); got != twocount.StartNew {
		t.Errorf("StartOf(New()) = %d, want StartNew %d", got, int64(twocount.StartNew))
	}
	if New()&(rollBit|1) != 0 {
		t.Errorf("New() = %#x: roll or parity set", New())
	}
	c := countWord(GenMask, CountMask, 1)
	if PrevOf(c) != CountMask || CurrOf(c) != 1 {
		t.Errorf("PrevOf, CurrOf of %#x = %d, %d; want %d, 1", c, PrevOf(c), CurrOf(c), CountMask)
	}
	if Dead(c) || !Dead(c|deadBit) {
		t.Errorf("Dead: generation %d taken for dead, or dead bit missed", GenMask)
	}
}

// TestDecideEdges: n <= 0 and n above the limit read and write nothing.
func TestDecideEdges(t *testing.T) {
	r := &twocount.Rule{Limit: 3, Window: 1000}
	s := newState()
	if ok, dead, _ := s.decide(r, 0, 2); !ok || dead {
		t.Fatalf("Decide(0, 2) on a new state = %v, dead %v", ok, dead)
	}
	before := s.words()
	for _, tc := range []struct {
		n    int
		want bool
	}{{0, true}, {-1, false}, {math.MinInt, false}, {4, false}, {math.MaxInt, false}} {
		ok, dead, seen := s.decide(r, 10, tc.n)
		if ok != tc.want || dead || seen != (Seen{}) {
			t.Errorf("Decide(10, %d) = %v, dead %v, %+v; want %v, false, zero Seen", tc.n, ok, dead, seen, tc.want)
		}
		if s.words() != before {
			t.Errorf("Decide(10, %d) wrote the state", tc.n)
		}
	}
	if ok, _, seen := s.decide(r, 10, 1); !ok || seen != (Seen{T: 10, Start: 0, Prev: 0, Curr: 3}) {
		t.Errorf("Decide(10, 1) = %v, %+v; want true, {10 0 0 3}", ok, seen)
	}
}

// TestDecideSequence follows one state through an anchor, admissions in its
// window, a roll, stale instants and a new anchor, checking each answer,
// each Seen and the words.
func TestDecideSequence(t *testing.T) {
	const W = 1000
	r := &twocount.Rule{Limit: 10, Window: W}
	s := newState()
	type step struct {
		off  int64
		n    int
		want bool
		seen Seen
	}
	steps := []step{
		{100, 4, true, Seen{T: 100, Start: 100, Prev: 0, Curr: 4}},     // anchor at its own instant
		{600, 6, true, Seen{T: 600, Start: 100, Prev: 0, Curr: 10}},    // fills the window exactly
		{1099, 1, false, Seen{T: 1099, Start: 100, Prev: 0, Curr: 10}}, // its last instant
		// The next window [1100, 2100): prev 10 weighs 10*(W-el)/W.
		{1100, 1, false, Seen{T: 1100, Start: 1100, Prev: 10, Curr: 0}}, // its first instant
		{1200, 1, true, Seen{T: 1200, Start: 1100, Prev: 10, Curr: 1}},  // 10*900 + 1*1000 = 10*1000
		{1200, 1, false, Seen{T: 1200, Start: 1100, Prev: 10, Curr: 1}},
		{1150, 1, false, Seen{T: 1150, Start: 1100, Prev: 10, Curr: 1}}, // stale, inside: as given
		{500, 1, false, Seen{T: 1100, Start: 1100, Prev: 10, Curr: 1}},  // stale, before: at start
		{1700, 4, true, Seen{T: 1700, Start: 1100, Prev: 10, Curr: 5}},  // 10*400 + 5*1000 <= 10000
		{1700, 2, false, Seen{T: 1700, Start: 1100, Prev: 10, Curr: 5}}, // 4000 + 7000 > 10000
		// [2100, 3100): prev 5 weighs 5*1 at 3099.
		{3099, 10, false, Seen{T: 3099, Start: 2100, Prev: 5, Curr: 0}},
		{3099, 9, true, Seen{T: 3099, Start: 2100, Prev: 5, Curr: 9}},
		// Exactly two windows after 2100: a new anchor at the instant.
		{4100, 10, true, Seen{T: 4100, Start: 4100, Prev: 0, Curr: 10}},
	}
	for i, st := range steps {
		before := s.words()
		ok, dead, seen := s.decide(r, st.off, st.n)
		if ok != st.want || dead || seen != st.seen {
			t.Fatalf("step %d: Decide(%d, %d) = %v, dead %v, %+v; want %v, %+v", i, st.off, st.n, ok, dead, seen, st.want, st.seen)
		}
		a, c := s.at.Load(), s.cnt.Load()
		if !ok {
			// One at a time, a refused call did not fit on its first
			// snapshot: it writes nothing.
			if s.words() != before {
				t.Errorf("step %d: a refusal wrote the state", i)
			}
			continue
		}
		if StartOf(a) != seen.Start || PrevOf(c) != seen.Prev || CurrOf(c) != seen.Curr || (c>>GenShift)&1 != a&1 {
			t.Errorf("step %d: words start %d prev %d curr %d (installed %v), want %+v", i, StartOf(a), PrevOf(c), CurrOf(c), (c>>GenShift)&1 == a&1, seen)
		}
	}
	// After the anchor at 4107 the words say so: no roll bit.
	if a := s.at.Load(); a&rollBit != 0 {
		t.Errorf("anchor left the roll bit set: %#x", a)
	}
}

// TestDecideRefusalWritesNothing: a call that does not fit on its snapshot
// writes nothing, even at an instant where a fitting call would move the
// window.
func TestDecideRefusalWritesNothing(t *testing.T) {
	r := &twocount.Rule{Limit: 4, Window: 1000}
	s := newState()
	s.decide(r, 0, 4)
	before := s.words()
	// At 1000 the window would roll, and prev 4 weighs 4: nothing fits.
	if ok, _, seen := s.decide(r, 1000, 1); ok || seen != (Seen{T: 1000, Start: 1000, Prev: 4, Curr: 0}) {
		t.Fatalf("Decide(1000, 1) = %v, %+v", ok, seen)
	}
	if s.words() != before {
		t.Errorf("a refusal at a rolling instant wrote the state")
	}
}

// pending returns a state whose window word has moved (a roll when roll, an
// anchor otherwise) to start while its count word still holds generation
// gen with counters prev and curr of the window before.
func pending(start int64, roll bool, gen, prev, curr uint64) *state {
	s := &state{}
	s.at.Store(PackAt(start, roll, (gen+1)&1))
	s.cnt.Store(countWord(gen, prev, curr))
	return s
}

// TestPendingInstalled: every reader and Decide install a pending move
// before using the counters: after a roll prev is the old curr, after an
// anchor both are zero, and the generation advances (wrapping at 2^23
// without touching the dead bit).
func TestPendingInstalled(t *testing.T) {
	r := &twocount.Rule{Limit: 10, Window: 1000}
	for _, gen := range []uint64{0, 1, 6, GenMask} {
		for _, roll := range []bool{true, false} {
			wantPrev := int64(0)
			if roll {
				wantPrev = 7
			}
			wantCnt := countWord((gen+1)&GenMask, uint64(wantPrev), 0)

			s := pending(5000, roll, gen, 3, 7)
			a, c, dead := Snapshot(&s.at, &s.cnt)
			if dead || a != s.at.Load() || c != wantCnt || s.cnt.Load() != wantCnt {
				t.Errorf("gen %d roll %v: Snapshot = %#x, %#x, dead %v; want %#x installed", gen, roll, a, c, dead, wantCnt)
			}

			s = pending(5000, roll, gen, 3, 7)
			tt, ws, p, q, dead := View(&s.at, &s.cnt, r, 5500)
			if dead || tt != 5500 || ws != 5000 || p != wantPrev || q != 0 {
				t.Errorf("gen %d roll %v: View = %d %d %d %d %v; want 5500 5000 %d 0", gen, roll, tt, ws, p, q, dead, wantPrev)
			}

			s = pending(5000, roll, gen, 3, 7)
			ok, dead, seen := s.decide(r, 5500, 1)
			if !ok || dead || seen != (Seen{T: 5500, Start: 5000, Prev: wantPrev, Curr: 1}) {
				t.Errorf("gen %d roll %v: Decide = %v %v %+v; want prev %d curr 1", gen, roll, ok, dead, seen, wantPrev)
			}
			if c := s.cnt.Load(); c != wantCnt+1 {
				t.Errorf("gen %d roll %v: count word %#x after Decide, want %#x", gen, roll, c, wantCnt+1)
			}

			s = pending(5000, roll, gen, 3, 7)
			if idle, dead := Idle(&s.at, &s.cnt, r, 5500); idle || dead || s.cnt.Load() != wantCnt {
				t.Errorf("gen %d roll %v: Idle = %v %v, count word %#x; want false, installed", gen, roll, idle, dead, s.cnt.Load())
			}
		}
	}
}

// TestIdleRetireKill: Idle is exact at 2W after the start; Retire kills an
// idle state only, Kill any live one, each once; a dead state decides
// nothing and every function reports it dead.
func TestIdleRetireKill(t *testing.T) {
	const W = 1000
	r := &twocount.Rule{Limit: 5, Window: W}
	s := newState()
	for _, off := range []int64{twocount.OffMin, -1 << 62, 0, 1 << 62, twocount.OffMax} {
		if idle, dead := Idle(&s.at, &s.cnt, r, off); !idle || dead {
			t.Errorf("new state: Idle(%d) = %v, %v", off, idle, dead)
		}
	}
	s.decide(r, 100, 1)
	s.decide(r, 1100+500, 1) // rolls to 1100
	for off, want := range map[int64]bool{100: false, 3099: false, 3100: true, 1 << 62: true} {
		if idle, _ := Idle(&s.at, &s.cnt, r, off); idle != want {
			t.Errorf("Idle(%d) = %v, want %v (start 1100)", off, idle, want)
		}
	}
	before := s.words()
	if Retire(&s.at, &s.cnt, r, 3099) || s.words() != before {
		t.Fatalf("Retire(3099) retired a state that is not idle, or wrote it")
	}
	if !Retire(&s.at, &s.cnt, r, 3100) || !Dead(s.cnt.Load()) {
		t.Fatalf("Retire(3100) did not retire an idle state")
	}
	if Retire(&s.at, &s.cnt, r, 3100) || Kill(&s.cnt) {
		t.Errorf("a dead state was retired or killed again")
	}
	dead := s.words()
	if ok, isDead, seen := s.decide(r, 3100, 1); ok || !isDead || seen != (Seen{}) {
		t.Errorf("Decide on a dead state = %v, dead %v, %+v", ok, isDead, seen)
	}
	if _, _, _, _, isDead := View(&s.at, &s.cnt, r, 3100); !isDead {
		t.Errorf("View on a dead state: not dead")
	}
	if idle, isDead := Idle(&s.at, &s.cnt, r, 3100); idle || !isDead {
		t.Errorf("Idle on a dead state = %v, %v; want false, true", idle, isDead)
	}
	if _, _, isDead := Snapshot(&s.at, &s.cnt); !isDead {
		t.Errorf("Snapshot on a dead state: not dead")
	}
	if s.words() != dead {
		t.Errorf("calls on a dead state wrote it")
	}

	k := newState()
	k.decide(r, 0, 5)
	if !Kill(&k.cnt) || !Dead(k.cnt.Load()) || PrevOf(k.cnt.Load()) != 0 || CurrOf(k.cnt.Load()) != 5 {
		t.Errorf("Kill of a live state: %v, count word %#x", Dead(k.cnt.Load()), k.cnt.Load())
	}
	if Kill(&k.cnt) {
		t.Errorf("Kill of a dead state reported true")
	}
}

// TestConcurrentDecideExact: goroutines admitting cost 1 at instants that
// roll and re-anchor the window together admit exactly what the formula
// allows at each phase, whatever the interleaving.
func TestConcurrentDecideExact(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{2, 8} {
		runtime.GOMAXPROCS(procs)
		const W, limit, G = 1000, 40, 8
		r := &twocount.Rule{Limit: limit, Window: W}
		s := newState()
		// Phases: anchor at 0 (40 fit); 1000, prev 40 weighs 40: none;
		// 1500, weighs 20: 20 fit; 3500 (2W after 1000): a new anchor, 40.
		phases := []struct{ off, want int64 }{{0, 40}, {1000, 0}, {1500, 20}, {3500, 40}, {4600, 40 - 36}}
		for _, ph := range phases {
			var admitted atomic.Int64
			var wg sync.WaitGroup
			for range G {
				wg.Go(func() {
					for range limit {
						if ok, _, _ := s.decide(r, ph.off, 1); ok {
							admitted.Add(1)
						}
					}
				})
			}
			wg.Wait()
			if got := admitted.Load(); got != ph.want {
				t.Fatalf("GOMAXPROCS %d, off %d: admitted %d, want %d", procs, ph.off, got, ph.want)
			}
		}
	}
}

// TestRetireRacesDecide: Retire at an instant where the state is idle
// while another goroutine keeps admitting into it (each admission a new
// anchor, so three writes) retires it, and reports so, only once its own
// compare-and-swap has marked it dead; the admitting goroutine then finds it
// dead.
func TestRetireRacesDecide(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const W = 1000
	r := &twocount.Rule{Limit: 3, Window: W}
	const far = 1 << 50 // idle there whatever the admissions before it
	for round := range 150 {
		s := newState()
		var started, stop atomic.Bool
		var sawDead bool
		var wg sync.WaitGroup
		wg.Go(func() {
			// Once stop is set, Retire has returned: one more call
			// must find the state dead.
			for i := int64(0); ; i++ {
				last := stop.Load()
				if _, dead, _ := s.decide(r, i*2*W, 1); dead || last {
					sawDead = dead
					return
				}
				started.Store(true)
			}
		})
		for !started.Load() {
			runtime.Gosched()
		}
		retired := Retire(&s.at, &s.cnt, r, far)
		dead := Dead(s.cnt.Load())
		stop.Store(true)
		wg.Wait()
		if !retired || !dead || !sawDead {
			t.Fatalf("round %d: Retire at an idle instant = %v, state dead %v, admissions saw it dead %v; want all true", round, retired, dead, sawDead)
		}
	}
}

// TestConcurrentRollsCountEveryAdmission: goroutines admitting cost 1 at
// instants from a shared clock, which rolls the window every few calls,
// while others read the state (View, Idle), record what each admission was
// decided on. Every admission is counted exactly once: within a window the
// curr values seen by its admissions are 1, 2, ... each once, all of them
// saw the same prev, and the next window's prev is the number admitted in
// it. A snapshot torn across a window move would install counters for the
// wrong window and lose or repeat counts.
func TestConcurrentRollsCountEveryAdmission(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{2, 8} {
		runtime.GOMAXPROCS(procs)
		const W, deciders, readers, calls = 4, 6, 2, 4000
		r := &twocount.Rule{Limit: twocount.MaxLimit, Window: W}
		s := newState()
		var clock atomic.Int64
		var stop atomic.Bool
		seen := make([][]Seen, deciders)
		var wg, rg sync.WaitGroup
		for g := range deciders {
			wg.Go(func() {
				for range calls {
					ok, dead, sn := s.decide(r, clock.Add(1), 1)
					if !ok || dead {
						t.Errorf("cost 1 refused under the largest limit: %v %v %+v", ok, dead, sn)
						return
					}
					seen[g] = append(seen[g], sn)
				}
			})
		}
		for range readers {
			rg.Go(func() {
				for !stop.Load() {
					View(&s.at, &s.cnt, r, clock.Load())
					Idle(&s.at, &s.cnt, r, clock.Load())
				}
			})
		}
		wg.Wait()
		stop.Store(true)
		rg.Wait()

		type window struct {
			prev  int64
			currs map[int64]bool
		}
		windows := map[int64]*window{}
		for _, list := range seen {
			for _, sn := range list {
				w := windows[sn.Start]
				if w == nil {
					w = &window{prev: sn.Prev, currs: map[int64]bool{}}
					windows[sn.Start] = w
				}
				if sn.Prev != w.prev || w.currs[sn.Curr] {
					t.Fatalf("GOMAXPROCS %d: window %d: admission %+v repeats a curr or disagrees on prev %d", procs, sn.Start, sn, w.prev)
				}
				w.currs[sn.Curr] = true
			}
		}
		for start, w := range windows {
			for c := int64(1); c <= int64(len(w.currs)); c++ {
				if !w.currs[c] {
					t.Fatalf("GOMAXPROCS %d: window %d: %d admissions but none saw curr %d", procs, start, len(w.currs), c)
				}
			}
			next, ok := windows[start+W]
			if ok && next.prev != int64(len(w.currs)) {
				t.Fatalf("GOMAXPROCS %d: window %d has prev %d, the window before it admitted %d", procs, start+W, next.prev, len(w.currs))
			}
		}
	}
}
