package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redisRaw is redis/bench.sh's RAW output for two runs, trimmed.
const redisRaw = `run1 BenchmarkDecide/log/g=1-2       	 20000	 0.5 ns/op	 13000 decisions/s	 61.00 p50-µs	 200.0 p99-µs	 1.000 scripts/decision	 13.41 server-µs/decision
run1 BenchmarkDecide/redis_rate/g=1-2	 20000	 0.5 ns/op	 12000 decisions/s	 60.00 p50-µs	 190.0 p99-µs	 1.000 scripts/decision	 11.69 server-µs/decision
run1 BenchmarkDecide/log-ap/g=16-2   	 20000	 0.5 ns/op	 30000 decisions/s	 400.0 p50-µs	 900.0 p99-µs	 1.000 scripts/decision	 10.69 server-µs/decision
run1 BenchmarkDecide/log/g=16-2      	 20000	 0.5 ns/op	 27000 decisions/s	 521.0 p50-µs	 1500 p99-µs	 1.000 scripts/decision	 12.80 server-µs/decision
run2 BenchmarkDecide/log/g=1-2       	 20000	 0.5 ns/op	 15000 decisions/s	 61.00 p50-µs	 200.0 p99-µs	 1.000 scripts/decision	 13.41 server-µs/decision
run2 BenchmarkDecide/redis_rate/g=1-2	 20000	 0.5 ns/op	 14000 decisions/s	 60.00 p50-µs	 190.0 p99-µs	 1.000 scripts/decision	 11.69 server-µs/decision
# a comment line
BenchmarkDecide/log/g=1-2 not a run line
`

func TestRedisPlot(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "redis.txt")
	require.NoError(t, os.WriteFile(p, []byte(redisRaw), 0o644))
	r, err := parseRedis(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"log", "redis_rate", "log-ap"}, r.deciders)
	assert.Equal(t, []int{1, 16}, r.gs)
	assert.Equal(t, []float64{13000, 15000}, r.dps[redisCell{"log", 1}])
	assert.Equal(t, 14000.0, median(r.dps[redisCell{"log", 1}]))
	require.NoError(t, plotRedis(r, dir))
	st, err := os.Stat(filepath.Join(dir, "speed-redis.png"))
	require.NoError(t, err)
	assert.Positive(t, st.Size())
}
