package accuracy

import (
	"math/bits"
	"sort"
	"time"
)

// Stamp is one admission: its instant (nanoseconds after the replay's epoch)
// and its cost.
type Stamp struct {
	At   int64 `json:"at"`
	Cost int64 `json:"cost"`
}

// Oracle is the exact sliding log, written as naively as possible so that it
// cannot share a bug with the code it judges: an unbounded slice of stamps and
// a linear scan per decision. The window ending at t is (t-W, t]; an instant
// earlier than the latest one seen is treated as the latest (the library's
// rule for stale instants).
type Oracle struct {
	Limit  int64
	Window int64
	latest int64
	seen   bool
	stamps []Stamp
}

// NewOracle returns an empty exact log for limit events per window.
func NewOracle(limit int, window time.Duration) *Oracle {
	return &Oracle{Limit: int64(limit), Window: int64(window)}
}

// AllowN admits n at now iff the cost already stamped in (now-W, now] plus n
// is at most the limit. n == 0 is admitted and writes nothing; n < 0 is
// refused.
func (o *Oracle) AllowN(now int64, n int64) bool {
	if o.seen && now < o.latest {
		now = o.latest
	}
	o.latest, o.seen = now, true
	if n == 0 {
		return true
	}
	if n < 0 || n > o.Limit {
		return false
	}
	// Stamps are appended at clamped, so non-decreasing, instants: scan
	// back from the newest until one has left the window.
	var inWindow int64
	for i := len(o.stamps) - 1; i >= 0 && o.stamps[i].At > now-o.Window; i-- {
		inWindow += o.stamps[i].Cost
	}
	if inWindow+n > o.Limit {
		return false
	}
	o.stamps = append(o.stamps, Stamp{At: now, Cost: n})
	return true
}

// TwoCounter is the two-counter estimate of window/ computed exactly in
// integers (no floating point, no rounding): windows are aligned at
// origin + k*W, and n is admitted at now iff
//
//	prev*(W-elapsed) + (curr+n)*W <= limit*W
//
// where elapsed is now's distance from the start of its aligned window, curr
// the cost admitted in that window and prev the cost admitted in the one
// before (zero if that one was skipped). Stale instants are clamped forward.
type TwoCounter struct {
	Limit, Window int64
	latest        int64
	seen          bool
	k             int64 // index of the current aligned window
	prev, curr    int64
}

// NewTwoCounter returns the model for limit per window, aligned at offset 0.
func NewTwoCounter(limit int, window time.Duration) *TwoCounter {
	return &TwoCounter{Limit: int64(limit), Window: int64(window)}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// mulLE reports whether a*b + c*d <= e*f for non-negative operands, in 128
// bits so that large windows cannot overflow.
func mulLE(a, b, c, d, e, f uint64) bool {
	h1, l1 := bits.Mul64(a, b)
	h2, l2 := bits.Mul64(c, d)
	l, carry := bits.Add64(l1, l2, 0)
	h, _ := bits.Add64(h1, h2, carry)
	he, le := bits.Mul64(e, f)
	return h < he || (h == he && l <= le)
}

// AllowN applies the formula at now.
func (m *TwoCounter) AllowN(now int64, n int64) bool {
	if m.seen && now < m.latest {
		now = m.latest
	}
	k := floorDiv(now, m.Window)
	switch {
	case !m.seen:
		m.k = k
	case k == m.k+1:
		m.prev, m.curr, m.k = m.curr, 0, k
	case k > m.k+1:
		m.prev, m.curr, m.k = 0, 0, k
	}
	m.latest, m.seen = now, true
	if n == 0 {
		return true
	}
	if n < 0 || n > m.Limit {
		return false
	}
	elapsed := now - k*m.Window
	if !mulLE(uint64(m.prev), uint64(m.Window-elapsed), uint64(m.curr+n), uint64(m.Window), uint64(m.Limit), uint64(m.Window)) {
		return false
	}
	m.curr += n
	return true
}

// MaxInWindow returns the largest cost in any window (t-W, t] over every
// alignment t. The maximum is reached with t at a stamp, so a two-pointer sweep
// over the sorted stamps finds it.
func MaxInWindow(stamps []Stamp, window int64) int64 {
	s := sortedCopy(stamps)
	var best, sum int64
	lo := 0
	for hi := range s {
		sum += s[hi].Cost
		for s[lo].At <= s[hi].At-window {
			sum -= s[lo].Cost
			lo++
		}
		// Stamps sharing s[hi]'s instant belong to the same window: only
		// count once all of them are in.
		if hi+1 < len(s) && s[hi+1].At == s[hi].At {
			continue
		}
		best = max(best, sum)
	}
	return best
}

func sortedCopy(stamps []Stamp) []Stamp {
	s := append([]Stamp(nil), stamps...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].At < s[j].At })
	return s
}

// Point is one sample of the sliding count: the cost in (At-W, At].
type Point struct {
	At    int64 `json:"t"`
	Count int64 `json:"c"`
}

// SlidingCount returns the step function t -> cost in (t-W, t] at every
// instant where it changes: each stamp (the count right after it) and each
// stamp's expiry t+W (the count right after the stamp leaves).
func SlidingCount(stamps []Stamp, window int64) []Point {
	s := sortedCopy(stamps)
	var times []int64
	for _, st := range s {
		times = append(times, st.At, st.At+window)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	var out []Point
	var sum int64
	lo, hi := 0, 0
	for i, t := range times {
		if i > 0 && times[i-1] == t {
			continue
		}
		for hi < len(s) && s[hi].At <= t {
			sum += s[hi].Cost
			hi++
		}
		for lo < hi && s[lo].At <= t-window {
			sum -= s[lo].Cost
			lo++
		}
		out = append(out, Point{At: t, Count: sum})
	}
	return out
}
