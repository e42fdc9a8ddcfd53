package main

import (
	"bytes"
	"strings"
	"testing"

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
