package window

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
)

// These tests are meant for -race: many goroutines on one limiter, in phases
// separated by a barrier, each phase checked against newRef.

const stressGoroutines = 8

// runPhase starts one goroutine per entry of calls at once, and returns the
// admitted calls of each.
func runPhase(l limiter, calls [][]oracle.Stamp) [][]oracle.Stamp {
	out := make([][]oracle.Stamp, len(calls))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for _, c := range calls[g] {
				if l.AllowN(t0.Add(time.Duration(c.At)), int(c.Cost)) {
					out[g] = append(out[g], c)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// TestConcurrentEqualInstants: in each phase every goroutine presents the same
// instant and cost; the total admitted must be exactly what the formula
// allows at that instant (no admission lost, none double-counted, none over
// the formula), whatever the interleaving.
func TestConcurrentEqualInstants(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		const limit = 64
		const W = time.Second
		rng := rand.New(rand.NewPCG(seed, 6))
		l := mk(limit, W)
		ref := newRef(limit, int64(W))
		steps := []time.Duration{0, 1, W / 7, W / 3, W / 2, W - 1, W, W + 1, 2 * W, 3 * W, -W / 2}
		var at time.Duration
		phases := 400
		if testing.Short() {
			phases = 50
		}
		for phase := 0; phase < phases; phase++ {
			at += steps[rng.IntN(len(steps))]
			cost := int64(1 + rng.IntN(3))
			before := ref.TokensAt(int64(at))
			if got := l.TokensAt(t0.Add(at)); got != before {
				t.Fatalf("phase %d: TokensAt(t0+%v) = %d, want %d", phase, at, got, before)
			}
			calls := make([][]oracle.Stamp, stressGoroutines)
			for g := range calls {
				for range limit/stressGoroutines + 2 {
					calls[g] = append(calls[g], oracle.Stamp{At: int64(at), Cost: cost})
				}
			}
			var admitted int64
			for _, c := range runPhase(l, calls) {
				admitted += int64(len(c)) * cost
			}
			if want := int64(before) / cost * cost; admitted != want {
				t.Fatalf("phase %d at t0+%v, cost %d: admitted %d, want %d (tokens before %d)", phase, at, cost, admitted, want, before)
			}
			for range admitted / cost {
				if !ref.AllowN(int64(at), int(cost)) {
					t.Fatalf("phase %d: reference refused an admission the limiter made", phase)
				}
			}
			if got, want := l.TokensAt(t0.Add(at)), ref.TokensAt(int64(at)); got != want {
				t.Fatalf("phase %d: TokensAt after = %d, want %d", phase, got, want)
			}
		}
	})
}

// TestConcurrentMixedInstants: in each phase the goroutines present different
// instants, all inside one window of the limiter's grid (so that no instant
// is clamped and the stamps are known). After the phase the counters must
// account for exactly the admitted cost, and no window of length W may hold
// more than 2*limit-1.
func TestConcurrentMixedInstants(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		const limit = 40
		const W = time.Second
		rng := rand.New(rand.NewPCG(seed, 7))
		l := mk(limit, W)
		ref := newRef(limit, int64(W))
		if !l.AllowN(t0, 1) || !ref.AllowN(0, 1) {
			t.Fatal("first admission refused")
		}
		floor := int64(0) // the start of the window of the latest admission
		phases := 300
		if testing.Short() {
			phases = 50
		}
		for phase := 0; phase < phases; phase++ {
			start := floor
			if rng.IntN(2) == 0 {
				start += int64(W)
			}
			calls := make([][]oracle.Stamp, stressGoroutines)
			for g := range calls {
				for range limit/stressGoroutines + 3 {
					calls[g] = append(calls[g], oracle.Stamp{At: start + rng.Int64N(int64(W)), Cost: int64(1 + rng.IntN(3))})
				}
			}
			var got []oracle.Stamp
			for _, c := range runPhase(l, calls) {
				got = append(got, c...)
			}
			// Every instant lies in [start, start+W), the window the
			// reference is in or the next one: the counters do not depend
			// on the order the admissions are recorded in.
			for _, c := range got {
				ref.Record(c.At, int(c.Cost), true)
			}
			if len(got) > 0 {
				floor = start
			}
			for _, x := range []int64{start, start + int64(W) - 1, start + int64(W) + int64(W)/3} {
				if g, w := l.TokensAt(t0.Add(time.Duration(x))), ref.TokensAt(x); g != w {
					t.Fatalf("phase %d: TokensAt(t0+%d) = %d, want %d: an admission was lost or double-counted", phase, x, g, w)
				}
			}
		}
		if got := oracle.MaxInWindow(ref.Stamps(0), int64(W)); got > 2*limit-1 {
			t.Fatalf("%d admitted in one window, bound %d", got, 2*limit-1)
		}
	})
}

// TestConcurrentAllow hammers Allow (the real clock) from many goroutines with
// a window short enough to roll over and go idle many times during the test,
// and checks that nothing breaks: every admission is counted once.
func TestConcurrentAllow(t *testing.T) {
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		l := mk(1000, 50*time.Microsecond)
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for range stressGoroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 20000; i++ {
					if l.Allow() {
						admitted.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if admitted.Load() == 0 {
			t.Fatal("nothing admitted")
		}
		if n := l.TokensAt(time.Now().Add(time.Second)); n != 1000 {
			t.Errorf("TokensAt one second later = %d, want the full limit", n)
		}
	})
}
