package redis_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// The benchmarks run every decider against one local redis-server started for
// the run, on the server's clock, with keys drawn at random from benchKeys
// keys that all exist beforehand, at 1, 16 and 64 goroutines. Each reports decisions per second and the p50
// and p99 latency of one decision. The peers: redis_rate (GCRA: a rate of
// limit per second with a burst of limit, not a sliding window), go-chi's
// httprate-redis (two counters, read and written with four commands, through
// httprate's middleware, its only API) and ulule/limiter's Redis store (a
// fixed window, one script). The comparison is of cost, not of semantics.

const (
	benchKeys  = 1000
	benchLimit = 100
)

type decider func(ctx context.Context, key string) error

// benchDeciders returns every decider on client gc; ours keep their keys at
// least minTTL after each admission (0: the default, as short as their
// information lasts).
func benchDeciders(b *testing.B, gc *goredis.Client, rate redis_rate.Limit, minTTL time.Duration) map[string]decider {
	ds := deciders(b, gc, rate, "bench", minTTL)
	// The same deciders on go-redis's autopipeliner over the same client
	// ("-ap"): concurrent calls share round trips, each decision still one
	// script call. Their own keys (redis_rate's are shared), so that each set
	// starts alike.
	ap, err := gc.AsyncAutoPipeline()
	require.NoError(b, err)
	b.Cleanup(func() { _ = ap.Close() })
	for name, d := range deciders(b, ap, rate, "benchap", minTTL) {
		if name == "log" || name == "window" || name == "redis_rate" {
			ds[name+"-ap"] = d
		}
	}
	// The other peers take a *goredis.Client only.
	one := func(d peerDecider) decider {
		return func(ctx context.Context, key string) error { _, err := d(ctx, key, 1); return err }
	}
	ds["httprate-redis"] = one(httprateRedis(gc, int(rate.Rate), rate.Period))
	ul, err := ululeRedis(gc, int(rate.Rate), rate.Period)
	require.NoError(b, err)
	ds["ulule"] = one(ul)
	return ds
}

// deciders returns each decider on client u, its keys under prefix, ours
// with a MinTTL of minTTL.
func deciders(b *testing.B, u goredis.UniversalClient, rate redis_rate.Limit, prefix string, minTTL time.Duration) map[string]decider {
	c, err := redis.NewGoRedis(u)
	require.NoError(b, err)
	rule := redis.Rule{Limit: benchLimit, Window: time.Second}
	// A timeout that a loaded machine cannot reach.
	opts := func(prefix string) redis.Options {
		return redis.Options{Prefix: prefix, Timeout: 10 * time.Second, MinTTL: minTTL}
	}
	lg, err := redis.NewLog(c, opts(prefix), rule)
	require.NoError(b, err)
	win, err := redis.NewWindow(c, opts(prefix), rule)
	require.NoError(b, err)
	lg3, err := redis.NewLog(c, opts(prefix+"3"), rule, redis.Rule{Limit: 1000, Window: time.Minute}, redis.Rule{Limit: 10000, Window: time.Hour})
	require.NoError(b, err)
	bkt, err := redis.NewBuckets(c, opts(prefix), redis.Rule{Limit: benchLimit, Window: time.Second, Precision: 100 * time.Millisecond})
	require.NoError(b, err)
	rr := redis_rate.NewLimiter(u) // its keys are "rate:" + key whatever the client
	allow := func(l *redis.Limiter) decider {
		return func(ctx context.Context, key string) error { _, err := l.Allow(ctx, key); return err }
	}
	return map[string]decider{
		"log":        allow(lg),
		"window":     allow(win),
		"log-3rules": allow(lg3),
		"buckets":    allow(bkt),
		"redis_rate": func(ctx context.Context, key string) error { _, err := rr.Allow(ctx, key, rate); return err },
		"zset-log":   zsetDecider(u, int(rate.Rate), rate.Period),
	}
}

// BenchmarkDecide measures one decision end to end (client, network,
// script) at several concurrencies. The deciders take turns: each round runs
// a slice of decisions with every decider, in an order shuffled from round
// to round, so that a machine that speeds up or slows down during the run
// does so for all of them alike, no decider always follows the same one, and
// the ratios between them are paired. The environment variable DECIDERS
// (comma-separated names) restricts the run to some of them.
// Each sub-benchmark reports one decider at one concurrency from that
// interleaved measurement: -benchtime=Nx sets N decisions per decider
// (5000 otherwise), and its own loop measures nothing.
func BenchmarkDecide(b *testing.B) {
	s := redistest.Start(b)
	gc := goredis.NewClient(&goredis.Options{Addr: s.Addr(), PoolSize: 64, ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = gc.Close() })
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i)
	}
	// The options a user leaves alone: keys expire as soon as they carry
	// no information, so their expiry is refreshed as often as it would be.
	ds := benchDeciders(b, gc, redis_rate.PerSecond(benchLimit), 0)
	names := make([]string, 0, len(ds))
	for n := range ds {
		names = append(names, n)
	}
	slices.Sort(names)
	if only := os.Getenv("DECIDERS"); only != "" { // bench.sh's DECIDERS
		names = strings.Split(only, ",")
		for _, name := range names {
			require.Contains(b, ds, name, "DECIDERS names an unknown decider")
		}
	}
	ctx := context.Background()
	for _, name := range names {
		for _, k := range keys { // loads the script, creates every key
			require.NoError(b, ds[name](ctx, k))
		}
	}
	n := 5000
	if f := flag.Lookup("test.benchtime"); f != nil {
		if v, err := strconv.Atoi(strings.TrimSuffix(f.Value.String(), "x")); err == nil && v > 0 {
			n = v
		}
	}
	for _, g := range []int{1, 16, 64} {
		res := interleave(b, s, ds, names, keys, g, n)
		for _, name := range names {
			b.Run(fmt.Sprintf("%s/g=%d", name, g), func(b *testing.B) {
				for b.Loop() {
				}
				r := res[name]
				slices.Sort(r.lat)
				b.ReportMetric(float64(len(r.lat))/r.elapsed.Seconds(), "decisions/s")
				b.ReportMetric(float64(r.lat[len(r.lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(r.lat[len(r.lat)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(r.calls)/float64(len(r.lat)), "scripts/decision")
				b.ReportMetric(r.usec/float64(max(r.calls, 1)), "server-µs/decision")
			})
		}
	}
}

// measured is what interleave gathered for one decider: the time its slices
// took, the latency of each decision, and the script calls the server ran
// for them and their server time in microseconds.
type measured struct {
	elapsed time.Duration
	lat     []time.Duration
	calls   int
	usec    float64
}

// interleave runs n decisions with each decider at g goroutines, in slices of
// at least 32 decisions per goroutine, the deciders taking turns in an order
// shuffled each round (a fixed seed per g). Keys are
// drawn at random. Before its first slice, each decider warms the client's
// pool with g goroutines, untimed, so that no decider pays for dialling the
// connections the others then reuse.
func interleave(b *testing.B, s *redistest.Server, ds map[string]decider, names, keys []string, g, n int) map[string]*measured {
	ctx := context.Background()
	slice := max(1000, 32*g)
	res := map[string]*measured{}
	for _, name := range names {
		res[name] = &measured{lat: make([]time.Duration, 0, n)}
		var warm sync.WaitGroup
		for w := range g {
			warm.Go(func() {
				for i := range 20 {
					if err := ds[name](ctx, keys[(w*20+i)%len(keys)]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		warm.Wait()
	}
	order := rand.New(rand.NewPCG(uint64(g), 7))
	for round := 0; round*slice < n; round++ {
		todo := min(slice, n-round*slice)
		for _, i := range order.Perm(len(names)) {
			name := names[i]
			d, m := ds[name], res[name]
			_, err := redistest.Do(s.Addr(), "CONFIG", "RESETSTAT")
			require.NoError(b, err)
			lat := make([][]time.Duration, g)
			var wg sync.WaitGroup
			start := time.Now()
			for w := range g {
				k := todo / g
				if w < todo%g {
					k++
				}
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(w), uint64(round)))
					l := make([]time.Duration, 0, k)
					for range k {
						t0 := time.Now()
						if err := d(ctx, keys[r.IntN(len(keys))]); err != nil {
							b.Error(err)
							return
						}
						l = append(l, time.Since(t0))
					}
					lat[w] = l
				})
			}
			wg.Wait()
			m.elapsed += time.Since(start)
			m.lat = append(m.lat, slices.Concat(lat...)...)
			calls, usec := scriptStats(b, s.Addr())
			m.calls += calls
			m.usec += usec * float64(calls)
		}
	}
	return res
}

// BenchmarkMemoryPerKey fills 100k keys with one decision each and reports
// used_memory (INFO memory) per key; the loop itself measures nothing.
func BenchmarkMemoryPerKey(b *testing.B) {
	const keys = 100_000
	for _, name := range []string{"log", "zset-log", "window", "buckets", "redis_rate", "httprate-redis", "ulule"} {
		b.Run(name, func(b *testing.B) {
			s := redistest.Start(b)
			gc := goredis.NewClient(&goredis.Options{Addr: s.Addr(), PoolSize: 32, ContextTimeoutEnabled: true})
			b.Cleanup(func() { _ = gc.Close() })
			// PerHour: redis_rate's key lives until its bucket is full
			// again, which at 100 per second is 10 ms, too short to count
			// (and the other peers' keys live for a window or three).
			// Keys that outlive the measurement.
			d := benchDeciders(b, gc, redis_rate.PerHour(benchLimit), time.Hour)[name]
			before := usedMemory(b, s.Addr())
			var wg sync.WaitGroup
			for w := range 16 {
				wg.Go(func() {
					for i := w; i < keys; i += 16 {
						if err := d(context.Background(), "user-"+strconv.Itoa(i)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			n, err := redistest.Do(s.Addr(), "DBSIZE")
			require.NoError(b, err)
			require.Equal(b, strconv.Itoa(keys), n, "every decision must have created its key")
			after := usedMemory(b, s.Addr())
			for b.Loop() {
			}
			b.ReportMetric(float64(after-before)/keys, "bytes/key")
		})
	}
}

func usedMemory(b *testing.B, addr string) int {
	out, err := redistest.Do(addr, "INFO", "memory")
	require.NoError(b, err)
	for _, line := range strings.Split(out, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.Atoi(v)
			require.NoError(b, err)
			return n
		}
	}
	b.Fatalf("no used_memory in INFO memory:\n%s", out)
	return 0
}

// scriptStats returns how many script calls (EVALSHA and EVAL) the server ran
// since CONFIG RESETSTAT, and their mean server time in microseconds.
func scriptStats(b *testing.B, addr string) (calls int, usecPerCall float64) {
	out, err := redistest.Do(addr, "INFO", "commandstats")
	require.NoError(b, err)
	var usec float64
	for _, line := range strings.Split(out, "\r\n") {
		for _, cmd := range []string{"cmdstat_evalsha:", "cmdstat_eval:"} {
			v, ok := strings.CutPrefix(line, cmd)
			if !ok {
				continue
			}
			for _, f := range strings.Split(v, ",") {
				k, val, _ := strings.Cut(f, "=")
				switch k {
				case "calls":
					n, _ := strconv.Atoi(val)
					calls += n
				case "usec":
					u, _ := strconv.ParseFloat(val, 64)
					usec += u
				}
			}
		}
	}
	if calls == 0 {
		return 0, 0
	}
	return calls, usec / float64(calls)
}
