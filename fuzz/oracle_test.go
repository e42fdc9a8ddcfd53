package fuzz

import (
	"slices"
	"time"
)

// This file holds the reference implementations the fuzz targets compare
// against. They are deliberately naive: an unbounded sorted slice of stamps,
// linear scans, no cleverness that could share a bug with the code under test.

// op is one decoded call: advance the simulated clock by dt (which may be
// negative: a caller presenting a stale instant), then ask for n.
type op struct {
	dt time.Duration
	n  int
}

// decodeOps turns fuzzer bytes into a call sequence. Each call takes two
// bytes: the first selects a time step from a table biased towards the
// interesting distances (0, exactly the window, one nanosecond either side of
// it, small steps, backwards steps, long idle gaps); the second gives n, biased
// towards 1 and with some n <= 0 and n > limit.
// At most maxOps calls are decoded: the oracle is quadratic on purpose, and
// long inputs would slow the fuzzer without finding more.
func decodeOps(data []byte, window time.Duration, limit int) []op {
	if len(data) > 2*maxOps {
		data = data[:2*maxOps]
	}
	steps := []time.Duration{
		0, 0, 0, 1, 1, 2, 3, 7,
		window, window - 1, window + 1, window / 2, window / 3, window / 7, window / 100, window / 1000,
		-1, -window / 10, -window, 2 * window, 5 * window, 1 << 40, window/2 + 1, window/2 - 1,
		window / 10, window / 10, window / 20, window / 50, 13, 1000, window / 4, window / 8,
	}
	ops := make([]op, 0, len(data)/2)
	for i := 0; i+1 < len(data); i += 2 {
		a, b := data[i], data[i+1]
		var dt time.Duration
		if a&0x80 != 0 {
			// Fine-grained step: a fraction of the window, so that arrivals
			// land at many alignments.
			dt = window * time.Duration(a&0x7f) / 128
		} else {
			dt = steps[int(a)%len(steps)]
		}
		var n int
		switch {
		case b < 160:
			n = 1
		case b < 230:
			n = 2 + int(b-160)%max(limit, 1)
		case b < 240:
			n = limit
		case b < 245:
			n = limit + 1 + int(b-240)
		case b < 250:
			n = 0
		default:
			n = -int(b - 249)
		}
		ops = append(ops, op{dt: dt, n: n})
	}
	return ops
}

// maxOps bounds the length of a decoded call sequence.
const maxOps = 150

// stamp is one admission as the oracle records it: its instant (nanoseconds on
// the simulated clock) and its cost.
type stamp struct {
	at   int64
	cost int64
}

// logOracle is the naive sliding log with the clamping rule of the library:
// an instant earlier than the latest one seen is treated as the latest.
type logOracle struct {
	limit  int64
	window int64
	latest int64
	seen   bool
	log    []stamp
}

// clamp applies the time-never-goes-backwards rule.
func (o *logOracle) clamp(now int64) int64 {
	if o.seen && now < o.latest {
		return o.latest
	}
	return now
}

// costIn returns the cost stamped in (lo, hi].
func costIn(log []stamp, lo, hi int64) int64 {
	var c int64
	for _, s := range log {
		if s.at > lo && s.at <= hi {
			c += s.cost
		}
	}
	return c
}

// allowN is the decision of the exact sliding log at now for cost n.
func (o *logOracle) allowN(now int64, n int) bool {
	if n == 0 {
		return true
	}
	if n < 0 || int64(n) > o.limit {
		return false
	}
	t := o.clamp(now)
	if costIn(o.log, t-o.window, t)+int64(n) > o.limit {
		return false
	}
	o.log = append(o.log, stamp{at: t, cost: int64(n)})
	o.latest, o.seen = t, true
	return true
}

// tokensAt is the largest cost the log would admit at now.
func (o *logOracle) tokensAt(now int64) int64 {
	t := o.clamp(now)
	return o.limit - costIn(o.log, t-o.window, t)
}

// maxInAnyWindow returns the largest cost stamped in any window (t-w, t], over
// every alignment. The maximum is reached by a window whose right end is a
// stamp, so checking those suffices. The log need not be sorted.
func maxInAnyWindow(log []stamp, w int64) int64 {
	s := slices.Clone(log)
	slices.SortFunc(s, func(a, b stamp) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	var best, sum int64
	lo := 0
	for hi := range s {
		sum += s[hi].cost
		for s[lo].at <= s[hi].at-w {
			sum -= s[lo].cost
			lo++
		}
		// Stamps equal to s[hi].at that come after hi belong to the same
		// window; they are added as hi advances, and best is taken at each.
		best = max(best, sum)
	}
	return best
}
