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

// httpBench is go test output of BenchmarkHTTP at -cpu 2: two samples per
// benchmark on the admit path with 1 key, one on the refuse path at 100k
// keys; ulule is missing on purpose.
const httpBench = `goos: linux
BenchmarkHTTP/path=admit/keys=1/impl=slidelimit-2            	 1000	       400 ns/op	      48 B/op	       2 allocs/op
BenchmarkHTTP/path=admit/keys=1/impl=slidelimit-2            	 1000	       600 ns/op	      48 B/op	       2 allocs/op
BenchmarkHTTP/path=admit/keys=1/impl=slidelimit-nofields-2   	 1000	       300 ns/op	       0 B/op	       0 allocs/op
BenchmarkHTTP/path=admit/keys=1/impl=slidelimit-nofields-2   	 1000	       300 ns/op	       0 B/op	       0 allocs/op
BenchmarkHTTP/path=admit/keys=1/impl=httprate-2              	 1000	      1000 ns/op	     400 B/op	      11 allocs/op
BenchmarkHTTP/path=admit/keys=1/impl=httprate-2              	 1000	      1000 ns/op	     400 B/op	      11 allocs/op
BenchmarkHTTP/path=admit/keys=1/impl=sethvargo-2             	 1000	       900 ns/op	     184 B/op	       9 allocs/op
BenchmarkHTTP/path=admit/keys=1/impl=sethvargo-2             	 1000	       900 ns/op	     184 B/op	       9 allocs/op
BenchmarkHTTP/path=refuse/keys=100000/impl=slidelimit-2      	 1000	      3000 ns/op	      64 B/op	       2 allocs/op
BenchmarkHTTP/path=refuse/keys=100000/impl=httprate-2        	 1000	      2000 ns/op	     400 B/op	      13 allocs/op
BenchmarkHTTP/path=refuse/keys=100000/impl=tollbooth-2       	 1000	      9000 ns/op	     600 B/op	      25 allocs/op
PASS
`

func parseHTTPFixture(t *testing.T) results {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bench.txt")
	require.NoError(t, os.WriteFile(p, []byte(httpBench), 0o644))
	r, err := parseBench([]string{p})
	require.NoError(t, err)
	return r
}

// TestHTTPTable: the names with a "-nofields" part parse to their own
// middleware, the cells present are the only columns, each cell gives the
// median, allocations, bytes and the ratio to httprate, and a middleware
// with no result has no row.
func TestHTTPTable(t *testing.T) {
	r := parseHTTPFixture(t)
	assert.Equal(t, []httpCell{{"admit", "1"}, {"refuse", "100000"}}, httpCells(r))
	s := httpGet(r, httpCell{"admit", "1"}, "slidelimit-nofields")
	require.True(t, s.ok)
	assert.Equal(t, 2, s.n)
	assert.Equal(t, 300.0, s.ns)

	var b bytes.Buffer
	printHTTP(&b, r)
	out := b.String()
	assert.Contains(t, out, "| middleware | admit, 1 key | refuse, 100k keys |")
	assert.Contains(t, out, "| slidelimit | 500.0 [2, 48 B] 0.50x | 3000.0 [2, 64 B] 1.50x |")
	assert.Contains(t, out, "| slidelimit-nofields | 300.0 [0, 0 B] 0.30x | – |")
	assert.Contains(t, out, "| tollbooth | – | 9000.0 [25, 600 B] 4.50x |")
	assert.NotContains(t, out, "| ulule |")
}

// TestHTTPTargets: each measured cell gives two targets, judged on the
// fields-on middleware: met where it beats every peer present and is at
// most half httprate, not met where it is slower.
func TestHTTPTargets(t *testing.T) {
	r := parseHTTPFixture(t)
	ts := httpTargets(r)
	require.Len(t, ts, 4)
	for _, x := range ts {
		assert.True(t, x.known, x.what)
	}
	assert.Equal(t, "httplimit: admit, 1 key, vs every peer", ts[0].what)
	assert.True(t, ts[0].met, ts[0].measured)
	assert.Contains(t, ts[0].measured, "500 ns vs 900 (sethvargo, the fastest peer); 2 allocs/op vs 9")
	assert.True(t, ts[1].met, "0.50x httprate is within <= 0.5x: %s", ts[1].measured)
	assert.False(t, ts[2].met, ts[2].measured)
	assert.False(t, ts[3].met, ts[3].measured)
	assert.Equal(t, "1.50x (3000 ns vs 2000)", ts[3].measured)

	var b bytes.Buffer
	printHTTPSummary(&b, r)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 5, b.String())
	assert.Empty(t, lines[2])
	assert.Equal(t, "admit  1 key 0.56x sethvargo, 0.50x httprate", strings.TrimSpace(lines[3]))
	assert.Equal(t, "refuse 100k 1.50x httprate (fastest)", strings.TrimSpace(lines[4]))
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), 80, l)
	}
}

// TestHTTPPlot: the plot is written as a PNG, and no file is written when
// the run has no HTTP results.
func TestHTTPPlot(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, plotHTTP(parseHTTPFixture(t), dir))
	b, err := os.ReadFile(filepath.Join(dir, "speed-http.png"))
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("\x89PNG")), "not a PNG")

	empty := t.TempDir()
	require.NoError(t, plotHTTP(results{}, empty))
	files, err := os.ReadDir(empty)
	require.NoError(t, err)
	assert.Empty(t, files)
}
