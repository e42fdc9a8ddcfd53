package main

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunOnceSamplesEveryKthCall checks the sampling: each goroutine times
// one call in every, every call is counted, and the percentiles come from
// the sorted samples.
func TestRunOnceSamplesEveryKthCall(t *testing.T) {
	var calls [4]int
	call := func(w int) func() bool {
		return func() bool { calls[w]++; return calls[w]%2 == 0 }
	}
	lat, wall, admitted := runOnce(call, 4, 1000, 8)
	require.Len(t, lat, 4*125)
	require.Equal(t, int64(4*500), admitted)
	require.Positive(t, wall)
	for w, c := range calls {
		require.Equal(t, 1000, c, "worker %d", w)
	}
	require.Equal(t, 3.0, pct([]int64{1, 2, 3, 4}, 0.5))
	require.Equal(t, 4.0, pct([]int64{1, 2, 3, 4}, 0.999))
	require.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
}

// TestTargetsJudgeTheRightColumns checks that the quiet rows compare wall time
// and the loaded rows p99, against the goals.
func TestTargetsJudgeTheRightColumns(t *testing.T) {
	rs := []Result{
		{Impl: "ring", Goroutines: 2, Load: 0, WallNs: 50, P99: 1000},
		{Impl: "mutexlog", Goroutines: 2, Load: 0, WallNs: 100, P99: 10},
		{Impl: "ring", Goroutines: 2, Load: 2, WallNs: 500, P99: 100},
		{Impl: "mutexlog", Goroutines: 2, Load: 2, WallNs: 10, P99: 150},
	}
	var b bytes.Buffer
	printTargets(&b, rs)
	out := b.String()
	require.Contains(t, out, "| 2 | none | wall ring / mutexlog | 0.50x (50 / 100 ns) | <= 1.0x | met |")
	require.Contains(t, out, "| 2 | 2 busy | p99 ring / mutexlog | 0.67x (100 / 150 ns) | <= 0.5x | not met |")
	require.Equal(t, 2, strings.Count(out, "ring / mutexlog"))
}

// TestRunOpenCountsTheBacklog checks the open loop: every call is timed from
// its intended start, so a call that stalls delays the calls scheduled
// behind it, and each of those reports the time it waited.
func TestRunOpenCountsTheBacklog(t *testing.T) {
	const calls, period = 200, int64(10 * time.Microsecond)
	stall := 20 * time.Millisecond
	var n [2]int
	call := func(w int) func() bool {
		return func() bool {
			if n[w]++; w == 0 && n[w] == 50 {
				time.Sleep(stall) // call 49 of worker 0 stalls
			}
			return true
		}
	}
	lat, wall, admitted := runOpen(call, 2, calls, period)
	require.Len(t, lat, 2*calls)
	require.Equal(t, int64(2*calls), admitted)
	require.GreaterOrEqual(t, wall, int64(stall))
	w0 := lat[:calls]
	require.GreaterOrEqual(t, w0[49], int64(stall), "the stalled call")
	// The 150 calls after it are scheduled over 1.5 ms, far less than the
	// stall: each started late by what was left of it, so by more than half
	// of it. (Lower bounds only: on a loaded machine the calls before the
	// stall may be late too.)
	for i := 50; i < calls; i++ {
		require.GreaterOrEqual(t, w0[i], int64(stall)/2, "call %d, scheduled during the stall", i)
	}
}

// TestRunStatsSummarizeRuns: each run's latencies are sorted before their
// percentiles are read; each percentile and the wall time per call (over
// every goroutine's calls) is the median over the runs, max the largest of
// all, and admitted the fraction of every call.
func TestRunStatsSummarizeRuns(t *testing.T) {
	var a runStats
	r := rand.New(rand.NewPCG(1, 2))
	for i, wall := range []int64{1000, 3000, 2000} {
		lat := make([]int64, 1000) // 1..1000, shifted by 1000 per run, shuffled
		for j := range lat {
			lat[j] = int64(1000*i + j + 1)
		}
		r.Shuffle(len(lat), func(x, y int) { lat[x], lat[y] = lat[y], lat[x] })
		a.add(lat, wall, 2, 250, 400) // 2 goroutines of 250 calls, 400 admitted
	}
	got := a.result(contender{name: "ring", kind: "single"}, 2, 0, 0)
	want := Result{Impl: "ring", Kind: "single", Goroutines: 2, Runs: 3, Samples: 3000,
		WallNs: 4, P50: 1501, P90: 1901, P99: 1991, P999: 2000, Max: 3000, Admitted: 0.8}
	require.Equal(t, want, got)
}
