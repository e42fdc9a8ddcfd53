package redis_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// TestSentinelFailover: limiters on go-redis's failover client decide on the
// master that Sentinel names. When that master crashes and Sentinel promotes
// the replica, decisions go to the new master, on the state it had
// replicated: a call made before the client knows the new master fails (the
// failure policy), no admission is lost or counted twice, and exactly the
// limit is admitted in all. (Admissions the old master took after its last
// replication would be lost: "Failure policy" in docs/redis.md. The test
// checks that the replica holds the state before the crash.)
func TestSentinelFailover(t *testing.T) {
	primary, replica, sen := startSentinelPair(t)

	gc := goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{sen.Addr()}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = gc.Close() })
	c, err := redis.NewGoRedis(gc)
	require.NoError(t, err)
	const limit = 20
	rule := redis.Rule{Limit: limit, Window: time.Hour}
	ls := []*redis.Limiter{
		mustLog(t, c, redis.Options{Prefix: "sen", Timeout: time.Second}, rule),
		mustWindow(t, c, redis.Options{Prefix: "sen", Timeout: time.Second}, rule),
	}
	for _, l := range ls {
		for range limit / 2 {
			d, err := l.AllowN(t.Context(), "k", time.Time{}, 1)
			require.NoError(t, err)
			require.True(t, d.Allowed)
		}
		rk := mustKey(t, l, "k")
		require.Eventually(t, func() bool {
			a, errA := redistest.Do(primary.Addr(), "GET", rk)
			b, errB := redistest.Do(replica.Addr(), "GET", rk)
			return errA == nil && errB == nil && a != "" && a == b
		}, 10*time.Second, 10*time.Millisecond, "the replica holds %s", rk)
	}

	// The master crashes; Sentinel finds it down after 500 ms and promotes
	// the replica.
	t0 := time.Now()
	primary.Stop()
	require.Eventually(t, func() bool { return strings.HasPrefix(role(replica), "master") },
		20*time.Second, 20*time.Millisecond, "the replica promoted")
	t.Logf("replica promoted %v after the crash", time.Since(t0))

	failed := 0
	for i, l := range ls {
		admitted := limit / 2
		deadline := time.Now().Add(20 * time.Second)
		for {
			d, err := l.AllowN(t.Context(), "k", time.Time{}, 1)
			if err != nil {
				require.Equal(t, redis.FromError, d.Source)
				require.False(t, d.Allowed)
				require.True(t, time.Now().Before(deadline), "limiter %d: still failing: %v", i, err)
				failed++
				time.Sleep(20 * time.Millisecond)
				continue
			}
			require.Equal(t, redis.FromRedis, d.Source)
			if !d.Allowed {
				break
			}
			admitted++
		}
		require.Equal(t, limit, admitted, "limiter %d: admitted in all, across the failover", i)
		v, err := redistest.Do(replica.Addr(), "EXISTS", mustKey(t, l, "k"))
		require.NoError(t, err)
		require.Equal(t, "1", v)
	}
	addr, err := redistest.Do(sen.Addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1\n"+strconv.Itoa(replica.Port), addr)
	t.Logf("calls that failed while the client switched masters: %d", failed)
}

// startSentinelPair starts a primary, its replica and a Sentinel that
// monitors the primary as "mymaster", and returns once the Sentinel knows
// the replica.
func startSentinelPair(t *testing.T) (primary, replica, sen *redistest.Server) {
	primary, replica = redistest.StartReplica(t)
	sen = redistest.StartSentinel(t, "mymaster", primary)
	require.Eventually(t, func() bool {
		out, err := redistest.Do(sen.Addr(), "SENTINEL", "REPLICAS", "mymaster")
		return err == nil && strings.Contains(out, strconv.Itoa(replica.Port))
	}, 15*time.Second, 50*time.Millisecond, "Sentinel found the replica")
	return primary, replica, sen
}

// role is s's ROLE reply ("master ...", "slave ..."), or its error's text.
func role(s *redistest.Server) string {
	out, err := redistest.Do(s.Addr(), "ROLE")
	if err != nil {
		return err.Error()
	}
	return out
}
