package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runBench is go test output of a run at -cpu 1 (names without a suffix) and
// -cpu 2, with three samples per keyed benchmark in run order, not sorted.
const runBench = `goos: linux
BenchmarkOne/mode=serial/path=admit/impl=floor         	1000	        30.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkOne/mode=serial/path=admit/impl=ring          	1000	        36.0 ns/op	       1.000 admits/op	       0 B/op	       0 allocs/op
BenchmarkOne/mode=serial/path=admit/impl=xrate         	1000	        90.0 ns/op	       1.000 admits/op	       0 B/op	       0 allocs/op
BenchmarkKeyed/keys=100000/order=random/path=mixed/impl=keyed.Window-2	1000	300.0 ns/op	0.9000 admits/op	0 B/op	0 allocs/op
BenchmarkKeyed/keys=100000/order=random/path=mixed/impl=keyed.Window-2	1000	100.0 ns/op	0.8000 admits/op	0 B/op	0 allocs/op
BenchmarkKeyed/keys=100000/order=random/path=mixed/impl=keyed.Window-2	1000	200.0 ns/op	1.000 admits/op	0 B/op	0 allocs/op
BenchmarkKeyed/keys=100000/order=random/path=mixed/impl=sethvargo-2	1000	500.0 ns/op	1.000 admits/op	0 B/op	0 allocs/op
BenchmarkKeyed/keys=100000/order=random/path=mixed/impl=sethvargo-2	1000	300.0 ns/op	1.000 admits/op	0 B/op	0 allocs/op
BenchmarkKeyed/keys=100000/order=random/path=mixed/impl=sethvargo-2	1000	400.0 ns/op	1.000 admits/op	0 B/op	0 allocs/op
BenchmarkKeyed/keys=100000/order=zipf/path=mixed/impl=keyed.Window-2	1000	100.0 ns/op	0.3000 admits/op	16 B/op	1 allocs/op
BenchmarkKeyed/keys=100000/order=zipf/path=mixed/impl=sethvargo-2	1000	400.0 ns/op	0.3000 admits/op	0 B/op	0 allocs/op
BenchmarkKeyed/keys=100000/order=random/path=mixed/impl=keyed.Window	1000	900.0 ns/op	1.000 admits/op	0 B/op	0 allocs/op
BenchmarkKeyed/keys=100000/order=random/path=mixed/impl=sethvargo	1000	600.0 ns/op	1.000 admits/op	0 B/op	0 allocs/op
PASS
`

// runMem is cmd/memkey output for four stores at 1M keys; httprate keeps a
// hash of each key, not the key.
const runMem = `memkey store=keyed.Window keys=1000000 bytes=75300000 bytes/key=75.3 keybytes=12.9
memkey store=sethvargo keys=1000000 bytes=76900000 bytes/key=76.9 keybytes=12.9
memkey store=throttled keys=1000000 bytes=87800000 bytes/key=87.8 keybytes=12.9
memkey store=httprate keys=1000000 bytes=40000000 bytes/key=40.0 keybytes=12.9
`

func parseRun(t *testing.T) (results, []memResult) {
	t.Helper()
	dir := t.TempDir()
	b, m := filepath.Join(dir, "bench.txt"), filepath.Join(dir, "mem.txt")
	require.NoError(t, os.WriteFile(b, []byte(runBench), 0o644))
	require.NoError(t, os.WriteFile(m, []byte(runMem), 0o644))
	r, err := parseBench([]string{b})
	require.NoError(t, err)
	mem, rings, err := parseMem(m)
	require.NoError(t, err)
	require.Empty(t, rings)
	return r, mem
}

func targetNamed(t *testing.T, ts []target, what string) target {
	t.Helper()
	for _, x := range ts {
		if x.what == what {
			return x
		}
	}
	t.Fatalf("no target %q", what)
	return target{}
}

// TestMedianOfUnsortedSamples: the center of a benchmark is the median of
// its samples whatever order they ran in, odd or even in number.
func TestMedianOfUnsortedSamples(t *testing.T) {
	assert.Equal(t, 200.0, median([]float64{300, 100, 200}))
	assert.Equal(t, 3.0, median([]float64{5, 1, 4, 2, 3}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
	assert.Equal(t, 7.0, median([]float64{7}))
	r, _ := parseRun(t)
	s := r.get("BenchmarkKeyed/keys=100000/order=random/path=mixed/impl=keyed.Window", 2)
	require.True(t, s.ok)
	assert.Equal(t, 3, s.n)
	assert.Equal(t, 200.0, s.ns)
	assert.Equal(t, 0.9, s.admits)
}

// TestTargetsFromARun judges the targets of a run on the right columns:
// -cpu 1 samples (names without a suffix) apart from -cpu 2 ones, keyed
// ratios of medians against sethvargo that also require 0 allocs/op, and
// memory per key against 64 bytes plus the key's and against the smallest
// peer that keeps the key (httprate keeps a hash, so it is not one).
func TestTargetsFromARun(t *testing.T) {
	r, mem := parseRun(t)
	ts := targets(nil, r, mem, nil)

	ring := targetNamed(t, ts, "ring: 1 goroutine, admit, vs floor")
	assert.True(t, ring.known && ring.met, ring.measured)
	assert.Equal(t, "1.20x (36.0 ns vs 30.0)", ring.measured)
	assert.Equal(t, "0.40x (36.0 ns vs 90.0)", targetNamed(t, ts, "ring: 1 goroutine, admit, vs x/time/rate").measured)

	random2 := targetNamed(t, ts, "keyed.Window: 100000 keys, random order, -cpu 2, vs sethvargo")
	assert.True(t, random2.known && random2.met, random2.measured)
	assert.Equal(t, "0.50x (200 ns vs 400), 0 allocs/op", random2.measured)
	random1 := targetNamed(t, ts, "keyed.Window: 100000 keys, random order, -cpu 1, vs sethvargo")
	assert.True(t, random1.known, "the -cpu 1 samples are not found")
	assert.False(t, random1.met, random1.measured)
	assert.Equal(t, "1.50x (900 ns vs 600), 0 allocs/op", random1.measured)
	zipf := targetNamed(t, ts, "keyed.Window: 100000 keys, zipf order, -cpu 2, vs sethvargo")
	assert.True(t, zipf.known)
	assert.False(t, zipf.met, "0.25x with 1 allocs/op: %s", zipf.measured)
	assert.False(t, targetNamed(t, ts, "keyed.Window: 1000000 keys, random order, -cpu 2, vs sethvargo").known)

	bound := targetNamed(t, ts, "keyed.Window: bytes per key at 1M keys")
	assert.True(t, bound.met, bound.measured)
	assert.Equal(t, "75.3 B/key vs 76.9 (64 + 12.9 key bytes)", bound.measured)
	peers := targetNamed(t, ts, "keyed.Window: bytes per key at 1M keys vs every keyed peer that keeps the key")
	assert.True(t, peers.met, peers.measured)
	assert.Equal(t, "75.3 B/key vs 76.9 (sethvargo): 0.98x", peers.measured)
}

// TestSummaryKeyedColumns: the summary's keyed lines put each store's median
// under its own heading.
func TestSummaryKeyedColumns(t *testing.T) {
	r, _ := parseRun(t)
	var b bytes.Buffer
	printSummary(&b, nil, r, nil, nil, "")
	var head, line string
	for _, l := range strings.Split(b.String(), "\n") {
		switch f := strings.Fields(l); {
		case len(f) == 6 && f[0] == "keys":
			head = l
		case len(f) == 6 && f[0] == "100000" && f[1] == "random" && f[2] == "2":
			line = l
		}
	}
	require.NotEmpty(t, head, b.String())
	require.NotEmpty(t, line, b.String())
	assert.Equal(t, []string{"keys", "order", "cpu", "Window", "kd-ring", "sethvargo"}, strings.Fields(head))
	assert.Equal(t, []string{"100000", "random", "2", "200.0", "–", "400.0"}, strings.Fields(line))
}
