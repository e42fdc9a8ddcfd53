package window

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/benchfloor"
)

// BenchmarkRatios measures the speed targets as ratios taken within short
// rounds: every round runs each variant of BenchmarkWindow for about 10 ms,
// one after the other, and the ratio of two variants is taken within the
// round; it reports the median over the rounds as metrics (for GOMAXPROCS 1,
// 2 and 8, which it sets itself). On a machine shared with other work,
// `go test -bench` (which runs all counts of one sub-benchmark before the
// next) compares variants measured minutes apart; this compares them
// milliseconds apart. One iteration is the whole measurement (a few seconds):
//
//	go test -run '^$' -bench BenchmarkRatios -benchtime 1x -v ./window/
func BenchmarkRatios(b *testing.B) {
	const rounds = 40
	type variant struct {
		name     string
		parallel bool
		op       func() func() bool // returns the per-goroutine call
	}
	floor := func() func() bool { return benchfloor.New().Allow }
	lim := func(im impl, path string) func() func() bool {
		return func() func() bool {
			var l limiter
			if path == "admit" {
				l, _ = im.new(MaxLimit, time.Millisecond)
			} else {
				l, _ = im.new(1, time.Hour)
				l.Allow()
			}
			switch l := l.(type) { // the concrete method, as users call it
			case *Limiter:
				return l.Allow
			case *mutexLimiter:
				return l.Allow
			}
			panic("unknown implementation")
		}
	}
	var variants []variant
	for _, par := range []bool{false, true} {
		variants = append(variants, variant{"floor", par, floor})
		for _, path := range []string{"admit", "deny"} {
			for _, im := range impls {
				variants = append(variants, variant{im.name + "/" + path, par, lim(im, path)})
			}
		}
	}
	key := func(v variant) string {
		if v.parallel {
			return v.name + "/parallel"
		}
		return v.name + "/serial"
	}
	var report strings.Builder
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 8} {
		runtime.GOMAXPROCS(procs)
		calls := make(map[string]func() bool)
		for _, v := range variants {
			calls[key(v)] = v.op()
		}
		ns := make(map[string][]float64)
		for range rounds {
			for _, v := range variants {
				ns[key(v)] = append(ns[key(v)], timeCalls(calls[key(v)], v.parallel, procs, 200_000))
			}
		}
		ratio := func(a, b string) float64 {
			var rs []float64
			for i := range rounds {
				rs = append(rs, ns[a][i]/ns[b][i])
			}
			return median(rs)
		}
		fmt.Fprintf(&report, "GOMAXPROCS=%d, median over %d rounds (ns/op):", procs, rounds)
		for _, v := range variants {
			fmt.Fprintf(&report, " %s=%.1f", key(v), median(ns[key(v)]))
		}
		b.ReportMetric(ratio("lockfree/admit/serial", "floor/serial"), fmt.Sprintf("admit/floor@p%d", procs))
		b.ReportMetric(ratio("lockfree/deny/serial", "floor/serial"), fmt.Sprintf("deny/floor@p%d", procs))
		b.ReportMetric(ratio("lockfree/admit/parallel", "mutex/admit/parallel"), fmt.Sprintf("par-admit/mutex@p%d", procs))
		b.ReportMetric(ratio("lockfree/deny/parallel", "lockfree/deny/serial"), fmt.Sprintf("par-deny/serial@p%d", procs))
		fmt.Fprintf(&report, "\n  lock-free admit / floor (serial) = %.2f, lock-free deny / floor (serial) = %.2f\n",
			ratio("lockfree/admit/serial", "floor/serial"), ratio("lockfree/deny/serial", "floor/serial"))
		fmt.Fprintf(&report, "  parallel lock-free admit / mutex admit = %.2f, parallel lock-free deny / serial lock-free deny = %.2f\n",
			ratio("lockfree/admit/parallel", "mutex/admit/parallel"), ratio("lockfree/deny/parallel", "lockfree/deny/serial"))
	}
	b.Log("\n" + report.String())
}

// timeCalls makes n calls of call, from one goroutine or spread over procs
// goroutines, and returns the wall time per call in nanoseconds.
func timeCalls(call func() bool, parallel bool, procs, n int) float64 {
	if !parallel {
		start := time.Now()
		for range n {
			call()
		}
		return float64(time.Since(start).Nanoseconds()) / float64(n)
	}
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			for range n / procs {
				call()
			}
		}()
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	return float64(time.Since(start).Nanoseconds()) / float64(n/procs*procs)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
