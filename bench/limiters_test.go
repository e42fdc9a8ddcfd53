package bench

import (
	"fmt"
	"time"

	swindow "github.com/RussellLuo/slidingwindow"
	"github.com/juju/ratelimit"
	uber "go.uber.org/ratelimit"
	"golang.org/x/time/rate"

	"github.com/slidelimit/slidelimit/bench/refimpl"
	"github.com/slidelimit/slidelimit/internal/benchfloor"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// allower is what the single-limiter harness calls: each implementation's
// plain "may one event happen now?" method, reading the clock the way that
// implementation does when a user calls it.
type allower interface{ Allow() bool }

// Configurations of the two paths. On the admit path the limiter must admit
// (nearly) every call: 1024 per microsecond is far above what two cores can
// ask for. On the deny path one call of cost 1 has used the whole limit of a
// one-hour window, so every measured call is refused.
const (
	admitLimit  = 1024
	admitWindow = time.Microsecond
	denyLimit   = 1
	denyWindow  = time.Hour
)

// impl is one contender of the single-limiter harness. newFn returns a fresh
// limiter configured for limit per window; a nil newFn on a path means the
// implementation has no such path (a pacer never refuses).
type impl struct {
	name   string
	noDeny bool
	newFn  func(limit int, window time.Duration) allower
}

func mustNew[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// clockOnly is the monotonic clock read alone, to show how much of the floor
// is the clock.
type clockOnly struct{ base time.Time }

func (c *clockOnly) Allow() bool { return time.Since(c.base) >= 0 }

type jujuBucket struct{ b *ratelimit.Bucket }

func (j jujuBucket) Allow() bool { return j.b.TakeAvailable(1) == 1 }

type uberPacer struct{ l uber.Limiter }

func (u uberPacer) Allow() bool { u.l.Take(); return true }

func perSecond(limit int, window time.Duration) float64 {
	return float64(limit) / window.Seconds()
}

// impls lists ours, the references and the peers, in the order the tables
// show them.
func impls() []impl {
	return []impl{
		{name: "floor", newFn: func(int, time.Duration) allower { return benchfloor.New() }},
		{name: "clock", newFn: func(int, time.Duration) allower { return &clockOnly{base: time.Now()} }},
		{name: "ring", newFn: func(l int, w time.Duration) allower { return mustNew(ring.New(l, w)) }},
		{name: "window", newFn: func(l int, w time.Duration) allower { return mustNew(window.New(l, w)) }},
		{name: "multi", newFn: func(l int, w time.Duration) allower {
			return mustNew(multi.New(multi.Rule{Limit: l, Window: w}))
		}},
		{name: "multiapprox", newFn: func(l int, w time.Duration) allower {
			return mustNew(multi.NewApprox(multi.Rule{Limit: l, Window: w}))
		}},
		{name: "mutexlog", newFn: func(l int, w time.Duration) allower { return refimpl.NewMutexLog(l, w) }},
		{name: "mutexwindow", newFn: func(l int, w time.Duration) allower { return refimpl.NewMutexWindow(l, w) }},
		{name: "xrate", newFn: func(l int, w time.Duration) allower {
			return rate.NewLimiter(rate.Limit(perSecond(l, w)), l)
		}},
		{name: "juju", newFn: func(l int, w time.Duration) allower {
			return jujuBucket{ratelimit.NewBucketWithRate(perSecond(l, w), int64(l))}
		}},
		{name: "russellluo", newFn: func(l int, w time.Duration) allower {
			lim, _ := swindow.NewLimiter(w, int64(l), func() (swindow.Window, swindow.StopFunc) {
				return swindow.NewLocalWindow()
			})
			return lim
		}},
		{name: "uber", noDeny: true, newFn: func(l int, w time.Duration) allower {
			return uberPacer{uber.New(l, uber.Per(w))}
		}},
	}
}

// fixture returns a limiter on the given path, checked before it is
// measured: on the admit path its first calls are admitted, on the deny path
// the limit is used up and the next call is refused.
func fixture(im impl, path string) (allower, error) {
	switch path {
	case "admit":
		l := im.newFn(admitLimit, admitWindow)
		for i := range 10 {
			if !l.Allow() {
				return nil, fmt.Errorf("%s: admit fixture refused call %d", im.name, i)
			}
		}
		return l, nil
	case "deny":
		l := im.newFn(denyLimit, denyWindow)
		if im.name == "floor" || im.name == "clock" {
			return l, nil // the floor has no decision to check
		}
		l.Allow() // use up the limit
		for i := range 3 {
			if l.Allow() {
				return nil, fmt.Errorf("%s: deny fixture admitted call %d", im.name, i)
			}
		}
		return l, nil
	}
	return nil, fmt.Errorf("unknown path %q", path)
}
