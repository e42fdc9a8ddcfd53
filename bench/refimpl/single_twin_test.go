package refimpl_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/bench/refimpl"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// TestSingleTwinsDecideAsRingAndWindow replays the same calls through ring
// and window and their mutex twins, and requires identical decisions. The
// instants are presented up to 30 ms stale (as goroutines that read the
// clock before reaching the limiter present them) and the costs are 0 to 4,
// so that a stale call of cost n > 1 after a refusal tells apart "decided
// at the latest admission" (ring's rule) from "decided at the latest call".
func TestSingleTwinsDecideAsRingAndWindow(t *testing.T) {
	const limit, w = 6, 100 * time.Millisecond
	for seed := range uint64(10) {
		rg, err := ring.New(limit, w)
		require.NoError(t, err)
		win, err := window.New(limit, w)
		require.NoError(t, err)
		mlog := refimpl.NewMutexLog(limit, w)
		mwin := refimpl.NewMutexWindow(limit, w)
		r := rand.New(rand.NewPCG(seed, 11))
		now := time.Now()
		var admitted, refused, stale int
		for i := range 3000 {
			if r.IntN(10) == 0 {
				now = now.Add(time.Duration(r.IntN(300)) * time.Millisecond)
			} else {
				now = now.Add(time.Duration(r.IntN(10)) * time.Millisecond)
			}
			at := now
			if r.IntN(3) == 0 {
				at = now.Add(-time.Duration(r.IntN(30)) * time.Millisecond)
				stale++
			}
			n := r.IntN(5)
			want := rg.AllowN(at, n)
			require.Equal(t, want, mlog.AllowN(at, n), "seed %d call %d: MutexLog.AllowN(%v, %d)", seed, i, at, n)
			wantW := win.AllowN(at, n)
			require.Equal(t, wantW, mwin.AllowN(at, n), "seed %d call %d: MutexWindow.AllowN(%v, %d)", seed, i, at, n)
			if want && n > 0 {
				admitted++
			} else if !want {
				refused++
			}
		}
		require.Greater(t, admitted, 100, "seed %d: the replay admitted too little to compare", seed)
		require.Greater(t, refused, 100, "seed %d: the replay refused too little to compare", seed)
		require.Greater(t, stale, 500, "seed %d: too few stale instants", seed)
	}
}
