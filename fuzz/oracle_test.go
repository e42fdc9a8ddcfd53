package fuzz

import (
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/multi"
)

// This file holds what the fuzz targets share: the decoder of call sequences
// and the conversion of rules for the models of internal/oracle, which every
// target compares the limiters against.

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

// oracleRules converts rules for the models.
func oracleRules(rules []multi.Rule) []oracle.Rule {
	out := make([]oracle.Rule, len(rules))
	for i, r := range rules {
		out[i] = oracle.R(r.Limit, r.Window)
	}
	return out
}
