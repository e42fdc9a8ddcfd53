package slidelog

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// admission is one admitted call as the stress tests record it.
type admission struct {
	first uint64 // index of its first unit (cycle<<32 | pos)
	n     int64
	stamp int64
	now   int64 // the stamp of the instant the caller presented
}

// unitIndex converts a head value to a plain unit index for a ring of size.
func unitIndex(h, size uint64) uint64 { return (h>>32)*size + h&posMask }

var stressRules = [][]Rule{
	{{1, 1000}}, {{2, 1000}}, {{3, 700}}, {{8, 1000}}, {{64, 5000}},
	{{2, 300}, {5, 1000}}, {{4, 100}, {4, 1000}, {9, 3000}},
}

// TestConcurrentEqualInstants runs phases in which every goroutine presents
// the same instant. All stamps of a phase then equal that instant, so the
// state after each phase is known exactly, and each phase must admit exactly
// what the sliding log would: never more than the room there was, and no
// call refused while its cost still fit at the end of the phase.
func TestConcurrentEqualInstants(t *testing.T) {
	const goroutines = 8
	for _, rules := range stressRules {
		t.Run(fmt.Sprint(rules), func(t *testing.T) {
			for _, unitOnly := range []bool{true, false} {
				equalInstantPhases(t, rules, goroutines, unitOnly)
			}
		})
	}
}

func equalInstantPhases(t *testing.T, rules []Rule, goroutines int, unitOnly bool) {
	t.Helper()
	l, ref := New(rules), NewReference(rules)
	seed := uint64(len(rules))*31 + uint64(rules[0].Limit)
	rng := rand.New(rand.NewPCG(seed, 99))
	maxW := rules[0].Window
	for _, r := range rules {
		maxW = max(maxW, r.Window)
	}
	now := int64(0)
	for phase := range 300 {
		steps := []int64{0, 1, maxW / 10, maxW / 3, maxW - 1, maxW, maxW + 1, 3 * maxW}
		now += steps[rng.IntN(len(steps))]
		room := ref.TokensAt(now)
		var admitted atomic.Int64
		refused := make([][]int64, goroutines)
		var start, wg sync.WaitGroup
		start.Add(1)
		for g := range goroutines {
			wg.Add(1)
			gseed := seed + uint64(phase*goroutines+g)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(gseed, 7))
				start.Wait()
				for range 4 {
					n := int64(1)
					if !unitOnly && r.IntN(3) == 0 {
						n = 1 + r.Int64N(l.minLimit)
					}
					if l.AllowN(now, n) {
						admitted.Add(n)
					} else {
						refused[g] = append(refused[g], n)
					}
					runtime.Gosched()
				}
			}()
		}
		start.Done()
		wg.Wait()
		a := admitted.Load()
		if a > room {
			t.Fatalf("rules %v phase %d at %d: admitted %d with room for %d", rules, phase, now, a, room)
		}
		for _, rs := range refused {
			for _, n := range rs {
				if n <= room-a {
					t.Fatalf("rules %v phase %d at %d: refused n=%d though %d was still free after the phase (room %d, admitted %d)",
						rules, phase, now, n, room-a, room, a)
				}
			}
		}
		for range a {
			if !ref.AllowN(now, 1) {
				t.Fatalf("reference refused a replayed unit")
			}
		}
		if g, w := l.TokensAt(now), ref.TokensAt(now); g != w {
			t.Fatalf("rules %v phase %d: TokensAt = %d after the phase, reference %d", rules, phase, g, w)
		}
	}
}

// TestConcurrentFreeRunning lets goroutines present interleaved, partly stale
// instants from a shared clock. Every admission reports its index and stamp;
// afterwards the indices must tile the log with no gap or overlap (nothing
// lost or counted twice), stamps must not decrease along the log, every
// admission must be stamped at its own caller's clamped instant (its instant,
// or the stamp before it when that is later), and no window of any rule may
// hold more than its limit.
func TestConcurrentFreeRunning(t *testing.T) {
	const goroutines = 8
	for _, rules := range stressRules {
		for _, unitOnly := range []bool{true, false} {
			t.Run(fmt.Sprintf("%v/unit=%v", rules, unitOnly), func(t *testing.T) {
				freeRunning(t, rules, goroutines, unitOnly)
			})
		}
	}
}

func freeRunning(t *testing.T, rules []Rule, goroutines int, unitOnly bool) {
	t.Helper()
	l := New(rules)
	var clk atomic.Int64
	clk.Store(stampBias) // stamps are offsets + bias; keep them readable
	minW := rules[0].Window
	for _, r := range rules {
		minW = min(minW, r.Window)
	}
	recs := make([][]admission, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), uint64(minW)))
			for range 3000 {
				now := clk.Add(r.Int64N(minW/8+2)) - r.Int64N(minW/4+1) // sometimes stale
				n := int64(1)
				if !unitOnly && r.IntN(4) == 0 {
					n = 1 + r.Int64N(l.minLimit)
				}
				ok, first, stamp := l.allowN(now-stampBias, n)
				if ok {
					recs[g] = append(recs[g], admission{first: first, n: n, stamp: stamp, now: toStamp(now - stampBias)})
				}
			}
		}()
	}
	wg.Wait()
	var all []admission
	for _, rs := range recs {
		all = append(all, rs...)
	}
	size := l.size
	slices.SortFunc(all, func(a, b admission) int {
		return int(int64(unitIndex(a.first, size)) - int64(unitIndex(b.first, size)))
	})
	next := unitIndex(1<<32, size)
	var prev int64
	for i, a := range all {
		if got := unitIndex(a.first, size); got != next {
			t.Fatalf("admission %d starts at unit %d, want %d (gap or overlap)", i, got, next)
		}
		next += uint64(a.n)
		if a.stamp < prev {
			t.Fatalf("admission %d: stamp %d after %d: stamps decrease", i, a.stamp, prev)
		}
		// Every admission, unit or batch, is stamped at its own
		// caller's clamped instant: its instant, or the latest stamp
		// before it (never a helper's: a weighted call was once stamped at the
		// instant of whoever finished it).
		if a.stamp != a.now && a.stamp != prev {
			t.Fatalf("admission %d (n=%d): stamp %d, but its caller's instant is %d and the previous stamp %d",
				i, a.n, a.stamp, a.now, prev)
		}
		prev = a.stamp
	}
	if got := unitIndex(l.head.Load(), size); got != next {
		t.Fatalf("head at unit %d, admissions end at %d", got, next)
	}
	var stamps []int64
	for _, a := range all {
		for range a.n {
			stamps = append(stamps, a.stamp)
		}
	}
	// Safety: units u and u+Limit may not share a window, i.e. their stamps
	// must be at least Window apart.
	for _, r := range rules {
		for u := 0; u+int(r.Limit) < len(stamps); u++ {
			if stamps[u+int(r.Limit)]-stamps[u] < r.Window {
				t.Fatalf("rule %v: units %d and %d stamped %d and %d, less than a window apart",
					r, u, u+int(r.Limit), stamps[u], stamps[u+int(r.Limit)])
			}
		}
	}
	t.Logf("%d admissions (%d units) checked", len(all), len(stamps))
}
