package accuracy

import (
	"time"

	"github.com/slidelimit/slidelimit/bench/refimpl"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// allowNer is the decision method every limiter of ours (and the references)
// shares.
type allowNer interface {
	AllowN(now time.Time, n int) bool
}

func injected(l allowNer) Decider {
	return decideFunc(func(p, r time.Time, n int) (bool, time.Time) { return l.AllowN(p, n), r })
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Ours returns our limiters configured for Limit per Window.
func Ours() []Contender {
	return []Contender{
		{
			Name: "slidelimit ring", API: "(*ring.Limiter).AllowN(t, n)", Clock: Injected, Exact: true,
			Algo: "exact sliding log: at most 100 in every window (t-1s, t]",
			New: func(time.Time) (Decider, func()) {
				return injected(must(ring.New(Limit, Window))), noop
			},
		},
		{
			Name: "slidelimit multi (1 rule)", API: "(*multi.Limiter).AllowN(t, n)", Clock: Injected, Exact: true,
			Algo: "multi's exact flavour with the single rule 100 per 1 s",
			New: func(time.Time) (Decider, func()) {
				return injected(must(multi.New(multi.Rule{Limit: Limit, Window: Window}))), noop
			},
		},
		{
			Name: "slidelimit window", API: "(*window.Limiter).AllowN(t, n)", Clock: Injected,
			Model: Anchored, Must: true,
			Algo: "two counters, exact integer formula; windows anchored at the first admission after idleness",
			New: func(time.Time) (Decider, func()) {
				return injected(must(window.New(Limit, Window))), noop
			},
		},
		{
			Name: "slidelimit multi approx (1 rule)", API: "(*multi.Approx).AllowN(t, n)", Clock: Injected,
			Model: Anchored, Must: true,
			Algo: "multi's approximate flavour with the single rule 100 per 1 s",
			New: func(time.Time) (Decider, func()) {
				return injected(must(multi.NewApprox(multi.Rule{Limit: Limit, Window: Window}))), noop
			},
		},
	}
}

// References returns the mutex-guarded references of package refimpl.
func References() []Contender {
	return []Contender{
		{
			Name: "mutex log (bench ref)", API: "(*refimpl.MutexLog).AllowN(t, n)", Clock: Injected, Exact: true,
			Algo: "exact sliding log in a ring under a sync.Mutex",
			New: func(time.Time) (Decider, func()) {
				return injected(refimpl.NewMutexLog(Limit, Window)), noop
			},
		},
		{
			Name: "mutex window (bench ref)", API: "(*refimpl.MutexWindow).AllowN(t, n)", Clock: Injected,
			Model: Anchored, Must: true,
			Algo: "two counters, exact integer formula, window/'s layout, under a sync.Mutex",
			New: func(time.Time) (Decider, func()) {
				return injected(refimpl.NewMutexWindow(Limit, Window)), noop
			},
		},
	}
}
