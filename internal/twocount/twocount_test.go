package twocount

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// fitsBig evaluates prev*(W-el) + (curr+n)*W <= limit*W in math/big.
func fitsBig(r Rule, prev, curr, el, n int64) bool {
	lhs := new(big.Int).Mul(big.NewInt(prev), big.NewInt(r.Window-el))
	lhs.Add(lhs, new(big.Int).Mul(big.NewInt(curr+n), big.NewInt(r.Window)))
	rhs := new(big.Int).Mul(big.NewInt(r.Limit), big.NewInt(r.Window))
	return lhs.Cmp(rhs) <= 0
}

// TestFitsExact checks Fits against math/big over the whole supported
// range, a third of the draws at its extremes, and Tokens as the largest n
// that fits.
func TestFitsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 100000; i++ {
		r := Rule{Limit: 1 + rng.Int64N(MaxLimit), Window: 1 + rng.Int64N(MaxWindow)}
		if i%3 == 0 {
			r = Rule{Limit: MaxLimit, Window: MaxWindow - rng.Int64N(3)}
		}
		prev := rng.Int64N(r.Limit + 1)
		curr := rng.Int64N(r.Limit + 1)
		el := rng.Int64N(r.Window)
		n := 1 + rng.Int64N(r.Limit)
		if got, want := r.Fits(prev, curr, el, n), fitsBig(r, prev, curr, el, n); got != want {
			t.Fatalf("%+v.Fits(%d, %d, %d, %d) = %v, want %v", r, prev, curr, el, n, got, want)
		}
		tk := r.Tokens(prev, curr, el)
		if tk > 0 && !fitsBig(r, prev, curr, el, tk) || tk < r.Limit && fitsBig(r, prev, curr, el, tk+1) {
			t.Fatalf("%+v.Tokens(%d, %d, %d) = %d is not the largest n that fits", r, prev, curr, el, tk)
		}
	}
}

// fitsAt decides n at instant u >= t from the state (start, prev, curr) as a
// limiter would if nothing were admitted: the view, then the formula in
// math/big.
func fitsAt(r Rule, start, prev, curr, u, n int64) bool {
	_, ws, p, c, _ := r.View(start, prev, curr, u)
	return fitsBig(r, p, c, max(u, start)-ws, n)
}

// TestReadyAtExact checks ReadyAt on random states, small windows where
// every nanosecond can be tried and the largest ones: n fits at the answer,
// and not one nanosecond before it unless it is t itself.
func TestReadyAtExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 100000; i++ {
		r := Rule{Limit: 1 + rng.Int64N(12), Window: 1 + rng.Int64N(50)}
		if i%4 == 0 {
			r = Rule{Limit: MaxLimit - rng.Int64N(3), Window: MaxWindow - rng.Int64N(3)}
		}
		start := rng.Int64N(1 << 40)
		prev := rng.Int64N(r.Limit + 1)
		curr := 1 + rng.Int64N(r.Limit)
		u := start + rng.Int64N(3*r.Window)
		n := 1 + rng.Int64N(r.Limit)
		tt, ws, p, c, _ := r.View(start, prev, curr, u)
		got := r.ReadyAt(ws, p, c, tt, n)
		if got < tt || !fitsAt(r, start, prev, curr, got, n) {
			t.Fatalf("%+v state (%d, %d, %d): ReadyAt(%d, %d) = %d, where it does not fit", r, start, prev, curr, u, n, got)
		}
		if got > tt && fitsAt(r, start, prev, curr, got-1, n) {
			t.Fatalf("%+v state (%d, %d, %d): ReadyAt(%d, %d) = %d, but it fits 1ns earlier", r, start, prev, curr, u, n, got)
		}
	}
}

// TestStep checks the view at the edges of the two windows, for empty
// states too: the cases depend on time alone.
func TestStep(t *testing.T) {
	r := Rule{Limit: 4, Window: 10}
	for _, c := range []struct {
		start, prev, curr, t int64
		ws, p, c             int64
		adv                  Advance
	}{
		{100, 1, 2, 100, 100, 1, 2, None},
		{100, 1, 2, 109, 100, 1, 2, None},
		{100, 1, 2, 110, 110, 2, 0, Roll},
		{100, 1, 2, 119, 110, 2, 0, Roll},
		{100, 1, 2, 120, 120, 0, 0, Anchor},
		{100, 3, 0, 105, 100, 3, 0, None},
		{100, 3, 0, 110, 110, 0, 0, Roll}, // by time alone, even with nothing to roll
		{100, 0, 0, 105, 100, 0, 0, None}, // an empty window stays (a race leaves one)
		{StartNew, 0, 0, OffMin, OffMin, 0, 0, Anchor},
	} {
		ws, p, cc, adv := r.Step(c.start, c.prev, c.curr, c.t)
		if ws != c.ws || p != c.p || cc != c.c || adv != c.adv {
			t.Errorf("Step(%d, %d, %d, %d) = %d, %d, %d, %d; want %d, %d, %d, %d",
				c.start, c.prev, c.curr, c.t, ws, p, cc, adv, c.ws, c.p, c.c, c.adv)
		}
	}
	if !r.Idle(StartNew, OffMin) || r.Idle(100, 119) || !r.Idle(100, 120) {
		t.Error("Idle")
	}
	for _, c := range []struct{ off, want int64 }{{-1 << 63, OffMin}, {1<<63 - 1, OffMax}, {OffMax + 1, OffMax}, {5, 5}} {
		if got := Clamp(c.off); got != c.want {
			t.Errorf("Clamp(%d) = %d, want %d: instants outside [OffMin, OffMax] must be clamped "+
				"(a start past OffMax does not fit window's 62-bit field, and its calls spin)", c.off, got, c.want)
		}
	}
}
