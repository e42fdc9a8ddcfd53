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
// is at most the limit, and records it. n == 0 is admitted and writes
// nothing; n < 0 is refused.
func (o *Oracle) AllowN(now int64, n int64) bool {
	ok := o.Fits(now, n)
	o.Record(now, n, ok)
	return ok
}

// Fits reports what AllowN would decide, changing nothing.
func (o *Oracle) Fits(now int64, n int64) bool {
	if o.seen && now < o.latest {
		now = o.latest
	}
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
	return inWindow+n <= o.Limit
}

// Record applies a decision made at now, by this oracle or by a limiter the
// oracle shadows: the instant is seen and, if admitted, n is stamped.
func (o *Oracle) Record(now int64, n int64, admitted bool) {
	if o.seen && now < o.latest {
		now = o.latest
	}
	o.latest, o.seen = now, true
	if admitted && n > 0 {
		o.stamps = append(o.stamps, Stamp{At: now, Cost: n})
	}
}

// TwoCounter is the two-counter estimate computed exactly in integers (no
// floating point, no rounding): n is admitted at now iff
//
//	prev*(W-elapsed) + (curr+n)*W <= limit*W
//
// where elapsed is now's distance from the start of its window, curr the
// cost admitted in that window and prev the cost admitted in the one before.
//
// Two alignments are modelled. Grid (Anchored false): windows start at
// multiples of W from offset 0, and a stale instant is clamped to the latest
// one seen; this is RussellLuo/slidingwindow's and httprate's layout (they
// then compute the formula in floating point). Anchored: window/'s documented
// layout, checked independently here: the first admission into an idle
// limiter (nothing in the current or the previous window, that is 2W or more
// after the current window's start) starts a window at its own instant, a
// later window starts W after the previous one, an instant before the current
// window's start is treated as that start, and a refused call changes
// nothing.
type TwoCounter struct {
	Limit, Window int64
	Anchored      bool
	// ClampLatest (anchored layout only): an instant before the latest
	// admitted one is treated as that one (multi's Approx), instead of
	// before the current window's start (window).
	ClampLatest bool
	seen        bool
	latest      int64 // grid: latest instant seen
	start       int64 // start of the current window
	prev, curr  int64
}

// NewTwoCounter returns the grid model for limit per window, aligned at
// offset 0.
func NewTwoCounter(limit int, window time.Duration) *TwoCounter {
	return &TwoCounter{Limit: int64(limit), Window: int64(window)}
}

// NewAnchoredTwoCounter returns the anchored model (window/'s layout; with
// clampLatest, multi.Approx's).
func NewAnchoredTwoCounter(limit int, window time.Duration, clampLatest bool) *TwoCounter {
	return &TwoCounter{Limit: int64(limit), Window: int64(window), Anchored: true, ClampLatest: clampLatest}
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

// AllowN applies the formula at now and records the decision.
func (m *TwoCounter) AllowN(now int64, n int64) bool {
	ok := m.Fits(now, n)
	m.Record(now, n, ok)
	return ok
}

// view returns the clamped instant and the window in effect at now, without
// changing anything.
func (m *TwoCounter) view(now int64) (t, start, prev, curr int64) {
	if m.Anchored {
		if m.seen && now < m.start {
			now = m.start
		}
		if m.ClampLatest && m.seen && now < m.latest {
			now = m.latest
		}
		switch d := now - m.start; {
		case !m.seen || d >= 2*m.Window:
			return now, now, 0, 0
		case d >= m.Window:
			return now, m.start + m.Window, m.curr, 0
		}
		return now, m.start, m.prev, m.curr
	}
	if m.seen && now < m.latest {
		now = m.latest
	}
	start = floorDiv(now, m.Window) * m.Window
	switch {
	case !m.seen || start == m.start:
		return now, start, m.prev, m.curr
	case start == m.start+m.Window:
		return now, start, m.curr, 0
	}
	return now, start, 0, 0
}

// Fits reports whether the formula admits n at now, changing nothing.
func (m *TwoCounter) Fits(now int64, n int64) bool {
	if n == 0 {
		return true
	}
	if n < 0 || n > m.Limit {
		return false
	}
	t, start, prev, curr := m.view(now)
	return mulLE(uint64(prev), uint64(m.Window-(t-start)), uint64(curr+n), uint64(m.Window), uint64(m.Limit), uint64(m.Window))
}

// Record applies a decision made at now, by this model or by a limiter it
// shadows. In the grid layout every call moves the window; in the anchored
// one only an admission writes.
func (m *TwoCounter) Record(now int64, n int64, admitted bool) {
	if m.Anchored && (!admitted || n <= 0) {
		return
	}
	t, start, prev, curr := m.view(now)
	m.latest, m.start, m.prev, m.curr, m.seen = t, start, prev, curr, true
	if admitted && n > 0 {
		m.curr += n
	}
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
