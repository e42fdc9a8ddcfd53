package redis

import (
	"context"
	"time"
)

// RedisKey exposes the Redis key a limiter uses for a user key.
func RedisKey(l *Limiter, key string) (string, error) { return l.redisKey(key) }

// ScriptSHAs returns the digests of the log and window scripts (not the
// sub-window counters').
func ScriptSHAs() (log, window string) { return logScript.sha, windowScript.sha }

// SimClock is a simulated clock for WaitN: decisions are asked at Now, and
// each sleep advances Now and is recorded in Slept.
type SimClock struct {
	Now   time.Time
	Slept []time.Duration
}

func (c *SimClock) clock() waitClock {
	return waitClock{
		now: func() time.Time { return c.Now },
		sleep: func(ctx context.Context, d time.Duration) error {
			c.Slept = append(c.Slept, d)
			c.Now = c.Now.Add(d)
			return ctx.Err()
		},
		until: func(dl time.Time) time.Duration { return dl.Sub(c.Now) },
	}
}

// WaitNSim runs Limiter.WaitN's loop on the simulated clock.
func WaitNSim(ctx context.Context, l *Limiter, key string, n int, c *SimClock) error {
	return waitN(ctx, n, c.clock(), func(ctx context.Context, now time.Time) (Decision, error) {
		return l.AllowN(ctx, key, now, n)
	})
}

// GroupWaitNSim runs Group.WaitN's loop on the simulated clock.
func GroupWaitNSim(ctx context.Context, g *Group, keys []string, n int, c *SimClock) error {
	return waitN(ctx, n, c.clock(), func(ctx context.Context, now time.Time) (Decision, error) {
		return g.AllowN(ctx, keys, now, n)
	})
}

// HashTag exposes the hash tag the client reads in a Redis key, the one a
// group's keys must share.
func HashTag(key string) (string, bool) { return hashTag(key) }
