package refimpl_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/bench/refimpl"
	"github.com/slidelimit/slidelimit/multi"
)

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
		mlog := refimpl.NewMutexMultiLog(refRules...)
		mwin := refimpl.NewMutexMultiWindow(refRules...)
		r := rand.New(rand.NewPCG(seed, 7))
		now := time.Now()
		var admitted, refused int
		for i := range 3000 {
			switch r.IntN(10) {
			case 0:
				now = now.Add(time.Duration(r.IntN(2000)) * time.Millisecond)
			default:
				now = now.Add(time.Duration(r.IntN(30)) * time.Millisecond)
			}
			n := r.IntN(5)
			want := exact.AllowN(now, n)
			require.Equal(t, want, mlog.AllowN(now, n), "seed %d call %d: MutexMultiLog.AllowN(+%v, %d)", seed, i, now, n)
			wantA := approx.AllowN(now, n)
			require.Equal(t, wantA, mwin.AllowN(now, n), "seed %d call %d: MutexMultiWindow.AllowN(+%v, %d)", seed, i, now, n)
			if want && n > 0 {
				admitted++
			} else if !want {
				refused++
			}
		}
		require.Greater(t, admitted, 100, "seed %d: the replay admitted too little to compare", seed)
		require.Greater(t, refused, 100, "seed %d: the replay refused too little to compare", seed)
	}
}
