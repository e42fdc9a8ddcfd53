package keyed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/ring"
)

// This file tests a keyed Limiter over ring from the outside: the checks use
// only the instants the callers passed and the answers they got.
//
// Callers read their instant from a shared increasing clock (an atomic
// counter) just before the call. A call can reach its key's limiter after a
// call that read a later instant, or after a sweep at a later instant; it is
// then decided at that later instant (time never goes backwards). So the
// instant an admission takes effect is only known to lie in [lo, hi]: lo the
// instant the caller passed, hi the shared clock read just after the call
// returned. Safety is checked on what is certain: per key, the admissions
// whose whole interval lies in one window (u-W, u] total at most the limit,
// for every u.
//
// The calls have costs from 1 to the limit; the clock sometimes jumps by more
// than a window (an idle gap, after which sweeps evict keys); sweeps run
// concurrently at instants read from the same clock; another goroutine asks
// TokensAt and ReadyAt at instants an hour away and makes calls that are
// refused. None of that may let more than the limit through for any key.

// outsideCall is one admission seen from the outside.
type outsideCall struct {
	key    int
	lo, hi int64 // offsets from the run's base instant
	n      int
}

// outsideStore is what the outside test drives: a Limiter or a Window.
type outsideStore interface {
	AllowN(key int, now time.Time, n int) bool
	Decide(key int, now time.Time, n int) (bool, error)
	TokensAt(key int, now time.Time) int
	ReadyAt(key int, now time.Time, n int) (time.Time, bool)
	Sweep(now time.Time) int
}

// newOutsideRing makes the store of TestOutsideKeyedRing.
func newOutsideRing(limit int, w time.Duration, opts ...keyed.Option) (outsideStore, error) {
	return keyed.New[int](func() (*ring.Limiter, error) { return ring.New(limit, w) }, opts...)
}

type outsideConfig struct {
	// mk makes the store (newOutsideRing when nil), and bound is the most
	// cost it may admit for a key in any window (limit when 0).
	mk          func(limit int, w time.Duration, opts ...keyed.Option) (outsideStore, error)
	bound       int
	keys, limit int
	window      int64 // nanoseconds
	maxKeys     int   // 0: the default
	goroutines  int
	ops         int // calls per goroutine
}

// runOutsideKeyed drives one keyed Limiter as the file comment says and
// returns its first violation, or "".
func runOutsideKeyed(t *testing.T, cfg outsideConfig, seed uint64) string {
	t.Helper()
	base := time.Now()
	at := func(off int64) time.Time { return base.Add(time.Duration(off)) }
	var opts []keyed.Option
	if cfg.maxKeys > 0 {
		opts = append(opts, keyed.MaxKeys(cfg.maxKeys))
	}
	mk := cfg.mk
	if mk == nil {
		mk = newOutsideRing
	}
	k, err := mk(cfg.limit, time.Duration(cfg.window), opts...)
	if err != nil {
		t.Fatal(err)
	}
	var clk atomic.Int64
	clk.Store(int64(time.Hour)) // room for "an hour ago" after base
	// The clock advances by about twice each key's sustainable rate, so that
	// about half the calls fit.
	maxStep := max(1, 2*2*cfg.window/int64(cfg.limit*cfg.keys))

	var stop atomic.Bool
	var qwg sync.WaitGroup
	qwg.Add(1)
	go func() { // queries and refused calls at other instants
		defer qwg.Done()
		r := rand.New(rand.NewPCG(seed, 999))
		for i := 0; !stop.Load(); i++ {
			off := clk.Load() + int64(time.Hour)*(int64(r.IntN(3))-1)
			key := r.IntN(cfg.keys)
			switch i % 4 {
			case 0:
				k.TokensAt(key, at(off))
			case 1:
				k.ReadyAt(key, at(off), 1+r.IntN(cfg.limit))
			case 2:
				k.AllowN(key, at(off), cfg.limit+1) // always refused
			case 3:
				_, _ = k.Decide(key, at(off), -1) // always refused
			}
			if i%32 == 0 {
				runtime.Gosched()
			}
		}
	}()

	recs := make([][]outsideCall, cfg.goroutines)
	var wg sync.WaitGroup
	for g := range cfg.goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for i := range cfg.ops {
				step := r.Int64N(maxStep + 1)
				if r.IntN(300) == 0 {
					step += cfg.window * int64(2+r.IntN(3)) // an idle gap
				}
				lo := clk.Add(step)
				if r.IntN(25) == 0 {
					k.Sweep(at(lo))
					continue
				}
				key, n := r.IntN(cfg.keys), 1+r.IntN(cfg.limit)
				if k.AllowN(key, at(lo), n) {
					recs[g] = append(recs[g], outsideCall{key: key, lo: lo, hi: clk.Load(), n: n})
				}
				if i%64 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	qwg.Wait()

	perKey := make([][]outsideCall, cfg.keys)
	admitted := 0
	for _, rs := range recs {
		for _, c := range rs {
			perKey[c.key] = append(perKey[c.key], c)
			admitted += c.n
		}
	}
	if admitted == 0 {
		return "nothing was admitted: the run checks nothing"
	}
	bound := cfg.limit
	if cfg.bound > 0 {
		bound = cfg.bound
	}
	for key, cs := range perKey {
		if v := overLimit(cs, bound, cfg.window); v != "" {
			return fmt.Sprintf("key %d: %s", key, v)
		}
	}
	return ""
}

// overLimit returns a description of a window (u-W, u] that certainly holds
// more than limit (the bound checked), or "". Only intervals with hi <= u and lo > u-W certainly
// lie in the window; the sum is largest at u = some hi.
func overLimit(cs []outsideCall, limit int, w int64) string {
	slices.SortFunc(cs, func(a, b outsideCall) int { return cmpInt64(a.hi, b.hi) })
	for j, c := range cs {
		u, sum := c.hi, 0
		var in []outsideCall
		for i := j; i >= 0 && cs[i].hi > u-w; i-- {
			if cs[i].lo > u-w {
				sum += cs[i].n
				in = append(in, cs[i])
			}
		}
		if sum > limit {
			return fmt.Sprintf("cost %d admitted in the window (%d, %d], limit %d: %v", sum, u-w, u, limit, in)
		}
	}
	return ""
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestOutsideKeyedRing: per key, never more than the limit in any window of
// the callers' own instants, with weighted calls, idle gaps, concurrent
// sweeps (and, with a small MaxKeys, automatic ones), and queries and
// refused calls at other instants.
func TestOutsideKeyedRing(t *testing.T) {
	runOutsideConfigs(t, newOutsideRing, func(limit int) int { return limit })
}

// runOutsideConfigs runs runOutsideKeyed three times on each of a few
// configurations, on the stores mk makes, whose bound for a limit is bound.
func runOutsideConfigs(t *testing.T, mk func(limit int, w time.Duration, opts ...keyed.Option) (outsideStore, error), bound func(limit int) int) {
	cfgs := []outsideConfig{
		{keys: 4, limit: 3, window: 400, goroutines: 8, ops: 3000},
		{keys: 6, limit: 2, window: 200, maxKeys: 4, goroutines: 8, ops: 3000},
		{keys: 2, limit: 8, window: 2000, goroutines: 6, ops: 3000},
	}
	for _, cfg := range cfgs {
		cfg.mk, cfg.bound = mk, bound(cfg.limit)
		t.Run(fmt.Sprintf("keys=%d,limit=%d,W=%dns,maxKeys=%d", cfg.keys, cfg.limit, cfg.window, cfg.maxKeys), func(t *testing.T) {
			for run := range 3 {
				seed := uint64(time.Now().UnixNano())
				if v := runOutsideKeyed(t, cfg, seed); v != "" {
					t.Fatalf("run %d (seed %d, GOMAXPROCS %d): %s", run, seed, runtime.GOMAXPROCS(0), v)
				}
			}
		})
	}
}

// TestOutsideWaitFullIsNotNever: WaitN on a key at its limit, while another
// goroutine deletes the key, fills the one-key store with another and gives
// the room back, fails with ErrDeadline (its deadline is before the key's
// ReadyAt), ErrFull, or admits; never ErrNeverReady, which says that n can
// never fit, when n fits every limiter of the store.
func TestOutsideWaitFullIsNotNever(t *testing.T) {
	for name, k := range map[string]interface {
		AllowN(key string, now time.Time, n int) bool
		Delete(key string)
		WaitN(ctx context.Context, key string, n int) error
	}{
		"Limiter": must(keyed.New[string](func() (*ring.Limiter, error) { return ring.New(1, time.Hour) }, keyed.MaxKeys(1))),
		"Window":  must(keyed.NewWindow[string](1, time.Hour, keyed.MaxKeys(1))),
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour/2)
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			for !stop.Load() {
				k.Delete("a")
				k.AllowN("b", time.Now(), 1)
				k.Delete("b")
				k.AllowN("a", time.Now(), 1)
			}
		})
		never := 0
		for range 20_000 {
			if err := k.WaitN(ctx, "a", 1); errors.Is(err, keyed.ErrNeverReady) {
				never++
			}
		}
		stop.Store(true)
		wg.Wait()
		cancel()
		if never != 0 {
			t.Errorf("%s: WaitN failed with ErrNeverReady %d times", name, never)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
