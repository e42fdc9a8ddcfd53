package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// zsetLog is the common sorted-set sliding log, written here only to be
// measured against the ring of NewLog: one member per unit of cost, scored by
// its instant. A decision drops the members older than the window, counts
// the rest, and adds n members when they fit; a refusal reads the oldest
// member for when the cost would fit. Members are "instant-count", unique
// while the key lives. ARGV: limit, window (µs), n; the server's clock.
var zsetLog = goredis.NewScript(`local tm = redis.call('TIME')
local now = tm[1] * 1000000 + tm[2]
local l, w, n = ARGV[1] + 0, ARGV[2] + 0, ARGV[3] + 0
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - w)
local c = redis.call('ZCARD', KEYS[1])
if c + n > l then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, l - c, oldest[2] + w}
end
for i = 1, n do redis.call('ZADD', KEYS[1], now, now .. '-' .. (c + i)) end
redis.call('PEXPIRE', KEYS[1], math.floor(w / 1000) + 1)
return {1, l - c - n, now}
`)

// zsetDecider decides one unit for key with the sorted-set log on u.
func zsetDecider(u goredis.UniversalClient, limit int, window time.Duration) decider {
	w := window.Microseconds()
	return func(ctx context.Context, key string) error {
		return zsetLog.Run(ctx, u, []string{"zlog:{" + key + "}"}, limit, w, 1).Err()
	}
}

// BenchmarkMemoryFullLog reports the bytes one key holds (MEMORY USAGE) once
// its window is full, for NewLog's ring and for the sorted-set log, at
// several limits; the loop itself measures nothing. Redis keeps a sorted set
// of up to 128 short members as one compact list and a larger one as a skip
// list with a hash.
func BenchmarkMemoryFullLog(b *testing.B) {
	s := redistest.Start(b)
	gc := goredis.NewClient(&goredis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = gc.Close() })
	c, err := redis.NewGoRedis(gc)
	require.NoError(b, err)
	ctx := context.Background()
	for _, limit := range []int{10, 100, 128, 129, 1000, 10000} {
		lg := mustLog(b, c, redis.Options{Prefix: "full"}, redis.Rule{Limit: limit, Window: time.Hour})
		zs := zsetDecider(gc, limit, time.Hour)
		key := "k" + strconv.Itoa(limit)
		for range limit {
			_, err := lg.Allow(ctx, key)
			require.NoError(b, err)
			require.NoError(b, zs(ctx, key))
		}
		rk, err := redis.RedisKey(lg, key)
		require.NoError(b, err)
		for name, k := range map[string]string{"log": rk, "zset-log": "zlog:{" + key + "}"} {
			b.Run(fmt.Sprintf("limit=%d/%s", limit, name), func(b *testing.B) {
				out, err := redistest.Do(s.Addr(), "MEMORY", "USAGE", k, "SAMPLES", "0")
				require.NoError(b, err)
				n, err := strconv.Atoi(out)
				require.NoError(b, err)
				for b.Loop() {
				}
				b.ReportMetric(float64(n), "bytes/key")
			})
		}
	}
}
