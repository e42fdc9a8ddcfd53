// Package oracle is the naive model of every limiter in this module: the one
// reference that unit tests, the fuzz targets and the accuracy replays compare
// the real limiters against.
//
// It is deliberately naive and obviously correct rather than fast: every
// admission is kept in an unbounded slice, every decision scans it, and the
// two-counter formula is evaluated in math/big. Nothing here is shared with
// the code under test, so a bug in the limiters cannot hide in the model.
//
// Three models are provided:
//
//   - Log, the exact sliding log for one or several rules, all-or-nothing:
//     n is admitted at t iff, for every rule, the cost stamped in
//     (t-Window, t] plus n is at most Limit (packages ring and multi);
//   - TwoCounter, the two-counter estimate for one or several rules,
//     all-or-nothing: n is admitted iff, for every rule,
//     prev*(Window-elapsed) + (curr+n)*Window <= Limit*Window (package window
//     and multi.Approx), with the stale-instant rule and the window anchoring
//     as parameters;
//   - MaxInWindow, a scanner that returns the largest cost with instants in
//     any window (t-W, t] of a history, over every alignment.
//
// Instants are int64 nanoseconds from a base chosen by the caller (Offset
// converts a time.Time). A model may be given Bounds, the range of offsets
// the limiter it stands for can represent: an offset outside them is decided
// at the nearest bound, as the real limiters saturate. Arithmetic on instants
// saturates at the int64 range and never overflows.
//
// A model is not safe for concurrent use; Sync wraps one in a mutex behind the
// limiter method set (time.Time instants), for tests that need a limiter.
package oracle

import (
	"cmp"
	"math"
	"math/big"
	"slices"
	"time"
)

// Rule is one (limit, window) pair: at most Limit units of cost per Window
// nanoseconds. Limit and Window must be at least 1.
type Rule struct {
	Limit  int64
	Window int64
}

// R returns the rule limit per window.
func R(limit int, window time.Duration) Rule { return Rule{Limit: int64(limit), Window: int64(window)} }

// Stamp is one admission: its instant and its cost.
type Stamp struct {
	At   int64 `json:"at"`
	Cost int64 `json:"cost"`
}

// Bounds is the range of offsets a limiter can represent; an offset outside
// it is treated as the nearest bound. The zero Bounds is the whole int64
// range.
type Bounds struct {
	Min, Max int64
}

// clamp returns off clamped to b.
func (b Bounds) clamp(off int64) int64 {
	if b == (Bounds{}) {
		return off
	}
	return min(max(off, b.Min), b.Max)
}

// max returns the largest representable offset.
func (b Bounds) max() int64 {
	if b == (Bounds{}) {
		return math.MaxInt64
	}
	return b.Max
}

// Model is what both models provide. Instants are offsets; n is a cost.
type Model interface {
	// AllowN decides n at now and records an admission: Fits then Record.
	AllowN(now int64, n int) bool
	// Fits reports what AllowN would decide, changing nothing.
	Fits(now int64, n int) bool
	// Record applies a decision made at now for n, by this model or by a
	// limiter the model shadows.
	Record(now int64, n int, admitted bool)
	// TokensAt is the largest n AllowN(now, n) would admit.
	TokensAt(now int64) int
	// RemainingAt is, per rule in order, the largest n that rule alone
	// would admit at now.
	RemainingAt(now int64) []int
	// ReadyAt is the earliest instant u >= now at which AllowN(u, n) would
	// admit if nothing else were admitted meanwhile: now itself when n fits
	// at now; ok is false when no such instant exists.
	ReadyAt(now int64, n int) (at int64, ok bool)
	// IdleAt reports whether, for every call at an instant >= now, the
	// model decides as a new model with the same rules.
	IdleAt(now int64) bool
	// Rules returns the rules.
	Rules() []Rule
}

// Offset returns now - base in nanoseconds, saturated to the int64 range
// (time.Time.Sub saturates).
func Offset(base, now time.Time) int64 { return int64(now.Sub(base)) }

// Instant returns the instant off nanoseconds after base.
func Instant(base time.Time, off int64) time.Time { return base.Add(time.Duration(off)) }

// AddSat returns a+b saturated to the int64 range.
func AddSat(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// SubSat returns a-b saturated to the int64 range.
func SubSat(a, b int64) int64 {
	if b == math.MinInt64 {
		if a >= 0 {
			return math.MaxInt64
		}
		return a - b
	}
	return AddSat(a, -b)
}

// minLimit returns the smallest limit of rules.
func minLimit(rules []Rule) int64 {
	m := rules[0].Limit
	for _, r := range rules {
		m = min(m, r.Limit)
	}
	return m
}

// maxWindow returns the longest window of rules.
func maxWindow(rules []Rule) int64 {
	var m int64
	for _, r := range rules {
		m = max(m, r.Window)
	}
	return m
}

// sorted returns a copy of stamps in increasing order of instant.
func sorted(stamps []Stamp) []Stamp {
	s := slices.Clone(stamps)
	slices.SortStableFunc(s, func(a, b Stamp) int { return cmp.Compare(a.At, b.At) })
	return s
}

// MaxInWindow returns the largest cost with instants in any window (t-w, t],
// over every alignment t. stamps need not be sorted. The maximum is reached
// by a window ending at a stamp, so a sweep over the sorted stamps that
// evaluates the window ending at each distinct instant finds it.
func MaxInWindow(stamps []Stamp, w int64) int64 {
	s := sorted(stamps)
	var best, sum int64
	lo := 0
	for hi := range s {
		sum += s[hi].Cost
		if hi+1 < len(s) && s[hi+1].At == s[hi].At {
			continue // the window ending here also holds the next stamp
		}
		for uint64(s[hi].At-s[lo].At) >= uint64(w) { // exact: s[lo].At <= s[hi].At
			sum -= s[lo].Cost
			lo++
		}
		best = max(best, sum)
	}
	return best
}

// Point is one sample of the sliding count: the cost in (At-W, At].
type Point struct {
	At    int64 `json:"t"`
	Count int64 `json:"c"`
}

// SlidingCount returns the step function t -> cost in (t-w, t] at every
// instant where it may change: each stamp's instant and each stamp's expiry
// (instant + w), in increasing order, one point per instant.
func SlidingCount(stamps []Stamp, w int64) []Point {
	s := sorted(stamps)
	times := make([]int64, 0, 2*len(s))
	for _, st := range s {
		times = append(times, st.At, AddSat(st.At, w))
	}
	slices.Sort(times)
	times = slices.Compact(times)
	out := make([]Point, 0, len(times))
	var sum int64
	lo, hi := 0, 0
	for _, t := range times {
		for hi < len(s) && s[hi].At <= t {
			sum += s[hi].Cost
			hi++
		}
		for lo < hi && uint64(t-s[lo].At) >= uint64(w) { // exact: s[lo].At <= t
			sum -= s[lo].Cost
			lo++
		}
		out = append(out, Point{At: t, Count: sum})
	}
	return out
}

// fitsFormula reports whether prev*(w-el) + (curr+n)*w <= limit*w, in
// math/big.
func fitsFormula(r Rule, prev, curr, el, n int64) bool {
	w := big.NewInt(r.Window)
	lhs := new(big.Int).Mul(big.NewInt(prev), new(big.Int).Sub(w, big.NewInt(el)))
	lhs.Add(lhs, new(big.Int).Mul(new(big.Int).Add(big.NewInt(curr), big.NewInt(n)), w))
	return lhs.Cmp(new(big.Int).Mul(big.NewInt(r.Limit), w)) <= 0
}
