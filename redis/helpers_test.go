package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// epoch is where replayed instants start: 2026-01-01 UTC, in microseconds.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

func at(us int64) time.Time { return time.UnixMicro(us) }

// standalone starts a server and returns a go-redis client on it, with the
// client's default retries left on (MaxRetries 3): the limiters must turn
// them off for their scripts themselves.
func standalone(t testing.TB) (*redistest.Server, *goredis.Client, redis.Client) {
	t.Helper()
	s := redistest.Start(t)
	gc, c := connect(t, s)
	return s, gc, c
}

// connect returns a new go-redis client on s, with its own connection pool
// (as another process would have), closed when the test ends.
func connect(t testing.TB, s *redistest.Server) (*goredis.Client, redis.Client) {
	t.Helper()
	gc := goredis.NewClient(&goredis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = gc.Close() })
	c, err := redis.NewGoRedis(gc)
	require.NoError(t, err)
	return gc, c
}

func clusterClient(t testing.TB, cl *redistest.Cluster) (*goredis.ClusterClient, redis.Client) {
	t.Helper()
	gc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = gc.Close() })
	c, err := redis.NewGoRedis(gc)
	require.NoError(t, err)
	return gc, c
}

// testOptions fills what every test needs unless it says otherwise: a
// timeout long enough for a loaded CI machine, and keys that outlive the
// replays (whose instants may advance more slowly than the server's clock).
func testOptions(o redis.Options) redis.Options {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MinTTL == 0 {
		o.MinTTL = time.Hour
	}
	return o
}

func mustLog(t testing.TB, c redis.Client, o redis.Options, rules ...redis.Rule) *redis.Limiter {
	t.Helper()
	o = testOptions(o)
	l, err := redis.NewLog(c, o, rules...)
	require.NoError(t, err)
	return l
}

func mustWindow(t testing.TB, c redis.Client, o redis.Options, rules ...redis.Rule) *redis.Limiter {
	t.Helper()
	o = testOptions(o)
	l, err := redis.NewWindow(c, o, rules...)
	require.NoError(t, err)
	return l
}

// call is one replayed call: an instant (µs) and a cost.
type call struct {
	t int64
	n int
}

// workloads returns the replayed call sequences, named, for rules whose
// first (tightest) rule is limit per window w. They follow the comparison
// workloads of the bench module: a steady rate above the limit, Poisson
// arrivals at three times the limit, bursts on both sides of an aligned
// window edge, and a mixed one with weights, stale instants and idle gaps.
func workloads(seed uint64, limit int, w time.Duration) map[string][]call {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	W := w.Microseconds()
	out := map[string][]call{}

	var steady []call
	gap := W * 4 / int64(limit*5) // 1.25x the limit
	for i := range 400 {
		steady = append(steady, call{epoch + int64(i)*max(gap, 1), 1})
	}
	out["steady-1.25x"] = steady

	var poisson []call
	t := epoch
	for range 400 {
		t += int64(r.ExpFloat64() * float64(W) / float64(3*limit))
		poisson = append(poisson, call{t, 1})
	}
	out["poisson-3x"] = poisson

	var edges []call
	for k := range 3 {
		e := epoch + int64(k+1)*W
		for range limit {
			edges = append(edges, call{e - W/1000 - 1, 1})
		}
		for range limit {
			edges = append(edges, call{e + W/1000 + 1, 1})
		}
	}
	out["edge-bursts"] = edges

	var mixed []call
	t = epoch
	for range 600 {
		switch x := r.IntN(100); {
		case x < 2:
			t += 3 * W // idle
		case x < 60:
			t += r.Int64N(max(W/int64(limit), 1) + 1)
		}
		c := call{t, 1}
		switch x := r.IntN(100); {
		case x < 10:
			c.t = t - r.Int64N(W/2+1) // stale
		case x < 15:
			c.n = 0
		case x < 20:
			c.n = limit + 1 // never fits
		case x < 40:
			c.n = 1 + r.IntN(limit)
		}
		mixed = append(mixed, c)
	}
	out["mixed"] = mixed
	return out
}

func ctxT(t testing.TB) context.Context {
	t.Helper()
	return t.Context()
}

// quiet drops go-redis's own log lines (dial failures while a test has
// stopped a server on purpose); the tests assert on the errors instead.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() { goredis.SetLogger(quiet{}) }

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }

// requireDecision fails the test unless d is the oracle's answer: admitted,
// at, ready (-1: never) and remaining, instants in microseconds.
func requireDecision(t *testing.T, what string, d redis.Decision, ok bool, atUS, ready int64, rem []int) {
	t.Helper()
	gotReady := int64(-1)
	if !d.ReadyAt.IsZero() {
		gotReady = d.ReadyAt.UnixMicro()
	}
	if d.Allowed != ok || d.At.UnixMicro() != atUS || gotReady != ready || fmt.Sprint(d.Remaining) != fmt.Sprint(rem) {
		t.Fatalf("%s = {allowed %v at %d ready %d remaining %v}, oracle {allowed %v at %d ready %d remaining %v}",
			what, d.Allowed, d.At.UnixMicro()-epoch, gotReady-epoch, d.Remaining, ok, atUS-epoch, ready-epoch, rem)
	}
}
