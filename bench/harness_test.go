package bench

import (
	"flag"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/bench/stores"
)

// fixedIterations makes testing.Benchmark run n iterations (after its
// one-iteration probe) until the test ends, whatever -benchtime the test
// binary was given.
func fixedIterations(t *testing.T, n string) {
	t.Helper()
	f := flag.Lookup("test.benchtime")
	require.NotNil(t, f)
	old := f.Value.String()
	require.NoError(t, f.Value.Set(n))
	t.Cleanup(func() { f.Value.Set(old) })
}

type admitAll struct{}

func (admitAll) Allow() bool { return true }

// TestBenchOneExcludesSetup: a fixture that takes 50 ms to build is not part
// of the time measured, in either mode: 100 calls of a limiter that admits
// at once take far less than the setup.
func TestBenchOneExcludesSetup(t *testing.T) {
	fixedIterations(t, "100x")
	slow := impl{name: "slow-setup", newFn: func(int, time.Duration) allower {
		time.Sleep(50 * time.Millisecond)
		return admitAll{}
	}}
	for _, mode := range []string{"serial", "parallel"} {
		r := testing.Benchmark(func(b *testing.B) { benchOne(b, slow, mode, "admit") })
		require.Equal(t, 100, r.N, mode)
		require.Less(t, r.T, 10*time.Millisecond, "%s: 100 calls measured at %v: the fixture's setup is timed", mode, r.T)
		require.Equal(t, 1.0, r.Extra["admits/op"], mode)
	}
}

// countingStore admits every call and counts them.
type countingStore struct{ calls *atomic.Int64 }

func (s countingStore) Allow(string) bool { s.calls.Add(1); return true }

// TestBenchKeyedReportsAdmitsPerCall: admits/op is the fraction of all the
// calls the store admitted, over every goroutine: 1 for a store that admits
// every call, at -cpu 2 as at -cpu 1.
func TestBenchKeyedReportsAdmitsPerCall(t *testing.T) {
	fixedIterations(t, "100x")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var calls atomic.Int64
	im := stores.Impl{Name: "test-admit-all", New: func(int, time.Duration, int) stores.Store { return countingStore{&calls} }}
	r := testing.Benchmark(func(b *testing.B) { benchKeyed(b, im, 1000, "random", "mixed") })
	require.Equal(t, 100, r.N)
	require.Equal(t, 1.0, r.Extra["admits/op"])
	require.Equal(t, int64(1000+1+100), calls.Load(), "one fill call per key, then the probe's call and the 100 measured")
}
