package bench

import (
	"flag"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
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

// TestCompareStripsRoundSuffixes runs compare.sh's own sed expression on
// lines of the rounds it runs in one process: the "#NN" that go test adds to
// a repeated name goes, the -cpu suffix stays, and every round of a
// benchmark then has one name, so that the report and benchstat pool the
// rounds instead of taking the first alone.
func TestCompareStripsRoundSuffixes(t *testing.T) {
	src, err := os.ReadFile("compare.sh")
	require.NoError(t, err)
	m := regexp.MustCompile(`sed -E '([^']*)'`).FindSubmatch(src)
	require.NotNil(t, m, "compare.sh has no sed -E '...' for the rounds")
	if _, err := exec.LookPath("sed"); err != nil {
		t.Skip("no sed")
	}
	in := "BenchmarkKeyed/keys=1000/order=random/path=mixed/impl=sethvargo-2     \t 100\t 50.0 ns/op\n" +
		"BenchmarkKeyed/keys=1000/order=random/path=mixed/impl=sethvargo#01-2  \t 100\t 51.0 ns/op\n" +
		"BenchmarkKeyed/keys=1000/order=random/path=mixed/impl=sethvargo#12    \t 100\t 52.0 ns/op\n" +
		"BenchmarkKeyed/keys=1000/order=random-copies/path=mixed/impl=keyed-ring#03-2\t 100\t 53.0 ns/op\n"
	cmd := exec.Command("sed", "-E", string(m[1]))
	cmd.Stdin = strings.NewReader(in)
	out, err := cmd.Output()
	require.NoError(t, err)
	want := "BenchmarkKeyed/keys=1000/order=random/path=mixed/impl=sethvargo-2     \t 100\t 50.0 ns/op\n" +
		"BenchmarkKeyed/keys=1000/order=random/path=mixed/impl=sethvargo-2  \t 100\t 51.0 ns/op\n" +
		"BenchmarkKeyed/keys=1000/order=random/path=mixed/impl=sethvargo    \t 100\t 52.0 ns/op\n" +
		"BenchmarkKeyed/keys=1000/order=random-copies/path=mixed/impl=keyed-ring-2\t 100\t 53.0 ns/op\n"
	require.Equal(t, want, string(out))
}

// TestSeqLen: the keyed sequences hold 16 draws per key, at least 2^16 and
// at most 2^21, so that at 100k keys and more they are far larger than any
// cache.
func TestSeqLen(t *testing.T) {
	for n, want := range map[int]int{1: 1 << 16, 1000: 1 << 16, 100_000: 1_600_000, 1_000_000: 1 << 21} {
		require.Equal(t, want, seqLen(n), "%d keys", n)
	}
}
