package redis_test

import (
	"math/big"

	"github.com/slidelimit/slidelimit/redis"
)

// This file holds the naive models the Redis limiters are replayed against,
// in microseconds. They are deliberately simple: an unbounded list of stamps,
// and the two-counter formula in big integers.

// logOracle is the exact sliding log with several rules, all or nothing: a
// call of cost n at t (clamped to the newest stamp) is admitted iff, for every
// rule, the stamps in (t-w, t] plus n are at most the limit.
type logOracle struct {
	rules  []redis.Rule
	stamps []int64 // one per unit of cost, non-decreasing
}

func (o *logOracle) clamp(t int64) int64 {
	if len(o.stamps) > 0 {
		return max(t, o.stamps[len(o.stamps)-1])
	}
	return t
}

func (o *logOracle) in(t, w int64) int {
	c := 0
	for _, s := range o.stamps {
		if s > t-w {
			c++
		}
	}
	return c
}

// allowN returns the decision, the instant decided at, the earliest instant
// the cost fits (-1: never) and the remaining cost per rule after it.
func (o *logOracle) allowN(t int64, n int) (ok bool, at, ready int64, rem []int) {
	t = o.clamp(t)
	ok = true
	ready = t
	for _, r := range o.rules {
		w := r.Window.Microseconds()
		if n > r.Limit {
			ok, ready = false, -1
			continue
		}
		if o.in(t, w)+n > r.Limit {
			ok = false
			if ready >= 0 {
				// The earliest u with in(u, w)+n <= limit: when the
				// (limit-n+1)-th newest stamp leaves the window.
				s := o.stamps[len(o.stamps)-(r.Limit-n+1)]
				ready = max(ready, s+w)
			}
		}
	}
	if ok {
		for range n {
			o.stamps = append(o.stamps, t)
		}
	}
	for _, r := range o.rules {
		rem = append(rem, r.Limit-o.in(t, r.Window.Microseconds()))
	}
	return ok, t, ready, rem
}

// windowOracle is package window's two-counter limiter per rule, all or
// nothing, in big integers.
type windowOracle struct {
	rules []redis.Rule
	st    []wstate
}

type wstate struct {
	start, prev, curr int64
	set               bool
}

func bi(v int64) *big.Int { return big.NewInt(v) }

// view returns the window start, counters and instant in effect at t for
// rule i: t is clamped to the rule's start.
func (o *windowOracle) view(i int, t int64) (ws, p, c, tt int64) {
	if o.st == nil {
		o.st = make([]wstate, len(o.rules))
	}
	s, w := o.st[i], o.rules[i].Window.Microseconds()
	if !s.set {
		return t, 0, 0, t
	}
	t = max(t, s.start)
	switch d := t - s.start; {
	case d < w:
		return s.start, s.prev, s.curr, t
	case d < 2*w:
		return s.start + w, s.curr, 0, t
	default:
		return t, 0, 0, t
	}
}

// fits: prev*(w-el) + (curr+n)*w <= limit*w.
func fits(limit, w, p, c, el, n int64) bool {
	lhs := new(big.Int).Mul(bi(p), bi(w-el))
	lhs.Add(lhs, new(big.Int).Mul(bi(c+n), bi(w)))
	return lhs.Cmp(new(big.Int).Mul(bi(limit), bi(w))) <= 0
}

func (o *windowOracle) allowN(t int64, n int) (ok bool, ready int64, rem []int) {
	ok, ready = true, t
	type v struct{ ws, p, c, t int64 }
	vs := make([]v, len(o.rules))
	for i, r := range o.rules {
		ws, p, c, tt := o.view(i, t)
		vs[i] = v{ws, p, c, tt}
		w, l := r.Window.Microseconds(), int64(r.Limit)
		if int64(n) > l {
			ok, ready = false, -1
			continue
		}
		if fits(l, w, p, c, tt-ws, int64(n)) {
			continue
		}
		ok = false
		if ready < 0 {
			continue
		}
		// The earliest instant it fits: the formula only gets easier as
		// el grows inside a window, so search each of the next two
		// windows by bisection; at ws+2w the rule is idle and n fits.
		earliest := func(lo, hi, base, p, c int64) (int64, bool) {
			if !fits(l, w, p, c, hi-base, int64(n)) {
				return 0, false
			}
			for lo < hi {
				mid := lo + (hi-lo)/2
				if fits(l, w, p, c, mid-base, int64(n)) {
					hi = mid
				} else {
					lo = mid + 1
				}
			}
			return lo, true
		}
		u, found := earliest(tt, ws+w-1, ws, p, c)
		if !found {
			u, found = earliest(ws+w, ws+2*w-1, ws+w, c, 0)
		}
		if !found {
			u = ws + 2*w
		}
		ready = max(ready, u)
	}
	if ok && n > 0 {
		for i := range o.rules {
			o.st[i] = wstate{start: vs[i].ws, prev: vs[i].p, curr: vs[i].c + int64(n), set: true}
		}
	}
	for i, r := range o.rules {
		x := vs[i]
		c := x.c
		if ok && n > 0 {
			c += int64(n)
		}
		w, l := r.Window.Microseconds(), int64(r.Limit)
		lo, hi := int64(0), l // the largest k in [0, l] that fits
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if fits(l, w, x.p, c, x.t-x.ws, mid) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		rem = append(rem, int(lo))
	}
	return ok, ready, rem
}
