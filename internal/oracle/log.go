package oracle

import "slices"

// Log is the exact sliding log for one or several rules, all-or-nothing:
// n >= 1 is admitted at t iff, for every rule, the cost stamped in
// (t-Window, t] plus n is at most Limit; an admission stamps n at t. n == 0
// is admitted and stamps nothing; n < 0 is refused.
//
// Time never goes backwards: an instant earlier than the latest admitted one
// is decided, and stamped, at that latest instant. So the stamps are in
// non-decreasing order of instant.
type Log struct {
	// Bounds, if set before the first call, is the range of offsets the
	// modelled limiter represents.
	Bounds Bounds
	// ClampSeen, if set before the first call, decides an instant earlier
	// than the latest recorded call, admitted or refused, at that call's
	// instant (the rule of StaleToSeen); by default only admissions count.
	ClampSeen bool

	rules    []Rule
	stamps   []Stamp // admissions, in non-decreasing order of instant
	seen     bool    // some call was recorded
	lastSeen int64   // the latest recorded (clamped) instant, valid if seen
}

var _ Model = (*Log)(nil)

// NewLog returns an empty exact log for the rules (at least one).
func NewLog(rules ...Rule) *Log {
	if len(rules) == 0 {
		panic("oracle: NewLog needs at least one rule")
	}
	return &Log{rules: slices.Clone(rules)}
}

// Rules returns the rules.
func (o *Log) Rules() []Rule { return slices.Clone(o.rules) }

// Stamps returns the admissions so far, in order.
func (o *Log) Stamps() []Stamp { return slices.Clone(o.stamps) }

// Latest returns the latest admitted instant; ok is false if nothing was
// admitted.
func (o *Log) Latest() (at int64, ok bool) {
	if len(o.stamps) == 0 {
		return 0, false
	}
	return o.stamps[len(o.stamps)-1].At, true
}

// Clamp returns the instant a call at now is decided at: now within Bounds,
// and not before the latest admission (with ClampSeen, the latest recorded
// call).
func (o *Log) Clamp(now int64) int64 {
	t := o.Bounds.clamp(now)
	if last, ok := o.Latest(); ok && t < last {
		t = last
	}
	if o.ClampSeen && o.seen && t < o.lastSeen {
		t = o.lastSeen
	}
	return t
}

// costEndingAt returns the cost stamped in (t-w, t], for t not before any
// stamp. It scans from the newest stamp back until one has left the window.
func (o *Log) costEndingAt(t, w int64) int64 {
	var c int64
	for i := len(o.stamps) - 1; i >= 0; i-- {
		s := o.stamps[i]
		if uint64(t-s.At) >= uint64(w) { // t - s.At >= w, exactly: s.At <= t
			break
		}
		c += s.Cost
	}
	return c
}

// remaining returns rule i's room at the clamped instant t.
func (o *Log) remaining(i int, t int64) int64 {
	r := o.rules[i]
	return max(0, r.Limit-o.costEndingAt(t, r.Window))
}

// fitsAt reports whether n fits every rule at the clamped instant t.
func (o *Log) fitsAt(t int64, n int64) bool {
	for i := range o.rules {
		if n > o.remaining(i, t) {
			return false
		}
	}
	return true
}

// Fits reports whether AllowN(now, n) would admit, changing nothing.
func (o *Log) Fits(now int64, n int) bool {
	switch {
	case n == 0:
		return true
	case n < 0 || int64(n) > minLimit(o.rules):
		return false
	}
	return o.fitsAt(o.Clamp(now), int64(n))
}

// Record stamps n at the clamped instant when admitted and n > 0; a refusal
// records nothing (with ClampSeen, only its instant).
func (o *Log) Record(now int64, n int, admitted bool) {
	t := o.Clamp(now)
	o.seen, o.lastSeen = true, t
	if admitted && n > 0 {
		o.stamps = append(o.stamps, Stamp{At: t, Cost: int64(n)})
	}
}

// AllowN decides n at now and stamps it if admitted.
func (o *Log) AllowN(now int64, n int) bool {
	ok := o.Fits(now, n)
	o.Record(now, n, ok)
	return ok
}

// RemainingAt returns, per rule, the cost that rule alone would admit at now.
func (o *Log) RemainingAt(now int64) []int {
	t := o.Clamp(now)
	out := make([]int, len(o.rules))
	for i := range o.rules {
		out[i] = int(o.remaining(i, t))
	}
	return out
}

// TokensAt returns the largest n AllowN(now, n) would admit.
func (o *Log) TokensAt(now int64) int { return slices.Min(o.RemainingAt(now)) }

// ReadyAt returns the earliest instant u >= now at which n would be admitted
// if nothing else were: now itself when n fits at now (decided at the
// clamped instant); otherwise the first instant at which some stamp leaves
// some rule's window and n fits. ok is false for n < 0, n above the smallest
// limit, or when that instant lies past Bounds (time cannot advance there).
func (o *Log) ReadyAt(now int64, n int) (int64, bool) {
	switch {
	case n == 0:
		return now, true
	case n < 0 || int64(n) > minLimit(o.rules):
		return 0, false
	}
	t := o.Clamp(now)
	if o.fitsAt(t, int64(n)) {
		return now, true
	}
	var cands []int64
	for _, s := range o.stamps {
		for _, r := range o.rules {
			if c := AddSat(s.At, r.Window); c > t {
				cands = append(cands, c)
			}
		}
	}
	slices.Sort(cands)
	for _, c := range cands {
		if c > o.Bounds.max() {
			return 0, false
		}
		if o.fitsAt(c, int64(n)) {
			return c, true
		}
	}
	return 0, false // every stamp left at the int64 end and n still does not fit
}

// IdleAt reports whether nothing was admitted, or the latest admission is at
// least the longest window before now: then no stamp is in any window ending
// at or after now, and no instant >= now is clamped.
func (o *Log) IdleAt(now int64) bool {
	t := o.Bounds.clamp(now)
	if o.ClampSeen && o.seen && t < o.lastSeen {
		return false
	}
	last, ok := o.Latest()
	return !ok || t >= last && uint64(t-last) >= uint64(maxWindow(o.rules))
}
