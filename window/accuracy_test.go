package window

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
)

// TestAccuracy replays the workloads of docs/window.md on simulated time
// through the limiter and through the exact sliding log, and reports how far
// the two-counter estimate is from exact: the most it lets through in any
// window of length W, and its total admitted against the log's. It fails if
// a window ever holds more than the sequential bound max(limit, 2*limit-2).
// Run with -v to print the table that docs/window.md publishes:
//
//	go test -run TestAccuracy -v ./window/
func TestAccuracy(t *testing.T) {
	const limit = 100
	const W = time.Second
	const span = 60 * time.Second
	rng := rand.New(rand.NewPCG(2026, 11)) // fixed: the table must be reproducible

	workloads := []struct {
		name     string
		arrivals []time.Duration
	}{
		{"smooth: every 8ms (1.25x)", every(8*time.Millisecond, span)},
		{"smooth: every 5ms (2x)", every(5*time.Millisecond, span)},
		{"Poisson 1.1x", poisson(rng, 110, span)},
		{"Poisson 3x", poisson(rng, 300, span)},
		{"bursty: 50-call bursts, Poisson 3x", bursts(rng, 50, 6, span)},
		{"bursty: 200-call bursts, Poisson 3x", bursts(rng, 200, 1.5, span)},
		{"100 at 999ms, 100 at 1001ms", edge()},
		{"worst case (docs/window.md)", worst(limit, W)},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| workload | calls | exact log admits | window admits | window/exact | max in any window (exact) | max in any window (window) |\n")
	fmt.Fprintf(&table, "| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, wl := range workloads {
		l, _ := New(limit, W)
		var got []oracle.Stamp
		for _, at := range wl.arrivals {
			if l.AllowN(t0.Add(at), 1) {
				got = append(got, oracle.Stamp{At: int64(at), Cost: 1})
			}
		}
		exact := exactLog(wl.arrivals, limit, W)
		maxW, maxE := oracle.MaxInWindow(got, int64(W)), oracle.MaxInWindow(exact, int64(W))
		fmt.Fprintf(&table, "| %s | %d | %d | %d | %.3f | %d | %d |\n", wl.name, len(wl.arrivals),
			len(exact), len(got), float64(len(got))/float64(len(exact)), maxE, maxW)
		if maxE > limit {
			t.Errorf("%s: the exact log put %d in a window", wl.name, maxE)
		}
		if maxW > 2*limit-2 {
			t.Errorf("%s: %d in one window, above the sequential bound %d", wl.name, maxW, 2*limit-2)
		}
	}
	t.Logf("limit %d per %v, %v of simulated time\n%s", limit, W, span, table.String())
}

func every(gap, span time.Duration) []time.Duration {
	var out []time.Duration
	for at := time.Duration(0); at < span; at += gap {
		out = append(out, at)
	}
	return out
}

func poisson(rng *rand.Rand, perSecond float64, span time.Duration) []time.Duration {
	var out []time.Duration
	for at := time.Duration(0); ; {
		at += time.Duration(rng.ExpFloat64() / perSecond * float64(time.Second))
		if at >= span {
			return out
		}
		out = append(out, at)
	}
}

// bursts returns bursts of size calls, 10µs apart, whose starts arrive as a
// Poisson process of burstsPerSecond.
func bursts(rng *rand.Rand, size int, burstsPerSecond float64, span time.Duration) []time.Duration {
	var out []time.Duration
	last := time.Duration(-1)
	for _, start := range poisson(rng, burstsPerSecond, span) {
		for i := range size {
			at := max(start+time.Duration(i)*10*time.Microsecond, last+1)
			out = append(out, at)
			last = at
		}
	}
	return out
}

func edge() []time.Duration {
	var out []time.Duration
	for range 100 {
		out = append(out, 999*time.Millisecond)
	}
	for range 100 {
		out = append(out, 1001*time.Millisecond)
	}
	return out
}

// worst is the construction of docs/window.md reaching 2*limit-2 for calls
// of cost 1: one call anchors, limit-1 at the window's last nanosecond,
// limit-1 two nanoseconds before the next window's end.
func worst(limit int, w time.Duration) []time.Duration {
	out := []time.Duration{0}
	for range limit - 1 {
		out = append(out, w-1)
	}
	for range limit - 1 {
		out = append(out, 2*w-2)
	}
	return out
}

// exactLog replays arrivals (in time order, cost 1 each) through the naive
// sliding log and returns its admissions.
func exactLog(arrivals []time.Duration, limit int, w time.Duration) []oracle.Stamp {
	o := oracle.NewLog(oracle.R(limit, w))
	for _, a := range arrivals {
		o.AllowN(int64(a), 1)
	}
	return o.Stamps()
}
