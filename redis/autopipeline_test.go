package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/internal/conformance"
	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// autopipelined returns a Client on go-redis's deferred autopipeliner over
// gc: calls from many goroutines share round trips, each decision still one
// script call.
func autopipelined(t *testing.T, gc *goredis.Client) redis.Client {
	t.Helper()
	ap, err := gc.AsyncAutoPipeline()
	require.NoError(t, err)
	t.Cleanup(func() { _ = ap.Close() })
	c, err := redis.NewGoRedis(ap)
	require.NoError(t, err)
	return c
}

// TestAutoPipeline: the limiters on go-redis's deferred autopipeliner (the
// *goredis.AutoPipeliner of AsyncAutoPipeline passed to NewGoRedis, which
// refuses the blocking one) keep every guarantee they have on a plain client: the shared contract and its outside-view check on
// caller-given instants (and the contract on a three-master cluster); groups of keys replayed against their oracle,
// and decided by 16 goroutines on two autopipelined clients on the server's clock; 16 goroutines on the server's clock, seen through
// the instants of their admissions, within the limit in every window; a
// script flush under load answered by sending the source, with nothing
// admitted beyond the limit; the server killed under load and restarted
// empty, under each failure policy (as TestOutsideKillRestart); a paused and
// a stopped server, each decision ending at its timeout; and a
// decision whose reply is lost applied once and reported as an error,
// although the client is configured to retry.
func TestAutoPipeline(t *testing.T) {
	s, gc, _ := standalone(t)
	c := autopipelined(t, gc)

	t.Run("blocking-refused", func(t *testing.T) {
		ap, err := gc.AutoPipeline()
		require.NoError(t, err)
		t.Cleanup(func() { _ = ap.Close() })
		_, err = redis.NewGoRedis(ap)
		require.ErrorContains(t, err, "AsyncAutoPipeline")
	})

	t.Run("conformance-log", func(t *testing.T) { conformance.Run(t, suiteOptions(t, c, true)) })
	t.Run("conformance-window", func(t *testing.T) { conformance.Run(t, suiteOptions(t, c, false)) })
	t.Run("outside-log", func(t *testing.T) { conformance.RunOutside(t, suiteOptions(t, c, true)) })
	t.Run("outside-window", func(t *testing.T) { conformance.RunOutside(t, suiteOptions(t, c, false)) })
	t.Run("cluster-log", func(t *testing.T) {
		cgc, _ := clusterClient(t, redistest.StartCluster(t))
		ap, err := cgc.AsyncAutoPipeline()
		require.NoError(t, err)
		t.Cleanup(func() { _ = ap.Close() })
		cc, err := redis.NewGoRedis(ap)
		require.NoError(t, err)
		conformance.Run(t, suiteOptions(t, cc, true))
	})

	t.Run("group-log", func(t *testing.T) { replayGroup(t, c, true) })
	t.Run("group-window", func(t *testing.T) { replayGroup(t, c, false) })
	t.Run("group-server-time", func(t *testing.T) {
		gc2, _ := connect(t, s)
		groupServerTimeLoad(t, c, autopipelined(t, gc2))
	})

	t.Run("server-time", func(t *testing.T) {
		rules := []redis.Rule{{Limit: 30, Window: 20 * time.Millisecond}, {Limit: 100, Window: 200 * time.Millisecond}}
		for _, exact := range []bool{true, false} {
			mk := mustWindow
			if exact {
				mk = mustLog
			}
			serverTimeLoad(t, exact, rules, mk(t, c, redis.Options{Prefix: "ap", Timeout: time.Second}, rules...))
		}
	})

	t.Run("script-flush", func(t *testing.T) { scriptFlushLoad(t, s, c, "apflush") })

	t.Run("kill-restart", func(t *testing.T) {
		// A server of its own: this one is stopped and restarted empty.
		s2, gc2, _ := standalone(t)
		killRestart(t, s2, autopipelined(t, gc2), "log", redis.Rule{Limit: 5, Window: 50 * time.Millisecond})
	})

	t.Run("timeout", func(t *testing.T) {
		// A server that stops answering, then one that is down: each
		// decision still ends at its timeout, with its policy's answer.
		s2, gc2, _ := standalone(t)
		c2 := autopipelined(t, gc2)
		const timeout = 200 * time.Millisecond
		rule := redis.Rule{Limit: 5, Window: time.Second}
		closed := mustLog(t, c2, redis.Options{Prefix: "apclosed", Timeout: timeout}, rule)
		open := mustLog(t, c2, redis.Options{Prefix: "apopen", Timeout: timeout, OnError: redis.FailOpen}, rule)
		for _, l := range []*redis.Limiter{closed, open} {
			_, err := l.Allow(t.Context(), "k") // loads the script
			require.NoError(t, err)
		}
		check := func(what string) {
			for range 3 {
				start := time.Now()
				d, err := closed.Allow(t.Context(), "k")
				took := time.Since(start)
				require.ErrorIs(t, err, context.DeadlineExceeded, what)
				require.False(t, d.Allowed)
				require.Less(t, took, timeout+300*time.Millisecond, "%s: fail closed took %v", what, took)
				start = time.Now()
				d, err = open.Allow(t.Context(), "k")
				took = time.Since(start)
				require.NoError(t, err, what)
				require.True(t, d.Allowed)
				require.Equal(t, redis.FromFailOpen, d.Source, what)
				require.Less(t, took, timeout+300*time.Millisecond, "%s: fail open took %v", what, took)
			}
		}
		_, err := redistest.Do(s2.Addr(), "CLIENT", "PAUSE", "3000", "ALL")
		require.NoError(t, err)
		check("paused")
		s2.Stop()
		check("down")
		s2.Restart()
	})

	t.Run("lost-reply", func(t *testing.T) {
		rule := redis.Rule{Limit: 5, Window: time.Hour}
		now := at(epoch)
		l0 := mustLog(t, c, redis.Options{Prefix: "aplost"}, rule)
		require.NoError(t, l0.Load(t.Context()))
		p := newDropProxy(t, s.Addr(), "evalsha")
		p.armed.Store(false)
		pgc := goredis.NewClient(&goredis.Options{Addr: p.ln.Addr().String(), MaxRetries: 5, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = pgc.Close() })
		ap, err := pgc.AsyncAutoPipeline()
		require.NoError(t, err)
		t.Cleanup(func() { _ = ap.Close() })

		// The hazard: a plain EVALSHA through this autopipeliner is retried
		// after its reply is lost, and so applied twice.
		logSHA, _ := redis.ScriptSHAs()
		rk, err := redis.RedisKey(l0, "plain")
		require.NoError(t, err)
		p.armed.Store(true)
		err = ap.EvalSha(t.Context(), logSHA, []string{rk}, now.UnixMicro(), 1, 3600001, 5, int64(3600000000)).Err()
		require.NoError(t, err, "the autopipeliner retried the lost call and got the second reply")
		d, err := l0.AllowN(t.Context(), "plain", now, 0)
		require.NoError(t, err)
		require.Equal(t, 3, d.Remaining[0], "the plain retried call was applied twice")

		// The limiter through the same autopipeliner: once, and an error.
		pc, err := redis.NewGoRedis(ap)
		require.NoError(t, err)
		l := mustLog(t, pc, redis.Options{Prefix: "aplost", Timeout: time.Second}, rule)
		p.armed.Store(true)
		d, err = l.AllowN(t.Context(), "k", now, 1)
		require.Error(t, err)
		require.False(t, d.Allowed)
		d, err = l0.AllowN(t.Context(), "k", now, 0)
		require.NoError(t, err)
		require.Equal(t, 4, d.Remaining[0], "the decision was applied exactly once")
	})
}
