package refimpl_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/bench/refimpl"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// twin is a limiter of ours (want) and its mutex twin (got), which must
// decide every call alike.
type twin struct {
	name      string
	want, got func(now time.Time, n int) bool
}

// steps says how replayTwins moves its clock: one call in ten jumps up to
// jump ahead, the others up to step; with stale set, one call in three
// presents an instant up to 30 ms before the clock (as goroutines that read
// the clock before reaching the limiter present it).
type steps struct {
	jump, step time.Duration
	stale      bool
}

// replayTwins makes 3000 calls of cost 0 to 4 drawn from r through every
// pair and requires identical decisions, and enough admissions, refusals
// (and stale instants) for the comparison to mean something.
func replayTwins(t *testing.T, seed uint64, r *rand.Rand, s steps, pairs ...twin) {
	t.Helper()
	now := time.Now()
	var admitted, refused, stale int
	for i := range 3000 {
		if r.IntN(10) == 0 {
			now = now.Add(time.Duration(r.IntN(int(s.jump/time.Millisecond))) * time.Millisecond)
		} else {
			now = now.Add(time.Duration(r.IntN(int(s.step/time.Millisecond))) * time.Millisecond)
		}
		at := now
		if s.stale && r.IntN(3) == 0 {
			at = now.Add(-time.Duration(r.IntN(30)) * time.Millisecond)
			stale++
		}
		n := r.IntN(5)
		for j, p := range pairs {
			want := p.want(at, n)
			require.Equal(t, want, p.got(at, n), "seed %d call %d: %s.AllowN(%v, %d)", seed, i, p.name, at, n)
			if j > 0 {
				continue
			}
			if want && n > 0 {
				admitted++
			} else if !want {
				refused++
			}
		}
	}
	require.Greater(t, admitted, 100, "seed %d: the replay admitted too little to compare", seed)
	require.Greater(t, refused, 100, "seed %d: the replay refused too little to compare", seed)
	if s.stale {
		require.Greater(t, stale, 500, "seed %d: too few stale instants", seed)
	}
}

// TestMultiTwinsDecideAsMulti replays the same calls (non-decreasing
// instants, costs 0 to 4, idle gaps) through multi's two flavours and their
// mutex twins, with two rules, and requires identical decisions: the twins
// the latency harness compares with are the same algorithms.
func TestMultiTwinsDecideAsMulti(t *testing.T) {
	rules := []multi.Rule{{Limit: 5, Window: 100 * time.Millisecond}, {Limit: 12, Window: time.Second}}
	refRules := []refimpl.Rule{{Limit: 5, Window: 100 * time.Millisecond}, {Limit: 12, Window: time.Second}}
	for seed := range uint64(20) {
		exact, err := multi.New(rules...)
		require.NoError(t, err)
		approx, err := multi.NewApprox(rules...)
		require.NoError(t, err)
		replayTwins(t, seed, rand.New(rand.NewPCG(seed, 7)), steps{jump: 2 * time.Second, step: 30 * time.Millisecond},
			twin{"MutexMultiLog", exact.AllowN, refimpl.NewMutexMultiLog(refRules...).AllowN},
			twin{"MutexMultiWindow", approx.AllowN, refimpl.NewMutexMultiWindow(refRules...).AllowN})
	}
}

// TestSingleTwinsDecideAsRingAndWindow replays the same calls through ring
// and window and their mutex twins, and requires identical decisions. The
// instants are presented up to 30 ms stale and the costs are 0 to 4, so
// that a stale call of cost n > 1 after a refusal tells apart "decided at
// the latest admission" (ring's rule) from "decided at the latest call".
func TestSingleTwinsDecideAsRingAndWindow(t *testing.T) {
	const limit, w = 6, 100 * time.Millisecond
	for seed := range uint64(10) {
		rg, err := ring.New(limit, w)
		require.NoError(t, err)
		win, err := window.New(limit, w)
		require.NoError(t, err)
		replayTwins(t, seed, rand.New(rand.NewPCG(seed, 11)), steps{jump: 300 * time.Millisecond, step: 10 * time.Millisecond, stale: true},
			twin{"MutexLog", rg.AllowN, refimpl.NewMutexLog(limit, w).AllowN},
			twin{"MutexWindow", win.AllowN, refimpl.NewMutexWindow(limit, w).AllowN})
	}
}
