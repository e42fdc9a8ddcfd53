package redis_test

import (
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// scriptCommands are the commands the limiters' scripts call, and the ones
// that send and load the scripts: what a Redis ACL user must be allowed
// (docs/redis.md, "Access control").
var scriptCommands = []string{"+evalsha", "+eval", "+script|load",
	"+time", "+get", "+getrange", "+strlen", "+set", "+setrange", "+pexpire", "+pexpireat", "+pttl"}

// TestACL: a Redis user allowed only scriptCommands, on the keys under its
// limiters' prefix, runs every kind of limiter on every path of its script:
// the log with a short ring and with a long one (read with GETRANGE), the
// window, the sub-window counters, a group, on the server's clock and on the
// caller's, the expiry refreshed, scripts lost and sent again, and Load.
// Without TIME, a decision on the server's clock fails
// (the failure policy) before it writes anything; on a key outside its
// pattern, Redis refuses the script before it runs.
func TestACL(t *testing.T) {
	s := redistest.Start(t)
	user := func(name string, cmds ...string) redis.Client {
		t.Helper()
		args := append([]string{"ACL", "SETUSER", name, "on", ">secret", "resetkeys", "~acl:*", "resetchannels", "-@all"}, cmds...)
		out, err := redistest.Do(s.Addr(), args...)
		require.NoError(t, err)
		require.Equal(t, "OK", out)
		gc := goredis.NewClient(&goredis.Options{Addr: s.Addr(), Username: name, Password: "secret", ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = gc.Close() })
		c, err := redis.NewGoRedis(gc)
		require.NoError(t, err)
		return c
	}
	c := user("limiter", scriptCommands...)
	hour := time.Hour
	kinds := map[string]func(redis.Client, redis.Options) (*redis.Limiter, error){
		"log": func(c redis.Client, o redis.Options) (*redis.Limiter, error) {
			return redis.NewLog(c, o, redis.Rule{Limit: 2, Window: hour})
		},
		"log-long": func(c redis.Client, o redis.Options) (*redis.Limiter, error) {
			return redis.NewLog(c, o, redis.Rule{Limit: 2, Window: hour}, redis.Rule{Limit: 5000, Window: 24 * hour})
		},
		"window": func(c redis.Client, o redis.Options) (*redis.Limiter, error) {
			return redis.NewWindow(c, o, redis.Rule{Limit: 2, Window: hour})
		},
		"buckets": func(c redis.Client, o redis.Options) (*redis.Limiter, error) {
			return redis.NewBuckets(c, o, redis.Rule{Limit: 2, Window: hour, Precision: time.Minute})
		},
	}
	for name, mk := range kinds {
		for _, now := range []time.Time{{}, time.Now()} {
			clock := "server"
			if !now.IsZero() {
				clock = "caller"
			}
			t.Run(name+"/"+clock, func(t *testing.T) {
				// A MinTTL below the window, so that the expiry is set
				// and refreshed on the way.
				o := redis.Options{Prefix: "acl:" + name + ":" + clock, Timeout: 10 * time.Second, MinTTL: time.Millisecond}
				l, err := mk(c, o)
				require.NoError(t, err)
				l2, err := mk(c, redis.Options{Prefix: "acl:" + name + ":" + clock + ":2", Timeout: 10 * time.Second})
				require.NoError(t, err)
				require.NoError(t, l.Load(t.Context()))
				for i, want := range []bool{true, true, false} {
					d, err := l.AllowN(t.Context(), name, now, 1)
					require.NoError(t, err, "call %d", i)
					require.Equal(t, redis.FromRedis, d.Source)
					require.Equal(t, want, d.Allowed, "call %d", i)
				}
				g, err := redis.NewGroup(l, l2)
				require.NoError(t, err)
				d, err := g.AllowN(t.Context(), []string{"{g}a", "{g}b"}, now, 1)
				require.NoError(t, err)
				require.True(t, d.Allowed)
				// A server that lost the scripts gets them by EVAL.
				_, err = redistest.Do(s.Addr(), "SCRIPT", "FLUSH")
				require.NoError(t, err)
				d, err = g.AllowN(t.Context(), []string{"{g}c", "{g}d"}, now, 1)
				require.NoError(t, err)
				require.True(t, d.Allowed)
			})
		}
	}
	// The log's expiry, refreshed in place (PEXPIREAT on the server's clock,
	// PTTL and PEXPIRE on the caller's) once the key has lived more than its
	// window.
	for _, clock := range []string{"server", "caller"} {
		t.Run("log-refresh/"+clock, func(t *testing.T) {
			l, err := redis.NewLog(c, redis.Options{Prefix: "acl:refresh:" + clock, Timeout: 10 * time.Second}, redis.Rule{Limit: 2, Window: 30 * time.Millisecond})
			require.NoError(t, err)
			for i := range 3 {
				now := time.Time{}
				if clock == "caller" {
					now = time.Now()
				}
				d, err := l.AllowN(t.Context(), "k", now, 1)
				require.NoError(t, err, "call %d", i)
				require.True(t, d.Allowed, "call %d", i)
				time.Sleep(40 * time.Millisecond)
			}
		})
	}

	var noTime []string
	for _, cmd := range scriptCommands {
		if cmd != "+time" {
			noTime = append(noTime, cmd)
		}
	}
	l, err := redis.NewLog(user("notime", noTime...), redis.Options{Prefix: "acl:nt", Timeout: 10 * time.Second}, redis.Rule{Limit: 2, Window: hour})
	require.NoError(t, err)
	d, err := l.AllowN(t.Context(), "k", time.Time{}, 1)
	require.ErrorContains(t, err, "can't run this command")
	require.Equal(t, redis.FromError, d.Source)
	outside, err := redis.NewLog(c, redis.Options{Prefix: "other", Timeout: 10 * time.Second}, redis.Rule{Limit: 2, Window: hour})
	require.NoError(t, err)
	_, err = outside.AllowN(t.Context(), "k", time.Time{}, 1)
	require.ErrorContains(t, err, "NOPERM")
	// The key it would have written (not DBSIZE: the refresh subtests'
	// 30 ms keys may expire meanwhile).
	n, err := redistest.Do(s.Addr(), "EXISTS", mustKey(t, outside, "k"))
	require.NoError(t, err)
	require.Equal(t, "0", n, "a refused script wrote")
}
