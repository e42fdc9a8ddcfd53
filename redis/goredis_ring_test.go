package redis_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// TestGoRedisRing runs the limiters on go-redis's Ring, which spreads keys
// over independent servers by hashing each key's hash tag (not by cluster
// slot): keys land on both shards and are each decided on their own state,
// loading the scripts on each shard as it first needs them; a group whose
// keys share a tag is decided on one shard, all or nothing; and a group of
// two different tags that fall in one cluster slot but on two shards is
// refused before anything is sent, where deciding it on the first key's
// shard would have kept the second key's count on a server that is not its
// own. When a shard stops, the Ring moves its keys to the other shard, where
// a key at its limit is admitted afresh, with no error: what a Ring costs.
// Load puts the script on every shard.
func TestGoRedisRing(t *testing.T) {
	shards := []*redistest.Server{redistest.Start(t), redistest.Start(t)}
	ring := goredis.NewRing(&goredis.RingOptions{
		Addrs:                 map[string]string{"a": shards[0].Addr(), "b": shards[1].Addr()},
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = ring.Close() })
	c, err := redis.NewGoRedis(ring)
	require.NoError(t, err)
	rule := redis.Rule{Limit: 2, Window: time.Hour}
	l := mustLog(t, c, redis.Options{Prefix: "ring"}, rule)
	now := at(epoch)
	// shardOf returns the index of the shard holding rk.
	shardOf := func(rk string) int {
		t.Helper()
		found := -1
		for i, s := range shards {
			out, err := redistest.Do(s.Addr(), "EXISTS", rk)
			require.NoError(t, err)
			if out == "1" {
				require.Equal(t, -1, found, "%s on both shards", rk)
				found = i
			}
		}
		return found
	}

	perShard := make([]int, len(shards))
	for i := range 40 {
		k := "user-" + strconv.Itoa(i)
		for j, want := range []bool{true, true, false} {
			d, err := l.AllowN(t.Context(), k, now, 1)
			require.NoError(t, err, "key %q call %d", k, j)
			require.Equal(t, want, d.Allowed, "key %q call %d", k, j)
		}
		perShard[shardOf(mustKey(t, l, k))]++
	}
	require.Positive(t, perShard[0], "keys per shard: %v", perShard)
	require.Positive(t, perShard[1], "keys per shard: %v", perShard)

	l2 := mustLog(t, c, redis.Options{Prefix: "ring2"}, rule)
	g, err := redis.NewGroup(l, l2)
	require.NoError(t, err)
	for j, want := range []bool{true, true, false} {
		d, err := g.AllowN(t.Context(), []string{"{t}x", "{t}y"}, now, 1)
		require.NoError(t, err)
		require.Equal(t, want, d.Allowed, "group call %d", j)
	}
	require.Equal(t, shardOf(mustKey(t, l, "{t}x")), shardOf(mustKey(t, l2, "{t}y")))

	// Two tags of one cluster slot that the ring puts on different shards.
	bySlot := map[int]string{}
	var tagA, tagB string
	for i := 0; tagA == ""; i++ {
		tag := "c" + strconv.Itoa(i)
		s := keySlot("{" + tag + "}")
		other, ok := bySlot[s]
		if !ok {
			bySlot[s] = tag
			continue
		}
		_, errA := l.AllowN(t.Context(), "{"+other+"}probe", now, 1)
		_, errB := l.AllowN(t.Context(), "{"+tag+"}probe", now, 1)
		require.NoError(t, errors.Join(errA, errB))
		if shardOf(mustKey(t, l, "{"+other+"}probe")) != shardOf(mustKey(t, l, "{"+tag+"}probe")) {
			tagA, tagB = other, tag
		}
	}
	_, err = g.AllowN(t.Context(), []string{"{" + tagA + "}x", "{" + tagB + "}y"}, now, 1)
	require.ErrorContains(t, err, "hash tag")
	for _, rk := range []string{mustKey(t, l, "{"+tagA+"}x"), mustKey(t, l2, "{"+tagB+"}y")} {
		require.Equal(t, -1, shardOf(rk), "%s written by a refused group", rk)
	}

	// A shard that stops: once the Ring's heartbeat finds it down, the Ring
	// places its keys on the other shard, where they have no state, so a
	// key at its limit is admitted afresh with no error (docs/redis.md).
	var moved string
	for i := range 40 {
		if k := "user-" + strconv.Itoa(i); shardOf(mustKey(t, l, k)) == 1 {
			moved = k
			break
		}
	}
	require.NotEmpty(t, moved)
	shards[1].Stop()
	require.Eventually(t, func() bool {
		d, err := l.AllowN(t.Context(), moved, now, 1)
		return err == nil && d.Allowed
	}, 10*time.Second, 20*time.Millisecond, "the stopped shard's key, admitted afresh on the other")
	shards = shards[:1]

	// Load puts the script on every shard.
	for _, s := range shards {
		_, err := redistest.Do(s.Addr(), "SCRIPT", "FLUSH")
		require.NoError(t, err)
	}
	require.NoError(t, l.Load(t.Context()))
	sha, _ := redis.ScriptSHAs()
	for _, s := range shards {
		out, err := redistest.Do(s.Addr(), "SCRIPT", "EXISTS", sha)
		require.NoError(t, err)
		require.Equal(t, "1", out, "script missing on %s after Load", s.Addr())
	}
}
