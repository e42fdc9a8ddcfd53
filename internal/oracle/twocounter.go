package oracle

import (
	"fmt"
	"slices"
	"strings"
)

// Stale says which instant a call presented with a stale instant (earlier
// than the model's state) is decided at.
type Stale uint8

const (
	// StaleToStart decides an instant before the start of a rule's current
	// window at that start, and a stale instant inside the current window
	// as given (package window's rule; per rule in a multi-rule model).
	StaleToStart Stale = iota
	// StaleToLatest decides an instant before the latest admitted instant at
	// that instant, for every rule (the exact log's rule).
	StaleToLatest
	// StaleToSeen decides an instant before the latest instant of any call
	// recorded, admitted or not, at that instant (limiters that move their
	// window on every call, such as RussellLuo/slidingwindow).
	StaleToSeen
)

// Anchoring says where a rule's windows fall.
type Anchoring uint8

const (
	// AnchorIdle starts a window at the instant of an admission into an
	// idle rule (both counters zero: nothing admitted yet, or two windows
	// passed since the current one started); later windows follow back to
	// back. Decisions never depend on when the limiter was created.
	AnchorIdle Anchoring = iota
	// AnchorGrid aligns windows on multiples of the window from offset 0.
	AnchorGrid
)

// TwoCounter is the two-counter estimate for one or several rules,
// all-or-nothing. For each rule, time is cut into back-to-back windows of
// length W (where they fall is set by the Anchoring); curr is the cost
// admitted in the window holding the decision instant t and prev the cost
// admitted in the one before. n >= 1 is admitted at t iff, for every rule,
//
//	prev*(W-elapsed) + (curr+n)*W <= Limit*W
//
// with elapsed = t minus the start of t's window, evaluated in math/big. An
// admission counts n in every rule; a refusal changes no rule. n == 0 is
// admitted and counts nothing; n < 0 is refused.
type TwoCounter struct {
	// Bounds, if set before the first call, is the range of offsets the
	// modelled limiter represents.
	Bounds Bounds

	rules     []Rule
	stale     Stale
	anchoring Anchoring

	state    []counters // per rule
	admitted bool       // something was admitted
	latest   int64      // latest admitted (clamped) instant, valid if admitted
	seen     bool       // some call was recorded
	lastSeen int64      // latest recorded (clamped) instant, valid if seen
	stamps   [][]Stamp  // per rule, each admission at the instant it was decided at
}

// counters is one rule's state: the start of its current window and the
// cost admitted in it and in the one before.
type counters struct {
	start, prev, curr int64
}

var _ Model = (*TwoCounter)(nil)

// NewTwoCounter returns an empty two-counter model for the rules (at least
// one), with the given stale-instant rule and anchoring.
func NewTwoCounter(stale Stale, anchoring Anchoring, rules ...Rule) *TwoCounter {
	if len(rules) == 0 {
		panic("oracle: NewTwoCounter needs at least one rule")
	}
	return &TwoCounter{
		rules:     slices.Clone(rules),
		stale:     stale,
		anchoring: anchoring,
		state:     make([]counters, len(rules)),
		stamps:    make([][]Stamp, len(rules)),
	}
}

// Rules returns the rules.
func (m *TwoCounter) Rules() []Rule { return slices.Clone(m.rules) }

// Stamps returns rule i's admissions, each at the instant rule i decided it
// at (with StaleToStart the rules of one call may decide at different
// instants).
func (m *TwoCounter) Stamps(i int) []Stamp { return slices.Clone(m.stamps[i]) }

// clampRule returns the instant rule i decides a call at now at.
func (m *TwoCounter) clampRule(i int, now int64) int64 {
	t := m.Bounds.clamp(now)
	switch {
	case m.stale == StaleToStart && m.admitted:
		return max(t, m.state[i].start)
	case m.stale == StaleToLatest && m.admitted:
		return max(t, m.latest)
	case m.stale == StaleToSeen && m.seen:
		return max(t, m.lastSeen)
	}
	return t
}

// floorDiv returns a/b rounded towards minus infinity, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// view returns rule i's window start and counters in effect at the decision
// instant t (not before the stored start).
func (m *TwoCounter) view(i int, t int64) counters {
	w := m.rules[i].Window
	s := m.state[i]
	if m.anchoring == AnchorGrid {
		ws := floorDiv(t, w) * w
		switch {
		case !m.admitted || ws == s.start:
			return counters{start: ws, prev: s.prev, curr: s.curr}
		case ws-w == s.start:
			return counters{start: ws, prev: s.curr}
		}
		return counters{start: ws}
	}
	if !m.admitted {
		return counters{start: t}
	}
	switch d := uint64(t - s.start); { // t >= s.start: exact
	case d < uint64(w):
		return s
	case d < 2*uint64(w):
		// The next window, by time alone. After an admission curr > 0
		// here; only an Advance leaves an empty current window.
		return counters{start: s.start + w, prev: s.curr}
	}
	return counters{start: t} // idle: an admission anchors here
}

// fitsRule reports whether n fits rule i at instant now.
func (m *TwoCounter) fitsRule(i int, now int64, n int64) bool {
	t := m.clampRule(i, now)
	c := m.view(i, t)
	return fitsFormula(m.rules[i], c.prev, c.curr, t-c.start, n)
}

// Fits reports whether AllowN(now, n) would admit, changing nothing.
func (m *TwoCounter) Fits(now int64, n int) bool {
	switch {
	case n == 0:
		return true
	case n < 0 || int64(n) > minLimit(m.rules):
		return false
	}
	for i := range m.rules {
		if !m.fitsRule(i, now, int64(n)) {
			return false
		}
	}
	return true
}

// Record applies a decision at now: an admission of n > 0 counts n in every
// rule's window at its decision instant. With StaleToSeen every call moves
// the instant later calls are clamped to.
func (m *TwoCounter) Record(now int64, n int, admitted bool) {
	t := m.Bounds.clamp(now)
	if m.seen {
		t = max(t, m.lastSeen)
	}
	m.seen, m.lastSeen = true, t
	if !admitted || n <= 0 {
		return
	}
	next := make([]counters, len(m.rules))
	latest := m.clampRule(0, now)
	for i := range m.rules {
		ti := m.clampRule(i, now)
		c := m.view(i, ti)
		c.curr += int64(n)
		next[i] = c
		m.stamps[i] = append(m.stamps[i], Stamp{At: ti, Cost: int64(n)})
		latest = max(latest, ti)
	}
	if m.admitted {
		latest = max(latest, m.latest)
	}
	m.state, m.admitted, m.latest = next, true, latest
}

// Advance moves every rule to its view at its decision instant for a call at
// now, admitting nothing: the current window becomes the one holding that
// instant (the counters roll over as they would for an admission, or a new
// window starts there when the rule is idle). It models a limiter that may
// move its window before it decides and keep the move when it refuses.
// Later stale instants are clamped as after an admission.
func (m *TwoCounter) Advance(now int64) {
	next := make([]counters, len(m.rules))
	latest := m.clampRule(0, now)
	for i := range m.rules {
		ti := m.clampRule(i, now)
		next[i] = m.view(i, ti)
		latest = max(latest, ti)
	}
	if m.admitted {
		latest = max(latest, m.latest)
	}
	m.state, m.admitted, m.latest = next, true, latest
}

// DecisionInstants returns, per rule, the instant a call at now is decided
// at (now within Bounds and clamped by the stale-instant rule).
func (m *TwoCounter) DecisionInstants(now int64) []int64 {
	out := make([]int64, len(m.rules))
	for i := range m.rules {
		out[i] = m.clampRule(i, now)
	}
	return out
}

// Clone returns an independent copy of the model.
func (m *TwoCounter) Clone() *TwoCounter {
	c := *m
	c.rules = slices.Clone(m.rules)
	c.state = slices.Clone(m.state)
	c.stamps = make([][]Stamp, len(m.stamps))
	for i, s := range m.stamps {
		c.stamps[i] = slices.Clone(s)
	}
	return &c
}

// Key returns a string identifying the state later decisions depend on: two
// models with the same rules, stale-instant rule and anchoring and equal
// keys decide every later call alike (the stamps kept for Stamps are not
// part of it).
func (m *TwoCounter) Key() string {
	var b strings.Builder
	fmt.Fprint(&b, m.admitted, m.state)
	switch m.stale {
	case StaleToLatest:
		fmt.Fprint(&b, " ", m.latest)
	case StaleToSeen:
		fmt.Fprint(&b, " ", m.seen, m.lastSeen)
	}
	return b.String()
}

// AllowN decides n at now and counts it if admitted.
func (m *TwoCounter) AllowN(now int64, n int) bool {
	ok := m.Fits(now, n)
	m.Record(now, n, ok)
	return ok
}

// RemainingAt returns, per rule, the largest cost that rule alone would admit
// at now (at most its limit), found by a binary search over the costs (the
// formula's left side grows with n, so the costs that fit are 0..k).
func (m *TwoCounter) RemainingAt(now int64) []int {
	out := make([]int, len(m.rules))
	for i, r := range m.rules {
		lo, hi := int64(0), r.Limit // lo fits, every cost above hi does not
		for lo < hi {
			mid := hi - (hi-lo)/2
			if m.fitsRule(i, now, mid) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		out[i] = int(lo)
	}
	return out
}

// TokensAt returns the largest n AllowN(now, n) would admit.
func (m *TwoCounter) TokensAt(now int64) int { return slices.Min(m.RemainingAt(now)) }

// ReadyAt returns the earliest instant u >= now at which n would be admitted
// if nothing else were: now itself when n fits at now. The instants that fit
// form an up-set (the estimate only decays while nothing is admitted, and
// both counters are zero two windows after a rule's decision instant), so a
// binary search finds the first. ok is false for n < 0, n above the smallest
// limit, or when that instant lies past Bounds.
func (m *TwoCounter) ReadyAt(now int64, n int) (int64, bool) {
	switch {
	case n == 0:
		return now, true
	case n < 0 || int64(n) > minLimit(m.rules):
		return 0, false
	}
	if m.Fits(now, n) {
		return now, true
	}
	lo := m.Bounds.clamp(now) // does not fit
	hi := lo
	for i, r := range m.rules {
		hi = max(hi, AddSat(AddSat(m.clampRule(i, now), r.Window), r.Window))
	}
	hi = min(hi, m.Bounds.max())
	if !m.Fits(hi, n) {
		return 0, false
	}
	for uint64(hi-lo) > 1 { // lo does not fit, hi fits
		mid := lo + int64(uint64(hi-lo)/2)
		if m.Fits(mid, n) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// IdleAt reports whether every call at an instant >= now is decided as by a
// new model: now is not before an instant later calls would be clamped to,
// and every rule's counters are zero at now, and, with AnchorIdle, two
// windows have passed since the start of the rule's current window (an
// Advance can leave an empty current window whose grid a new model would
// not follow: docs/window.md's "IdleAt iff now >= start + 2W").
func (m *TwoCounter) IdleAt(now int64) bool {
	if !m.admitted {
		return true
	}
	t := m.Bounds.clamp(now)
	if m.stale == StaleToLatest && t < m.latest || m.stale == StaleToSeen && t < m.lastSeen {
		return false
	}
	for i, r := range m.rules {
		ti := m.clampRule(i, now)
		if c := m.view(i, ti); c.prev != 0 || c.curr != 0 {
			return false
		}
		if m.anchoring == AnchorIdle && uint64(ti-m.state[i].start) < 2*uint64(r.Window) {
			return false
		}
	}
	return true
}
