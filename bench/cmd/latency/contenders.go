package main

import (
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/slidelimit/slidelimit/bench/refimpl"
	"github.com/slidelimit/slidelimit/bench/stores"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// contender is one limiter under measurement. setup returns, for g
// goroutines, a function giving each worker its call.
type contender struct {
	name, kind string
	twin       string // the mutex-guarded twin of a lock-free limiter
	setup      func(g int) (func(worker int) func() bool, error)
}

// The admit-path configuration: far above what two cores can ask for, so
// nearly every call is admitted. The second rule of the multi-rule
// contenders is also far above it.
const (
	limit   = 1024
	per     = time.Microsecond
	limit2  = 1 << 14
	window2 = 100 * time.Microsecond
)

type allower interface{ Allow() bool }

func shared(newFn func() (allower, error)) func(int) (func(int) func() bool, error) {
	return func(int) (func(int) func() bool, error) {
		l, err := newFn()
		if err != nil {
			return nil, err
		}
		return func(int) func() bool { return l.Allow }, nil
	}
}

func wrap[T allower](v T, err error) (allower, error) { return v, err }

func singles() []contender {
	rules := []multi.Rule{{Limit: limit, Window: per}, {Limit: limit2, Window: window2}}
	refRules := []refimpl.Rule{{Limit: limit, Window: per}, {Limit: limit2, Window: window2}}
	return []contender{
		{name: "none", kind: "single", setup: func(int) (func(int) func() bool, error) {
			return func(int) func() bool { return func() bool { return true } }, nil
		}},
		{name: "ring", kind: "single", twin: "mutexlog", setup: shared(func() (allower, error) { return wrap(ring.New(limit, per)) })},
		{name: "mutexlog", kind: "single", setup: shared(func() (allower, error) { return refimpl.NewMutexLog(limit, per), nil })},
		{name: "window", kind: "single", twin: "mutexwindow", setup: shared(func() (allower, error) { return wrap(window.New(limit, per)) })},
		{name: "mutexwindow", kind: "single", setup: shared(func() (allower, error) { return refimpl.NewMutexWindow(limit, per), nil })},
		{name: "multi", kind: "single", twin: "mutexmulti", setup: shared(func() (allower, error) { return wrap(multi.New(rules...)) })},
		{name: "mutexmulti", kind: "single", setup: shared(func() (allower, error) { return refimpl.NewMutexMultiLog(refRules...), nil })},
		{name: "multiapprox", kind: "single", twin: "mutexmultiapprox", setup: shared(func() (allower, error) { return wrap(multi.NewApprox(rules...)) })},
		{name: "mutexmultiapprox", kind: "single", setup: shared(func() (allower, error) { return refimpl.NewMutexMultiWindow(refRules...), nil })},
		{name: "xrate", kind: "single", setup: shared(func() (allower, error) {
			return rate.NewLimiter(rate.Limit(float64(limit)/per.Seconds()), limit), nil
		})},
	}
}

// keyedContenders are the keyed stores at n keys, every key present, called
// in uniformly random order: each worker starts at its own offset in one
// pregenerated sequence of 2^21 keys. A store is built and checked once and
// kept for every later run.
func keyedContenders(n int) []contender {
	var seq []string
	var keys []string
	var cs []contender
	for _, im := range stores.All() {
		var s stores.Store
		cs = append(cs, contender{name: im.Name, kind: "keyed", setup: func(g int) (func(int) func() bool, error) {
			if keys == nil {
				ks, err := stores.ClientKeys(n)
				if err != nil {
					return nil, err
				}
				idx, err := stores.Sequence("random", n, 1<<21)
				if err != nil {
					return nil, err
				}
				seq = make([]string, len(idx))
				for i, k := range idx {
					seq[i] = ks[k]
				}
				keys = ks
			}
			if s == nil {
				st := im.New(100, time.Second, n)
				for i, k := range keys {
					if !st.Allow(k) {
						return nil, fmt.Errorf("first call for key %d (%s) refused", i, k)
					}
				}
				if kk, ok := st.(interface{ Len() int }); ok && kk.Len() != n {
					return nil, fmt.Errorf("store holds %d keys, want %d", kk.Len(), n)
				}
				s = st
			}
			return func(w int) func() bool {
				i := stores.Start(w, g, len(seq))
				return func() bool {
					ok := s.Allow(seq[i])
					if i++; i == len(seq) {
						i = 0
					}
					return ok
				}
			}, nil
		}})
	}
	return cs
}
