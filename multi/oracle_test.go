package multi_test

import (
	"math/big"

	"github.com/slidelimit/slidelimit/multi"
)

// This file holds the naive references the tests compare against: one
// unbounded log per rule for the exact flavour, one pair of counters per rule
// with big-integer arithmetic for the approximate one, and the all-or-nothing
// rule on top. Instants are int64 nanoseconds; the clamping rule is the
// library's (an instant before the latest admitted one is treated as it).

// oracle is what both references provide.
type oracle interface {
	allowN(t int64, n int) bool
	remaining(t int64) []int
	tokens(t int64) int
}

// logOracle is the exact reference: every admitted unit's instant, per call.
type logOracle struct {
	rules []multi.Rule
	seen  bool
	last  int64
	at    []int64 // instant of each admission
	cost  []int   // its cost
}

func newLogOracle(rules []multi.Rule) *logOracle { return &logOracle{rules: rules} }

func (o *logOracle) clamp(t int64) int64 {
	if o.seen && t < o.last {
		return o.last
	}
	return t
}

// in returns the cost admitted in (t-w, t].
func (o *logOracle) in(t, w int64) int {
	c := 0
	for i, a := range o.at {
		if a > t-w && a <= t {
			c += o.cost[i]
		}
	}
	return c
}

func (o *logOracle) remaining(t int64) []int {
	t = o.clamp(t)
	var out []int
	for _, r := range o.rules {
		out = append(out, max(0, r.Limit-o.in(t, int64(r.Window))))
	}
	return out
}

func (o *logOracle) tokens(t int64) int {
	m := -1
	for _, v := range o.remaining(t) {
		if m < 0 || v < m {
			m = v
		}
	}
	return m
}

func (o *logOracle) allowN(t int64, n int) bool {
	if n == 0 {
		return true
	}
	if n < 0 {
		return false
	}
	t = o.clamp(t)
	for _, r := range o.rules {
		if o.in(t, int64(r.Window))+n > r.Limit {
			return false
		}
	}
	o.at = append(o.at, t)
	o.cost = append(o.cost, n)
	o.seen, o.last = true, t
	return true
}

// approxOracle is the two-counter reference: per rule the start of its
// current window and the two counters, and the decision in big integers.
type approxOracle struct {
	rules []multi.Rule
	seen  bool
	last  int64
	st    []counters
}

type counters struct {
	start      int64
	prev, curr int64
}

func newApproxOracle(rules []multi.Rule) *approxOracle {
	return &approxOracle{rules: rules, st: make([]counters, len(rules))}
}

// view returns rule i's counters and elapsed time at instant t, which is
// first clamped to the start of the rule's current window (an instant before
// it is decided at it): the stored window, the next one (curr becomes prev),
// or, two windows on or before the first admission, a new series of windows
// starting at t.
func (o *approxOracle) view(i int, t int64) (c counters, elapsed int64) {
	w := int64(o.rules[i].Window)
	s := o.st[i]
	if o.seen {
		t = max(t, s.start)
	}
	switch {
	case !o.seen:
	case t-s.start < w:
		return s, t - s.start
	case t-s.start < 2*w:
		return counters{start: s.start + w, prev: s.curr}, t - s.start - w
	}
	return counters{start: t}, 0
}

func bi(v int64) *big.Int { return big.NewInt(v) }

// admits is prev*(W-elapsed) + (curr+n)*W <= limit*W in big integers.
func (o *approxOracle) admits(i int, c counters, el int64, n int64) bool {
	r := o.rules[i]
	w := int64(r.Window)
	lhs := new(big.Int).Mul(bi(c.prev), bi(w-el))
	lhs.Add(lhs, new(big.Int).Mul(bi(c.curr+n), bi(w)))
	rhs := new(big.Int).Mul(bi(int64(r.Limit)), bi(w))
	return lhs.Cmp(rhs) <= 0
}

// clamp is the identity: each rule clamps to its own window start (view).
func (o *approxOracle) clamp(t int64) int64 { return t }

func (o *approxOracle) remaining(t int64) []int {
	t = o.clamp(t)
	var out []int
	for i, r := range o.rules {
		c, el := o.view(i, t)
		m := 0
		for m < r.Limit && o.admits(i, c, el, int64(m+1)) {
			m++
		}
		out = append(out, m)
	}
	return out
}

func (o *approxOracle) tokens(t int64) int {
	m := -1
	for _, v := range o.remaining(t) {
		if m < 0 || v < m {
			m = v
		}
	}
	return m
}

func (o *approxOracle) allowN(t int64, n int) bool {
	if n == 0 {
		return true
	}
	if n < 0 {
		return false
	}
	t = o.clamp(t)
	next := make([]counters, len(o.rules))
	for i := range o.rules {
		c, el := o.view(i, t)
		if !o.admits(i, c, el, int64(n)) {
			return false
		}
		c.curr += int64(n)
		next[i] = c
	}
	o.st = next
	o.seen, o.last = true, t
	return true
}
