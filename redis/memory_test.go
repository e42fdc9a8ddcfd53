package redis_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// TestLogMemory: a log key holds exactly 8*(limit+1) bytes of data, and costs
// at most 8*limit+100 bytes in Redis as MEMORY USAGE counts it, plus what
// jemalloc's size classes add (they round an allocation up by less than a
// quarter: a 32776-byte string takes a 40960-byte block). A window key costs
// a small constant per rule. The numbers are logged for docs/redis.md.
func TestLogMemory(t *testing.T) {
	s, _, c := standalone(t)
	for _, limit := range []int{1, 10, 100, 500, 1000, 1019, 4096, 10000, 100000} {
		l := mustLog(t, c, redis.Options{Prefix: "mem"}, redis.Rule{Limit: limit, Window: time.Hour})
		key := "k" + strconv.Itoa(limit)
		for i := range 3 { // create, then write in place across the wrap
			_, err := l.AllowN(t.Context(), key, at(epoch+int64(i)), max(limit/2, 1))
			require.NoError(t, err)
		}
		rk, err := redis.RedisKey(l, key)
		require.NoError(t, err)
		out, err := redistest.Do(s.Addr(), "MEMORY", "USAGE", rk, "SAMPLES", "0")
		require.NoError(t, err)
		used, _ := strconv.Atoi(out)
		t.Logf("limit %d: MEMORY USAGE %d bytes, 8*limit+100 = %d", limit, used, 8*limit+100)
		strlen, err := redistest.Do(s.Addr(), "STRLEN", rk)
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(8*(limit+1)), strlen, "limit %d: the log is 8 bytes per slot and an 8-byte head", limit)
		require.LessOrEqual(t, used, 8*limit+100+(8*limit+8)/4, "limit %d", limit)
	}
	w := mustWindow(t, c, redis.Options{Prefix: "mem"}, redis.Rule{Limit: 1000, Window: time.Second}, redis.Rule{Limit: 100000, Window: time.Hour})
	_, err := w.AllowN(t.Context(), "w", at(epoch), 1)
	require.NoError(t, err)
	rk, err := redis.RedisKey(w, "w")
	require.NoError(t, err)
	out, err := redistest.Do(s.Addr(), "MEMORY", "USAGE", rk, "SAMPLES", "0")
	require.NoError(t, err)
	used, _ := strconv.Atoi(out)
	t.Logf("window, two rules: MEMORY USAGE %d bytes", used)
	require.LessOrEqual(t, used, 150)
}
