package accuracy

import (
	"time"

	"github.com/slidelimit/slidelimit/bench/refimpl"
	"github.com/slidelimit/slidelimit/ring"
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
			Name: "mutex window (bench ref)", API: "(*refimpl.MutexWindow).AllowN(t, n)", Clock: Injected, Formula: true,
			Algo: "two counters, exact integer formula, under a sync.Mutex",
			New: func(time.Time) (Decider, func()) {
				return injected(refimpl.NewMutexWindow(Limit, Window)), noop
			},
		},
	}
}
