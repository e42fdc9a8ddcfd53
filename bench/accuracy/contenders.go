package accuracy

import (
	"context"
	"net/http"
	"time"

	swindow "github.com/RussellLuo/slidingwindow"
	"github.com/go-chi/httprate"
	"github.com/juju/ratelimit"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ulmemory "github.com/ulule/limiter/v3/drivers/store/memory"
	uber "go.uber.org/ratelimit"
	"golang.org/x/time/rate"
)

// Decider is one limiter under replay. Decide is called at the call's real
// instant (on the bubble's fake clock, see Run) and presents the caller's
// possibly stale instant to limiters that accept one. It reports whether the
// call was admitted and the instant the event happens (the real instant for a
// limiter, the release instant for a pacer).
type Decider interface {
	Decide(presented, real time.Time, n int) (bool, time.Time)
}

// How a contender learns the time.
const (
	Injected = "instant passed to the call"
	FakeIfc  = "fake Clock implementation"
	Bubble   = "testing/synctest fake clock (time.Now)"
)

// Two-counter layouts (see TwoCounter).
const (
	Grid     = "grid"
	Anchored = "anchored"
)

// Contender is one limiter configured for Limit per Window.
type Contender struct {
	Name  string
	API   string // the call that is replayed
	Algo  string // what it limits
	Clock string // Injected, FakeIfc or Bubble
	Exact bool   // must decide exactly as the Oracle
	Model string // the two-counter layout it is compared with: Grid, Anchored or ""
	Must  bool   // must decide exactly as its Model (ours and the references)
	Pacer bool   // delays instead of refusing
	New   func(epoch time.Time) (Decider, func())
}

type decideFunc func(presented, real time.Time, n int) (bool, time.Time)

func (f decideFunc) Decide(p, r time.Time, n int) (bool, time.Time) { return f(p, r, n) }

// fakeClock implements the Clock interfaces of juju/ratelimit and
// uber-go/ratelimit: Now returns the instant the replay set, Sleep returns at
// once (a pacer's caller would be released at the instant Take returns).
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time        { return c.t }
func (c *fakeClock) Sleep(d time.Duration) {}

// sethvargo/go-limiter is not replayed: it reads the time through a
// linkname to the runtime's clock (internal/fasttime) that neither takes an
// injected instant nor follows testing/synctest's fake clock, so on
// simulated time it never refills.

func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}

// discardWriter is the smallest http.ResponseWriter httprate can write its
// headers to.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

func noop() {}

// Peers returns every peer configured for Limit per Window.
func Peers() []Contender {
	perSec := float64(Limit) / Window.Seconds()
	return []Contender{
		{
			Name: "x/time/rate", API: "(*rate.Limiter).AllowN(t, n)", Clock: Injected,
			Algo: "token bucket: rate 100/s, burst 100",
			New: func(epoch time.Time) (Decider, func()) {
				l := rate.NewLimiter(rate.Limit(perSec), Limit)
				return decideFunc(func(p, r time.Time, n int) (bool, time.Time) { return l.AllowN(p, n), r }), noop
			},
		},
		{
			Name: "juju/ratelimit", API: "(*Bucket).TakeMaxDuration(n, 0)", Clock: FakeIfc,
			Algo: "token bucket: rate 100/s, capacity 100, refilled in whole ticks",
			New: func(epoch time.Time) (Decider, func()) {
				clk := &fakeClock{t: epoch}
				b := ratelimit.NewBucketWithRateAndClock(perSec, Limit, clk)
				return decideFunc(func(p, r time.Time, n int) (bool, time.Time) {
					clk.t = p
					_, ok := b.TakeMaxDuration(int64(n), 0)
					return ok, r
				}), noop
			},
		},
		{
			Name: "juju/ratelimit (quantum)", API: "(*Bucket).TakeMaxDuration(n, 0)", Clock: FakeIfc,
			Algo: "token bucket: 100 tokens added at once every whole second, capacity 100",
			New: func(epoch time.Time) (Decider, func()) {
				clk := &fakeClock{t: epoch}
				b := ratelimit.NewBucketWithQuantumAndClock(Window, Limit, Limit, clk)
				return decideFunc(func(p, r time.Time, n int) (bool, time.Time) {
					clk.t = p
					_, ok := b.TakeMaxDuration(int64(n), 0)
					return ok, r
				}), noop
			},
		},
		{
			Name: "RussellLuo/slidingwindow", API: "(*Limiter).AllowN(t, n), LocalWindow", Clock: Injected, Model: Grid,
			Algo: "two counters (previous, current aligned window), float weight",
			New: func(epoch time.Time) (Decider, func()) {
				l, stop := swindow.NewLimiter(Window, Limit, func() (swindow.Window, swindow.StopFunc) {
					return swindow.NewLocalWindow()
				})
				return decideFunc(func(p, r time.Time, n int) (bool, time.Time) { return l.AllowN(p, int64(n)), r }), func() { stop() }
			},
		},
		{
			Name: "throttled (GCRA)", API: "(*GCRARateLimiterCtx).RateLimitCtx(ctx, key, n), memstore", Clock: FakeIfc,
			Algo: "GCRA: one request per 10 ms, burst 99 (100 at once)",
			New: func(epoch time.Time) (Decider, func()) {
				cur := epoch
				ms, err := memstore.New(0)
				if err != nil {
					panic(err)
				}
				ms.SetTimeNow(func() time.Time { return cur })
				l, err := throttled.NewGCRARateLimiterCtx(throttled.WrapStoreWithContext(ms),
					throttled.RateQuota{MaxRate: throttled.PerDuration(Limit, Window), MaxBurst: Limit - 1})
				if err != nil {
					panic(err)
				}
				ctx := context.Background()
				return decideFunc(func(p, r time.Time, n int) (bool, time.Time) {
					cur = p
					limited, _, err := l.RateLimitCtx(ctx, "k", n)
					return err == nil && !limited, r
				}), noop
			},
		},
		{
			Name: "uber-go/ratelimit", API: "Limiter.Take() (pacer, default slack 10)", Clock: FakeIfc, Pacer: true,
			Algo: "pacer: never refuses; releases each call at least 10 ms after the previous one, with up to 10 calls of slack",
			New: func(epoch time.Time) (Decider, func()) {
				clk := &fakeClock{t: epoch}
				l := uber.New(Limit, uber.Per(Window), uber.WithClock(clk))
				return decideFunc(func(p, r time.Time, n int) (bool, time.Time) {
					clk.t = p
					var at time.Time
					for range n {
						at = l.Take()
					}
					// Take answers on the presented clock; the caller is
					// released that much later on the real one.
					return true, at.Add(r.Sub(p))
				}), noop
			},
		},
		{
			Name: "ulule/limiter", API: "(*Limiter).Increment(ctx, key, n), memory store", Clock: Bubble,
			Algo: "fixed window of 1 s starting at the key's first request; refused calls count too",
			New: func(epoch time.Time) (Decider, func()) {
				store := ulmemory.NewStoreWithOptions(ulule.StoreOptions{Prefix: "b"})
				l := ulule.New(store, ulule.Rate{Period: Window, Limit: Limit})
				ctx := context.Background()
				return decideFunc(func(p, r time.Time, n int) (bool, time.Time) {
					sleepUntil(r)
					c, err := l.Increment(ctx, "k", int64(n))
					return err == nil && !c.Reached, r
				}), noop
			},
		},
		{
			Name: "go-chi/httprate", API: "(*RateLimiter).OnLimit(w, r, key)", Clock: Bubble, Model: Grid,
			Algo: "two counters, float weight rounded to the nearest integer",
			New: func(epoch time.Time) (Decider, func()) {
				l := httprate.NewRateLimiter(Limit, Window)
				w := &discardWriter{h: http.Header{}}
				req, _ := http.NewRequest(http.MethodGet, "/", nil)
				return decideFunc(func(p, r time.Time, n int) (bool, time.Time) {
					sleepUntil(r)
					rq := req
					if n != 1 {
						rq = req.WithContext(httprate.WithIncrement(req.Context(), n))
					}
					return !l.OnLimit(w, rq, "k"), r
				}), noop
			},
		},
	}
}
