package redis_test

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
)

// TestLogExpiryServerClock: on the server's clock, in real time with windows
// of 50 and 80 ms, a log key's expiry as Redis reports it (PEXPIRETIME) is at
// least ttl (the window in milliseconds, plus one) after the server's clock
// read before every admission: while admissions go on past the horizon the
// key's header last recorded, and when calls with the caller's instants (some
// ahead of the server's clock) land on the same key. A refused call changes
// neither the key's value nor its expiry. A short log (read with GET) and a
// long one (read with GETRANGE) alike, each first re-based on the server's
// clock.
func TestLogExpiryServerClock(t *testing.T) {
	_, gc, c := standalone(t)
	ctx := t.Context()
	for _, tc := range []struct {
		limit, n int
		window   time.Duration
	}{{5, 1, 50 * time.Millisecond}, {1400, 300, 80 * time.Millisecond}} {
		// Not mustLog: its MinTTL of an hour would hide the expiry.
		l, err := redis.NewLog(c, redis.Options{Prefix: "srvexp", Timeout: 10 * time.Second}, redis.Rule{Limit: tc.limit, Window: tc.window})
		require.NoError(t, err)
		ttl := tc.window.Milliseconds() + 1
		key := "k" + strconv.Itoa(tc.limit)
		rk, err := redis.RedisKey(l, key)
		require.NoError(t, err)
		state := func() (string, int64) {
			v, err := gc.Get(ctx, rk).Result()
			if errors.Is(err, goredis.Nil) {
				v, err = "(none)", nil
			}
			require.NoError(t, err)
			e, err := gc.Do(ctx, "PEXPIRETIME", rk).Int64()
			require.NoError(t, err)
			return v, e
		}
		// A key created at an instant more than 2^47 µs before the server's
		// clock is re-based (written whole) by the next admission on the
		// server's clock, which sets its expiry too.
		old := time.Now().Add(-time.Duration(1<<47+1e9) * time.Microsecond)
		d, err := l.AllowN(ctx, key, old, tc.n)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		tm, err := gc.Time(ctx).Result()
		require.NoError(t, err)
		d, err = l.AllowN(ctx, key, time.Time{}, tc.n)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		_, e := state()
		require.GreaterOrEqual(t, e, tm.UnixMilli()+ttl, "limit %d: the re-based key's expiry", tc.limit)
		hdr, err := gc.GetRange(ctx, rk, 0, 7).Result()
		require.NoError(t, err)
		base := math.Float64frombits(binary.LittleEndian.Uint64([]byte(hdr)))
		require.Greater(t, int64(base), old.UnixMicro()+1<<46, "limit %d: the key was not re-based", tc.limit)

		rng := rand.New(rand.NewPCG(uint64(tc.limit), 7))
		admitted, refused, callers := 0, 0, 0
		end := time.Now().Add(10 * tc.window)
		for time.Now().Before(end) || admitted < 20 || refused < 5 {
			v0, e0 := state()
			tm, err := gc.Time(ctx).Result()
			require.NoError(t, err)
			var at time.Time // zero: the server's clock
			switch rng.IntN(8) {
			case 0:
				at = time.Now()
			case 1:
				at = time.Now().Add(tc.window / 3)
			}
			d, err := l.AllowN(ctx, key, at, tc.n)
			require.NoError(t, err)
			v1, e1 := state()
			if e1 == -2 && v0 != "(none)" {
				// The key went away after the call (a loaded machine): only
				// once past its expiry.
				now, err := gc.Time(ctx).Result()
				require.NoError(t, err)
				if d.Allowed {
					require.GreaterOrEqual(t, now.UnixMilli(), tm.UnixMilli()+ttl, "limit %d: the key went away less than ttl after an admission", tc.limit)
				} else {
					require.Greater(t, now.UnixMilli(), e0, "limit %d: the key went away before its expiry", tc.limit)
				}
				continue
			}
			if d.Allowed {
				admitted++
				if !at.IsZero() {
					callers++
				}
				require.GreaterOrEqual(t, e1, tm.UnixMilli()+ttl, "limit %d, admission %d: the key's expiry is %d ms after the server's clock read before it, not at least ttl %d ms", tc.limit, admitted, e1-tm.UnixMilli(), ttl)
			} else {
				refused++
				require.Equal(t, v0, v1, "limit %d: a refused call changed the key", tc.limit)
				require.Equal(t, e0, e1, "limit %d: a refused call changed the key's expiry", tc.limit)
			}
			time.Sleep(time.Duration(rng.IntN(int(tc.window/time.Millisecond)/4)) * time.Millisecond)
		}
		t.Logf("limit %d: %d admitted (%d at the caller's instants), %d refused", tc.limit, admitted, callers, refused)
		require.Positive(t, callers)
	}
}
