package redis_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// TestLogMemory: a log key holds exactly 16+6*(limit+1) bytes of data (a
// 16-byte header, 6 bytes per stamp and one empty slot; above 8 KiB, from
// limit 1362, a 24-byte header and no empty slot), and costs at most
// 8*limit+100 bytes in Redis as MEMORY USAGE counts it, jemalloc's size
// classes included (they round an allocation up by less than a quarter,
// which the 6-byte stamps leave room for), at every limit from 1 to 300,
// around the 8 KiB switch to reading with GETRANGE (1361, 1362), and up to
// MaxLogLimit. A window key costs a small constant per rule. Some numbers are
// logged for docs/redis.md.
func TestLogMemory(t *testing.T) {
	s, _, c := standalone(t)
	limits := []int{500, 1000, 1019, 1361, 1362, 4096, 10000, 100000, redis.MaxLogLimit}
	for l := 1; l <= 300; l++ {
		limits = append(limits, l)
	}
	for _, limit := range limits {
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
		if limit > 300 || limit%50 == 0 || limit < 3 || limit == 10 {
			t.Logf("limit %d: MEMORY USAGE %d bytes, 8*limit+100 = %d", limit, used, 8*limit+100)
		}
		strlen, err := redistest.Do(s.Addr(), "STRLEN", rk)
		require.NoError(t, err)
		size := 16 + 6*(limit+1) // the base, exp, the stamps and one empty slot
		if size > 8192 {
			size = 24 + 6*limit // the base, the head and exp, for a log read with GETRANGE
		}
		require.Equal(t, strconv.Itoa(size), strlen, "limit %d", limit)
		require.LessOrEqual(t, used, 8*limit+100, "limit %d", limit)
		_, err = redistest.Do(s.Addr(), "DEL", rk)
		require.NoError(t, err)
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
