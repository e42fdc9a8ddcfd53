// Package twocount is the arithmetic of the two-counter sliding window, shared
// by package window and by multi.Approx (one rule each): the formula, the
// largest cost it admits, the earliest instant a cost fits, and how the window
// moves with time. It holds no state and knows nothing of concurrency; the
// callers keep (start, prev, curr) in their own words and publish it by
// compare-and-swap.
//
// Time is cut into consecutive windows of length W starting at start. A call
// of cost n at instant t, elapsed = t - start into its window, is admitted iff
//
//	prev*(W-elapsed) + (curr+n)*W <= limit*W
//
// computed exactly in 128-bit integers. Instants are nanosecond offsets from
// a limiter's base, clamped to [OffMin, OffMax]; a limiter that has admitted
// nothing has start StartNew, at least two windows before every clamped
// instant, so its counters have expired everywhere.
//
// Stale instants: an instant before start is decided at start (View). The
// state records nothing earlier, and deciding at start is never more
// permissive than deciding at any later instant of the window (the previous
// window only loses weight as elapsed grows), so a stale instant never lets
// more through than a fresh one would.
package twocount

import "math/bits"

const (
	// MaxLimit is the largest limit: a counter holds up to 2^20-1, so that
	// window can pack both counters, a 23-bit generation and a flag in one word.
	MaxLimit = 1<<20 - 1
	// MaxWindow is the longest window, 2^57 ns (about 4.6 years): products
	// stay below 2^77 and window starts below 2^61.
	MaxWindow = 1 << 57

	// StartNew is the window start of a limiter that has admitted nothing.
	StartNew = -1 << 61
	// OffMin and OffMax bound the clamped instants, about ±63.9 years around
	// the base. A window start is at most OffMax, so start+W stays below
	// 2^61 (window keeps starts in a signed 62-bit field), and StartNew is at
	// least 2*MaxWindow before OffMin.
	OffMin = StartNew + 2*MaxWindow
	OffMax = 1<<61 - 1 - 2*MaxWindow
)

// Clamp returns off clamped to [OffMin, OffMax].
func Clamp(off int64) int64 { return min(max(off, OffMin), OffMax) }

// Advance says what an admission at an instant must write besides its cost:
// nothing, a rollover to the next window, or a new anchor at its instant.
type Advance uint8

const (
	None Advance = iota
	Roll
	Anchor
)

// Rule is one (limit, window) pair in nanoseconds: limit in [1, MaxLimit],
// window in [1, MaxWindow].
type Rule struct {
	Limit, Window int64
}

// Step returns the window start and counters in effect at instant t >= start,
// given the stored start and counters, and the advance an admission at t
// needs:
//
//   - t in [start, start+W): the same window;
//   - t in [start+W, start+2W): the next window, where the old curr becomes
//     prev (a roll);
//   - later: both windows are empty; the limiter is idle, and an admission
//     at t anchors a new window at t.
//
// The cases depend on time alone, never on the counts: package window moves
// its start by one compare-and-swap and installs the counters by another,
// and an admission that lands in between must still be counted (a roll
// carries it into prev; an anchor drops only windows at least W before it).
func (r Rule) Step(start, prev, curr, t int64) (ws, p, c int64, adv Advance) {
	switch d := t - start; {
	case d < r.Window:
		return start, prev, curr, None
	case d < 2*r.Window:
		return start + r.Window, curr, 0, Roll
	default:
		return t, 0, 0, Anchor
	}
}

// View returns the instant t a call at offset off decides at (off clamped,
// and not before start), and the window start and counters in effect at t.
func (r Rule) View(start, prev, curr, off int64) (t, ws, p, c int64, adv Advance) {
	t = max(Clamp(off), start)
	ws, p, c, adv = r.Step(start, prev, curr, t)
	return t, ws, p, c, adv
}

// Fits reports whether prev*(W-el) + (curr+n)*W <= limit*W, exactly: the
// comparison prev*(W-el) <= (limit-curr-n)*W is made on 128-bit products.
// el is in [0, W); prev, curr in [0, MaxLimit]; n >= 1.
func (r Rule) Fits(prev, curr, el, n int64) bool {
	rem := r.Limit - curr - n
	if rem < 0 {
		return false
	}
	if prev == 0 {
		return true
	}
	h1, l1 := bits.Mul64(uint64(prev), uint64(r.Window-el))
	h2, l2 := bits.Mul64(uint64(rem), uint64(r.Window))
	return h1 < h2 || h1 == h2 && l1 <= l2
}

// Tokens returns the largest n with prev*(W-el) + (curr+n)*W <= limit*W, or
// 0: limit - curr - ceil(prev*(W-el)/W).
func (r Rule) Tokens(prev, curr, el int64) int64 {
	if prev == 0 {
		// No share of prev (a key's first window, or one after an idle
		// one): spare the division, the costliest instruction here.
		return max(r.Limit-curr, 0)
	}
	hi, lo := bits.Mul64(uint64(prev), uint64(r.Window-el))
	// The quotient is at most prev, so hi < W and Div64 cannot overflow.
	q, rem := bits.Div64(hi, lo, uint64(r.Window))
	if rem != 0 {
		q++
	}
	return max(r.Limit-curr-int64(q), 0)
}

// ReadyAt returns the earliest instant >= t at which n (1 <= n <= limit)
// fits if nothing else is admitted, given the window start ws and counters
// in effect at t (from View); t itself when n fits at t.
//
// Within the window, prev*(W-el) <= rem*W with rem = limit-curr-n holds iff
// W-el <= floor(rem*W/prev), so from el = W - floor(rem*W/prev). From the
// next window on, prev' = curr and curr' = 0, and n fits from
// el' = W - floor((limit-n)*W/curr). At ws+2W both counters are zero and n
// fits. The result is at most ws+2W <= OffMax+2*MaxWindow < 2^61.
func (r Rule) ReadyAt(ws, prev, curr, t, n int64) int64 {
	w := r.Window
	if r.Fits(prev, curr, t-ws, n) {
		return t
	}
	// n does not fit at t: if rem >= 0 then prev*(W-el) > rem*W, so
	// rem*W/prev < W and mulDiv's result is below W.
	if rem := r.Limit - curr - n; rem >= 0 && prev > 0 {
		if f := mulDiv(rem, w, prev); f > 0 {
			return ws + w - f
		}
	}
	next := ws + w
	if curr <= r.Limit-n {
		// Includes curr == 0: prev' = curr fits at once.
		return next
	}
	// curr > limit-n >= 0, so (limit-n)*W/curr < W.
	return next + w - mulDiv(r.Limit-n, w, curr)
}

// Idle reports whether both counters are zero at every instant from off on:
// the clamped off is at least two windows after start. A limiter idle at off
// decides every call at an instant at or after off as a new one would.
func (r Rule) Idle(start, off int64) bool { return Clamp(off)-start >= 2*r.Window }

// mulDiv returns floor(a*b/c) for a, b, c > 0 when the result is below 2^63;
// callers guarantee it.
func mulDiv(a, b, c int64) int64 {
	if a == 0 {
		// ReadyAt of the whole limit asks for 0*W/curr: no division.
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}
