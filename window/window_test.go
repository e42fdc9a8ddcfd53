package window

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/internal/twoword"
)

// t0 is a fixed instant for the step tables. Decisions depend only on
// differences between instants, so any instant within the clamping range of
// the limiter's base (about 63 years around New) gives the same results.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// step is one timed call: AllowN(t0+at, n) must return want, and TokensAt at
// the same instant afterwards must return tokens (when tokens >= 0).
type tstep struct {
	at     time.Duration
	n      int
	want   bool
	tokens int
	why    string
}

// runSteps plays steps on l and reports every mismatch with its step index.
func runSteps(t *testing.T, l limiter, steps []tstep) {
	t.Helper()
	for i, s := range steps {
		now := t0.Add(s.at)
		if got := l.AllowN(now, s.n); got != s.want {
			t.Errorf("step %d (%s): AllowN(t0+%v, %d) = %v, want %v", i, s.why, s.at, s.n, got, s.want)
		}
		if s.tokens >= 0 {
			if got := l.TokensAt(now); got != s.tokens {
				t.Errorf("step %d (%s): TokensAt(t0+%v) = %d, want %d", i, s.why, s.at, got, s.tokens)
			}
		}
	}
}

func TestSteps(t *testing.T) {
	const W = 10 * time.Second
	steps := []tstep{
		{0, 1, true, 3, "first admission anchors a window at t0"},
		{0, 3, true, 0, "elapsed = 0, fills the limit"},
		{0, 1, false, 0, "full"},
		{W - 1, 1, false, 0, "last instant of the first window"},
		{W, 1, false, 0, "exact boundary: elapsed 0 in the next window, prev=4 weighs 4"},
		{W + 2500*time.Millisecond, 1, true, 0, "4*7.5s + 1*10s = 40 = limit*W exactly"},
		{W + 2500*time.Millisecond, 1, false, 0, "one more is 50 > 40"},
		{W + 5*time.Second, 1, true, 0, "4*5s + 2*10s = 40"},
		{W + 5*time.Second - 1, 1, false, 0, "time backwards inside the window: decided as given, stricter"},
		{5 * time.Second, 1, false, 0, "time backwards before the window: treated as its start t0+W"},
		{2 * W, 2, true, 0, "next boundary: prev=2 weighs 20, 2 more fit"},
		{2*W + 9*time.Second, 1, true, 0, "prev=2 weighs 2*1s: 2 + 3*10 <= 40"},
		{3*W + 9*time.Second, 0, true, 3, "n = 0 is admitted and writes nothing; prev=3 weighs 3*1s"},
		{3*W + 9*time.Second, -1, false, 3, "n < 0 is refused"},
		{3*W + 9*time.Second, 5, false, 3, "n > limit is refused"},
		{4 * W, 4, true, 0, "two windows after the last admission's window: idle, new anchor at t0+4W"},
		{4*W + W/2, 1, false, 0, "same window as the anchor, full"},
		{6*W - 1, 4, false, 3, "prev=4 weighs 4*1ns: 4ns + 40s > 40s"},
		{6 * W, 4, true, 0, "exactly 2W after the anchor: idle, re-anchored, 4 fit"},
		{6*W + (1<<20)*W, 4, true, 0, "idle gap of 2^20 windows"},
		{6*W + (1<<20)*W + (1<<24)*W, 4, true, 0, "idle gap of 2^24 windows (the generation width)"},
		{6*W + (1<<20)*W + (1<<24)*W + W, 1, false, 0, "the window after it, prev=4 at elapsed 0"},
	}
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		runSteps(t, mk(4, W), steps)
	})
}

// TestIdleGapsPowersOfTwo checks idle gaps of exactly 2^k windows, and 2^k
// windows plus and minus one nanosecond, for every k the range allows: a
// limiter that stored only the low bits of a window number would confuse a
// gap of 2^k windows with no gap at all.
func TestIdleGapsPowersOfTwo(t *testing.T) {
	const W = time.Millisecond
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		for k := 0; k <= 40; k++ {
			for _, delta := range []time.Duration{-1, 0, 1} {
				l := mk(3, W)
				gap := time.Duration(1)<<k*W + delta
				if !l.AllowN(t0, 3) {
					t.Fatalf("k=%d: first AllowN(t0, 3) refused", k)
				}
				// Expected: by the formula, from the state (anchor t0, curr 3).
				ref := newRef(3, int64(W))
				ref.AllowN(0, 3)
				want := ref.AllowN(int64(gap), 3)
				if got := l.AllowN(t0.Add(gap), 3); got != want {
					t.Errorf("k=%d gap=%v: AllowN(3) = %v, want %v", k, gap, got, want)
				}
				if got, want := l.TokensAt(t0.Add(gap)), ref.TokensAt(int64(gap)); got != want {
					t.Errorf("k=%d gap=%v: TokensAt = %d, want %d", k, gap, got, want)
				}
			}
		}
	})
}

// TestLargestConfig runs the formula at the largest limit and window, where
// the products reach 2^77, against math/big.
func TestLargestConfig(t *testing.T) {
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		l := mk(MaxLimit, MaxWindow)
		ref := newRef(MaxLimit, int64(MaxWindow))
		W := MaxWindow
		calls := []struct {
			at time.Duration
			n  int
		}{
			{0, MaxLimit}, {0, 1}, {W - 1, 1}, {W, 1}, {W + 1, 1},
			{W + W/2, MaxLimit / 2}, {W + W/2, 1}, {W + W/2 + 1, 1},
			{2*W - 1, 1}, {2*W - 1, MaxLimit}, {2 * W, MaxLimit}, {3 * W, 7},
		}
		for i, c := range calls {
			// Stay within about 14 years of t0 (and of New).
			now := t0.Add(c.at - 3*W/2)
			off := int64(c.at - 3*W/2)
			want := ref.AllowN(off, c.n)
			if got := l.AllowN(now, c.n); got != want {
				t.Errorf("call %d: AllowN(t0%+v, %d) = %v, want %v", i, c.at-3*W/2, c.n, got, want)
			}
			if got, want := l.TokensAt(now), ref.TokensAt(off); got != want {
				t.Errorf("call %d: TokensAt = %d, want %d", i, got, want)
			}
		}
	})
}

// TestMaxWindowArithmetic drives start+window to the top of the range.
func TestMaxWindowArithmetic(t *testing.T) {
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		l := mk(MaxLimit, MaxWindow)
		far := time.Unix(1<<62, 0)
		if !l.AllowN(far, MaxLimit) {
			t.Fatal("AllowN(far, MaxLimit) refused")
		}
		if l.AllowN(far, 1) {
			t.Fatal("AllowN(far, 1) admitted over the limit")
		}
		if got := l.TokensAt(far); got != 0 {
			t.Errorf("TokensAt(far) = %d", got)
		}
	})
}

// TestZeroValue: the zero Limiter refuses everything and does not panic.
func TestZeroValue(t *testing.T) {
	var l Limiter
	if l.AllowN(t0, 1) || l.Allow() {
		t.Error("zero Limiter admitted a call")
	}
	if !l.AllowN(t0, 0) {
		t.Error("zero Limiter refused n=0")
	}
	if got := l.TokensAt(t0); got != 0 {
		t.Errorf("TokensAt = %d", got)
	}
	if _, ok := l.ReadyAt(t0, 1); ok {
		t.Error("ReadyAt ok on the zero Limiter")
	}
	if err := l.Wait(context.Background()); !errors.Is(err, ErrNeverReady) {
		t.Errorf("Wait = %v, want ErrNeverReady", err)
	}
	_ = l.IdleAt(t0)
}

// TestReadyAt checks ReadyAt against the reference: n fits at the returned
// instant, and (unless it is now) not one nanosecond before it.
func TestReadyAt(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		rng := rand.New(rand.NewPCG(seed, 1))
		for trial := 0; trial < 200; trial++ {
			limit := 1 + rng.IntN(7)
			W := time.Duration(1 + rng.IntN(50))
			l := mk(limit, W)
			ref := newRef(int64(limit), int64(W))
			var at time.Duration
			for i := 0; i < 30; i++ {
				at += time.Duration(rng.IntN(int(W)*3/2+1)) - W/8
				n := 1 + rng.IntN(limit)
				ref.AllowN(int64(at), n)
				l.AllowN(t0.Add(at), n)
				q := 1 + rng.IntN(limit)
				now := t0.Add(at)
				r, ok := l.ReadyAt(now, q)
				if !ok {
					t.Fatalf("ReadyAt(%d) not ok", q)
				}
				ro := int64(r.Sub(t0))
				if ro < int64(at) {
					t.Fatalf("ReadyAt before now")
				}
				fitsAt := func(x int64) bool { return ref.Fits(x, q) }
				if !fitsAt(ro) {
					t.Fatalf("trial %d call %d (limit %d W %d): ReadyAt(t0+%d, %d) = t0+%d, where it does not fit", trial, i, limit, W, at, q, ro)
				}
				if ro > int64(at) && fitsAt(ro-1) {
					t.Fatalf("trial %d call %d (limit %d W %d): ReadyAt(t0+%d, %d) = t0+%d, but it fits 1ns earlier", trial, i, limit, W, at, q, ro)
				}
			}
		}
	})
}

// TestMatchesReference replays random call sequences, including time going
// backwards and long idle gaps, on both implementations and on newRef, and
// checks every decision and TokensAt. It also checks the window bound on the
// stamps: sequential histories stay within max(limit, 2*limit-2).
func TestMatchesReference(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		rng := rand.New(rand.NewPCG(seed, 2))
		for trial := 0; trial < 300; trial++ {
			limit := 1 + rng.IntN(9)
			W := time.Duration(1 + rng.IntN(40))
			l := mk(limit, W)
			ref := newRef(int64(limit), int64(W))
			var at time.Duration
			for i := 0; i < 80; i++ {
				switch rng.IntN(10) {
				case 0:
					at -= time.Duration(rng.IntN(int(W) + 1))
				case 1:
					at += time.Duration(rng.IntN(5)) * W
				default:
					at += time.Duration(rng.IntN(int(W)/2 + 1))
				}
				n := rng.IntN(limit+2) - rng.IntN(2)
				want := ref.AllowN(int64(at), n)
				if got := l.AllowN(t0.Add(at), n); got != want {
					t.Fatalf("trial %d call %d (limit %d, W %d): AllowN(t0+%d, %d) = %v, want %v", trial, i, limit, W, at, n, got, want)
				}
				if got, want := l.TokensAt(t0.Add(at)), ref.TokensAt(int64(at)); got != want {
					t.Fatalf("trial %d call %d: TokensAt(t0+%d) = %d, want %d", trial, i, at, got, want)
				}
			}
			if got, bound := oracle.MaxInWindow(ref.Stamps(0), int64(W)), int64(max(limit, 2*limit-2)); got > bound {
				t.Fatalf("trial %d: %d admitted in one window, bound %d", trial, got, bound)
			}
		}
	})
}

func TestIdleAtBoundary(t *testing.T) {
	const W = time.Second
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		l := mk(3, W)
		if !l.IdleAt(t0) {
			t.Error("new limiter not idle")
		}
		l.AllowN(t0, 1)
		for _, c := range []struct {
			at   time.Duration
			want bool
		}{{-W, false}, {0, false}, {W, false}, {2*W - 1, false}, {2 * W, true}, {100 * W, true}} {
			if got := l.IdleAt(t0.Add(c.at)); got != c.want {
				t.Errorf("IdleAt(t0+%v) = %v, want %v", c.at, got, c.want)
			}
		}
	})
}

// TestReachesSequentialBound builds the worst case for calls made one at a
// time: 2*limit-2 in one window of length W (docs/window.md).
func TestReachesSequentialBound(t *testing.T) {
	const W = time.Second
	for _, limit := range []int{2, 3, 10, 100} {
		forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
			l := mk(limit, W)
			steps := []tstep{
				{0, 1, true, -1, "anchor"},
				{W - 1, limit - 1, true, -1, "fill the anchor window at its last instant"},
				{2*W - 2, limit - 1, true, -1, "prev=limit weighs limit*2ns: limit-1 fit"},
			}
			runSteps(t, l, steps)
			stamps := []oracle.Stamp{{At: 0, Cost: 1}, {At: int64(W - 1), Cost: int64(limit - 1)}, {At: int64(2*W - 2), Cost: int64(limit - 1)}}
			if got := oracle.MaxInWindow(stamps, int64(W)); got != int64(2*limit-2) {
				t.Errorf("limit %d: max in a window = %d, want %d", limit, got, 2*limit-2)
			}
		})
	}
}

// TestReachesBound builds 2*limit-1 in one window, from the state a
// concurrent race can leave: a window that starts without an admission at
// its start (docs/window.md).
func TestReachesBound(t *testing.T) {
	const W = time.Second
	for _, limit := range []int{1, 2, 10, 100} {
		forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
			l := mk(limit, W)
			l.setState(t0, 0, 0)
			steps := []tstep{{W - 1, limit, true, -1, "the whole limit at the window's last instant"}}
			if limit > 1 {
				steps = append(steps,
					tstep{2*W - 2, limit - 1, true, -1, "limit-1 more, 2ns before the next window's end"},
					tstep{2*W - 2, 1, false, 0, "and no more"})
			}
			runSteps(t, l, steps)
		})
	}
}

// TestNeverExceedsBound: random bursts at random instants never put more
// than 2*limit-1 in a window, even starting from a raced state.
func TestNeverExceedsBound(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		rng := rand.New(rand.NewPCG(seed, 4))
		for trial := 0; trial < 300; trial++ {
			limit := 1 + rng.IntN(12)
			W := time.Duration(2 + rng.IntN(100))
			l := mk(limit, W)
			raced := rng.IntN(2) == 0
			var at time.Duration
			if raced {
				l.setState(t0, 0, 0)
			}
			var stamps []oracle.Stamp
			for i := 0; i < 200; i++ {
				at += time.Duration(rng.IntN(int(W)/3 + 1))
				if rng.IntN(20) == 0 {
					at += 2 * W
				}
				n := 1 + rng.IntN(limit)
				if l.AllowN(t0.Add(at), n) {
					stamps = append(stamps, oracle.Stamp{At: int64(at), Cost: int64(n)})
				}
			}
			bound := int64(2*limit - 1)
			if !raced {
				bound = int64(max(limit, 2*limit-2))
			}
			if got := oracle.MaxInWindow(stamps, int64(W)); got > bound {
				t.Fatalf("trial %d (limit %d, W %d, raced %v): %d in one window, bound %d", trial, limit, W, raced, got, bound)
			}
		}
	})
}

// TestGenerationWraps: the 23-bit generation wraps without confusing an
// installed state with a pending one.
func TestGenerationWraps(t *testing.T) {
	const W = time.Second
	l, _ := New(5, W)
	l.AllowN(t0, 2)
	c := l.cnt.Load()
	l.cnt.Store(c | (1<<23-1)<<twoword.GenShift) // generation 2^23-1: parity 1
	l.at.Store(l.at.Load() | 1)                  // keep at's parity in step
	ref := newRef(5, int64(W))
	ref.AllowN(0, 2)
	for i, at := range []time.Duration{W, W + W/2, 2 * W, 3 * W, 3*W + 1, 6 * W, 7 * W} {
		want := ref.AllowN(int64(at), 2)
		if got := l.AllowN(t0.Add(at), 2); got != want {
			t.Fatalf("call %d at t0+%v: got %v, want %v (gen %d)", i, at, got, want, l.cnt.Load()>>twoword.GenShift)
		}
	}
	if g := l.cnt.Load() >> twoword.GenShift; g >= 1<<22 {
		t.Errorf("generation %d did not wrap", g)
	}
}

func TestSize(t *testing.T) {
	var l Limiter
	if size := unsafe.Sizeof(l); size != 2*cacheLine {
		t.Errorf("size of Limiter = %d, want %d (two cache lines)", size, 2*cacheLine)
	}
	if off := unsafe.Offsetof(l.cnt); off != cacheLine {
		t.Errorf("cnt at offset %d, want %d (its own cache line)", off, cacheLine)
	}
	if off := unsafe.Offsetof(l.at); off+8 > cacheLine {
		t.Errorf("at at offset %d, want it in the first cache line", off)
	}
}

func TestZeroAllocs(t *testing.T) {
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		l := mk(1000, time.Millisecond)
		now := t0
		allocs := testing.AllocsPerRun(1000, func() {
			now = now.Add(time.Microsecond)
			l.Allow()
			l.AllowN(now, 1)
			l.AllowN(now, 2000)
			l.TokensAt(now)
			l.ReadyAt(now, 1)
			l.IdleAt(now)
		})
		if allocs != 0 {
			t.Errorf("%v allocs per run, want 0", allocs)
		}
	})
}

func TestWait(t *testing.T) {
	forEachImpl(t, func(t *testing.T, mk func(int, time.Duration) limiter) {
		synctest.Test(t, func(t *testing.T) {
			l := mk(2, time.Second)
			start := time.Now()
			for i := range 2 {
				if !l.Allow() {
					t.Fatalf("Allow %d refused", i)
				}
			}
			// Next window from start+1s with prev=2: one fits from elapsed
			// 0.5s, so at start+1.5s.
			if err := l.Wait(context.Background()); err != nil {
				t.Fatalf("Wait: %v", err)
			}
			if got := time.Since(start); got != 1500*time.Millisecond {
				t.Errorf("Wait returned after %v, want 1.5s", got)
			}
			if err := l.WaitN(context.Background(), 0); err != nil {
				t.Errorf("WaitN(0) = %v", err)
			}
		})
	})
}

// TestRacesAdvanceOfARefusedCall plays, step by step, the interleaving of
// docs/window.md, "Races": a call at 1250ns moves the
// window start to 1000ns, a stale call at 500ns takes the room there, and
// the first call is refused on its next round, leaving the move. Calls at or
// after the moved start decide as if it had not moved; the stale call was
// decided at the moved start. This is the contract; fuzz/
// TestOutsideRefusedWindowCall checks the outcomes of the real race.
func TestRacesAdvanceOfARefusedCall(t *testing.T) {
	l, err := New(2, 1000)
	if err != nil {
		t.Fatal(err)
	}
	at := func(ns int64) time.Time { return t0.Add(time.Duration(ns)) }
	if !l.AllowN(at(0), 1) {
		t.Fatal("first call refused")
	}
	// The call at 1250 fits (prev=1 weighs 750ns: 750 + 1000 <= 2000) and
	// rolls the window, as its first round does.
	a := l.at.Load()
	if !l.at.CompareAndSwap(a, twoword.PackAt(l.base.Offset(at(1000)), true, a&1^1)) {
		t.Fatal("roll")
	}
	if !l.AllowN(at(500), 1) {
		t.Error("the stale call, decided at the moved start (1*1000 + 1*1000 <= 2000), refused")
	}
	if l.AllowN(at(1250), 1) {
		t.Error("the call at 1250 admitted: 750 + 2*1000 > 2000")
	}
	if l.AllowN(at(2900), 2) {
		t.Error("AllowN(2900, 2) admitted: the window of 2000 weighs prev=1 by 100ns")
	}
	if !l.AllowN(at(3500), 1) {
		t.Error("AllowN(3500, 1) refused")
	}
}
