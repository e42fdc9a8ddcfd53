// Package stores adapts every keyed store the benchmarks measure, ours and
// the peers', to one interface, so that the keyed benchmarks and the memory
// measurement (cmd/memkey) use the same configuration of each.
package stores

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/httprate"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ulmemory "github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// Store is "may one event for key happen now?", through each store's own API.
type Store interface{ Allow(key string) bool }

// Impl builds a Store admitting limit events per window for each key, able to
// hold n keys where the store takes a bound.
type Impl struct {
	Name string
	API  string // the call measured
	Algo string // what it limits
	New  func(limit int, window time.Duration, n int) Store
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

type sethvargoStore struct {
	s interface {
		Take(context.Context, string) (uint64, uint64, uint64, bool, error)
	}
}

func (s sethvargoStore) Allow(key string) bool {
	_, _, _, ok, err := s.s.Take(context.Background(), key)
	return ok && err == nil
}

type throttledStore struct{ l *throttled.GCRARateLimiterCtx }

func (t throttledStore) Allow(key string) bool {
	limited, _, err := t.l.RateLimitCtx(context.Background(), key, 1)
	return err == nil && !limited
}

type ululeStore struct{ l *ulule.Limiter }

func (u ululeStore) Allow(key string) bool {
	c, err := u.l.Get(context.Background(), key)
	return err == nil && !c.Reached
}

// httprateStore calls OnLimit, the decision httprate's middleware makes per
// request, with the response headers it sets.
type httprateStore struct {
	l   *httprate.RateLimiter
	req *http.Request
}

type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

func (h httprateStore) Allow(key string) bool {
	// One writer per call, as a server has one per request; its header map
	// is part of what a request costs httprate.
	return !h.l.OnLimit(&discardWriter{h: http.Header{}}, h.req, key)
}

// MaxKeysFor is the bound our Keyed gets for n keys: the default, or room for
// twice n.
func MaxKeysFor(n int) keyed.Option { return keyed.MaxKeys(max(keyed.DefaultMaxKeys, 2*n)) }

// All returns ours followed by the peers.
func All() []Impl {
	return append(Ours(), Peers()...)
}

// Ours returns our keyed stores.
func Ours() []Impl {
	return []Impl{
		{
			Name: "keyed.Window", API: "(*keyed.Window[string]).Allow(key)",
			Algo: "two-counter window per key, state inline in the map",
			New: func(l int, w time.Duration, n int) Store {
				return must(keyed.NewWindow[string](l, w, MaxKeysFor(n)))
			},
		},
		{
			Name: "keyed-window", API: "(*keyed.Limiter[string, *window.Limiter]).Allow(key)",
			Algo: "two-counter window per key (two padded words)",
			New: func(l int, w time.Duration, n int) Store {
				return must(keyed.New[string](func() (*window.Limiter, error) { return window.New(l, w) }, MaxKeysFor(n)))
			},
		},
		{
			Name: "keyed-ring", API: "(*keyed.Limiter[string, *ring.Limiter]).Allow(key)",
			Algo: "exact sliding log per key (8 bytes per unit of limit)",
			New: func(l int, w time.Duration, n int) Store {
				return must(keyed.New[string](func() (*ring.Limiter, error) { return ring.New(l, w) }, MaxKeysFor(n)))
			},
		},
	}
}

// Peers returns the peers' keyed stores.
func Peers() []Impl {
	return []Impl{
		{
			Name: "sethvargo", API: "memorystore Store.Take(ctx, key)",
			Algo: "token bucket per key, refilled in whole intervals",
			New: func(l int, w time.Duration, n int) Store {
				return sethvargoStore{must(memorystore.New(&memorystore.Config{Tokens: uint64(l), Interval: w}))}
			},
		},
		{
			Name: "throttled", API: "(*GCRARateLimiterCtx).RateLimitCtx(ctx, key, 1), memstore without a key bound",
			Algo: "GCRA per key (burst = limit)",
			New: func(l int, w time.Duration, n int) Store {
				st := must(memstore.NewCtx(0))
				q := throttled.RateQuota{MaxRate: throttled.PerDuration(l, w), MaxBurst: l - 1}
				return throttledStore{must(throttled.NewGCRARateLimiterCtx(st, q))}
			},
		},
		{
			Name: "ulule", API: "(*limiter.Limiter).Get(ctx, key), memory store",
			Algo: "fixed window per key from its first request",
			New: func(l int, w time.Duration, n int) Store {
				return ululeStore{ulule.New(ulmemory.NewStore(), ulule.Rate{Period: w, Limit: int64(l)})}
			},
		},
		{
			Name: "httprate", API: "(*RateLimiter).OnLimit(w, r, key)",
			Algo: "two counters per key (hashed to 64 bits), one mutex for all keys",
			New: func(l int, w time.Duration, n int) Store {
				req, _ := http.NewRequest(http.MethodGet, "/", nil)
				return httprateStore{l: httprate.NewRateLimiter(l, w), req: req}
			},
		},
	}
}
