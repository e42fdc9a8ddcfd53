package keyed_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/conformance"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// statusStore is a keyed.Limiter of some limiter type, as the status tests
// drive it.
type statusStore interface {
	Decide(key int, now time.Time, n int) (bool, error)
	DecideStatus(key int, now time.Time, n int) (keyed.Status, error)
	TokensAt(key int, now time.Time) int
	ReadyAt(key int, now time.Time, n int) (time.Time, bool)
	Sweep(now time.Time) int
}

// queriesOnly is a per-key limiter without a DecideStatus method: keyed asks
// its status with queries after the decision.
type queriesOnly struct{ l *multi.Limiter }

func (q queriesOnly) AllowN(now time.Time, n int) bool               { return q.l.AllowN(now, n) }
func (q queriesOnly) TokensAt(now time.Time) int                     { return q.l.TokensAt(now) }
func (q queriesOnly) ReadyAt(now time.Time, n int) (time.Time, bool) { return q.l.ReadyAt(now, n) }
func (q queriesOnly) IdleAt(now time.Time) bool                      { return q.l.IdleAt(now) }

// TestLimiterDecideStatusMatchesQueries feeds two Limiters the same random
// calls, one at a time: one decides with DecideStatus, the other with Decide
// and is then asked TokensAt and ReadyAt at the same instant. Over rings,
// windows and both flavours of multi (which report their status with the
// decision) and a limiter that does not (whose status the Limiter asks for
// after the decision); with more keys than MaxKeys, sweeps, stale instants,
// idle gaps and costs of every kind. Every field and every error must be
// what the queries answer.
func TestLimiterDecideStatusMatchesQueries(t *testing.T) {
	const limit, w = 4, time.Second
	for _, tc := range []struct {
		name string
		mk   func() (statusStore, error)
	}{
		{"ring", func() (statusStore, error) {
			return keyed.New[int](func() (*ring.Limiter, error) { return ring.New(limit, w) }, keyed.MaxKeys(4))
		}},
		{"window", func() (statusStore, error) {
			return keyed.New[int](func() (*window.Limiter, error) { return window.New(limit, w) }, keyed.MaxKeys(4))
		}},
		{"multi", func() (statusStore, error) {
			return keyed.New[int](func() (*multi.Limiter, error) {
				return multi.New(multi.Rule{Limit: limit, Window: w}, multi.Rule{Limit: 3 * limit, Window: 10 * w})
			}, keyed.MaxKeys(4))
		}},
		{"approx", func() (statusStore, error) {
			return keyed.New[int](func() (*multi.Approx, error) {
				return multi.NewApprox(multi.Rule{Limit: limit, Window: w}, multi.Rule{Limit: 3 * limit, Window: 10 * w})
			}, keyed.MaxKeys(4))
		}},
		{"queries only", func() (statusStore, error) {
			return keyed.New[int](func() (queriesOnly, error) {
				l, err := multi.New(multi.Rule{Limit: limit, Window: w}, multi.Rule{Limit: 3 * limit, Window: 10 * w})
				return queriesOnly{l}, err
			}, keyed.MaxKeys(4))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Automatic sweeps (when full) are paced by the real time a
			// sweep took, which would differ between the two stores and
			// move their floors apart: pace both alike.
			defer keyed.FreezeSweepClock()()
			seed := rand.Uint64()
			r := rand.New(rand.NewPCG(seed, 3))
			a, err := tc.mk()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := tc.mk()
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			reasons := map[string]int{}
			for i := range 20_000 {
				switch {
				case r.IntN(300) == 0:
					now = now.Add(time.Duration(r.Int64N(int64(30 * w)))) // idle gap
				default:
					now = now.Add(time.Duration(r.Int64N(int64(w / (2 * limit)))))
				}
				if r.IntN(100) == 0 {
					if ga, gb := a.Sweep(now), b.Sweep(now); ga != gb {
						t.Fatalf("seed %d, step %d: Sweep = %d and %d", seed, i, ga, gb)
					}
				}
				at := now
				if r.IntN(10) == 0 {
					at = now.Add(-time.Duration(r.Int64N(int64(2 * w)))) // stale, and sometimes before the floor
				}
				key := r.IntN(7)
				n := 1 + r.IntN(limit)
				switch r.IntN(20) {
				case 0:
					n = 0
				case 1:
					n = -1
				case 2:
					n = limit + 1
				}
				var want keyed.Status
				var wantErr error
				if n < 1 || n > limit {
					// Nothing decided: the key as the queries see it.
					want.Admitted, wantErr = b.Decide(key, at, n)
					want.Remaining = b.TokensAt(key, at)
					want.ResetAt, _ = b.ReadyAt(key, at, limit)
				} else {
					want.Admitted, wantErr = b.Decide(key, at, n)
					if wantErr == nil {
						if !want.Admitted {
							want.RetryAt, _ = b.ReadyAt(key, at, n)
						}
						want.Remaining = b.TokensAt(key, at)
						want.ResetAt, _ = b.ReadyAt(key, at, limit)
					}
				}
				got, gotErr := a.DecideStatus(key, at, n)
				// Each Limiter's instants carry its own limiters'
				// monotonic readings: compare the wall clock alone.
				if !errors.Is(gotErr, wantErr) || got.Admitted != want.Admitted || got.Remaining != want.Remaining ||
					!got.RetryAt.Round(0).Equal(want.RetryAt.Round(0)) || !got.ResetAt.Round(0).Equal(want.ResetAt.Round(0)) {
					t.Fatalf("seed %d, step %d: DecideStatus(%d, +%v, %d) = %+v, %v; the queries say %+v, %v",
						seed, i, key, at.Sub(now), n, got, gotErr, want, wantErr)
				}
				switch {
				case errors.Is(gotErr, keyed.ErrFull):
					reasons["full"]++
				case gotErr != nil:
					reasons["never"]++
				case got.Admitted:
					reasons["admitted"]++
				default:
					reasons["refused"]++
				}
			}
			for _, why := range []string{"full", "never", "admitted", "refused"} {
				if reasons[why] == 0 {
					t.Errorf("no decision %s: the run did not exercise it (%v)", why, reasons)
				}
			}
		})
	}
}

// statusDecider is a keyed store with DecideStatus: a Limiter or a Window.
type statusDecider interface {
	outsideStore
	DecideStatus(key int, now time.Time, n int) (keyed.Status, error)
}

// statusChecked is a store whose admissions go through DecideStatus, each
// answer checked against what its caller knows (conformance.StatusProblem),
// and never admitted with an error. The first inconsistency is kept in bad.
type statusChecked struct {
	statusDecider
	limit int
	bad   atomic.Pointer[string]
}

func (l *statusChecked) AllowN(key int, now time.Time, n int) bool {
	s, err := l.DecideStatus(key, now, n)
	var why string
	switch {
	case err != nil:
		if s.Admitted {
			why = "admitted with an error"
		}
	default:
		why = conformance.StatusProblem(l.limit, n, now, s.Admitted, s.Remaining, s.RetryAt, s.ResetAt)
	}
	if why != "" {
		msg := fmt.Sprintf("DecideStatus(%d, %v, %d) = %+v, %v: %s", key, now, n, s, err, why)
		l.bad.CompareAndSwap(nil, &msg)
	}
	return s.Admitted
}

// runOutsideStatus runs runOutsideConfigs on stores made by mk with every
// admission made by DecideStatus (statusChecked), and fails on the first
// inconsistent answer.
func runOutsideStatus(t *testing.T, mk func(limit int, w time.Duration, opts ...keyed.Option) (statusDecider, error), bound func(limit int) int) {
	t.Helper()
	var mu sync.Mutex
	var made []*statusChecked
	runOutsideConfigs(t, func(limit int, win time.Duration, opts ...keyed.Option) (outsideStore, error) {
		d, err := mk(limit, win, opts...)
		if err != nil {
			return nil, err
		}
		s := &statusChecked{statusDecider: d, limit: limit}
		mu.Lock()
		made = append(made, s)
		mu.Unlock()
		return s, nil
	}, bound)
	if len(made) == 0 {
		t.Fatal("the check made no store")
	}
	for _, l := range made {
		if msg := l.bad.Load(); msg != nil {
			t.Fatal(*msg)
		}
	}
}

// TestOutsideKeyedRingStatus is TestOutsideKeyedRing with every admission
// made by DecideStatus (statusChecked): the same exact bound per key, with
// sweeps and a small MaxKeys, and every answer consistent with itself.
func TestOutsideKeyedRingStatus(t *testing.T) {
	runOutsideStatus(t, func(limit int, win time.Duration, opts ...keyed.Option) (statusDecider, error) {
		return keyed.New[int](func() (*ring.Limiter, error) { return ring.New(limit, win) }, opts...)
	}, func(limit int) int { return limit })
}

// rulesDecider is a multi limiter as TestLimiterDecideRules drives it.
type rulesDecider interface {
	keyed.PerKey
	DecideRules(now time.Time, n int, rules []keyed.Status) (keyed.Status, []keyed.Status)
}

// TestLimiterDecideRules: over multi limiters (both flavours), DecideRules
// answers for each key, field by field and rule by rule, what a multi
// limiter of that key alone answers to the same calls (weights, costs out of
// range, absent keys among them, stale instants, idle gaps; no sweep, so no
// key is evicted); its whole Status is DecideStatus's. Over a limiter without DecideRules (a
// ring) it appends nothing. With room in the slice it allocates nothing for
// a present key.
func TestLimiterDecideRules(t *testing.T) {
	rules := []multi.Rule{{Limit: 4, Window: time.Second}, {Limit: 12, Window: 10 * time.Second}}
	for _, flavour := range []string{"exact", "approx"} {
		t.Run(flavour, func(t *testing.T) {
			mk := func() (rulesDecider, error) {
				if flavour == "exact" {
					return multi.New(rules...)
				}
				return multi.NewApprox(rules...)
			}
			k, err := keyed.New[int](mk)
			if err != nil {
				t.Fatal(err)
			}
			s, err := keyed.New[int](mk) // DecideStatus
			if err != nil {
				t.Fatal(err)
			}
			alone := map[int]rulesDecider{}
			seed := rand.Uint64()
			r := rand.New(rand.NewPCG(seed, 17))
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var got, want []keyed.Status
			for step := range 10_000 {
				if r.IntN(300) == 0 {
					now = now.Add(time.Duration(r.Int64N(int64(20 * time.Second))))
				} else {
					now = now.Add(time.Duration(r.Int64N(int64(50 * time.Millisecond))))
				}
				at := now
				if r.IntN(10) == 0 {
					at = now.Add(-time.Duration(r.Int64N(int64(time.Second))))
				}
				key, n := r.IntN(6), 1+r.IntN(3)
				switch r.IntN(30) {
				case 0:
					n = 5 // above the smallest limit: no decision
				case 1:
					n = 0
				case 2:
					n = -1
				}
				var whole keyed.Status
				whole, got, err = k.DecideRules(key, at, n, got[:0])
				st, serr := s.DecideStatus(key, at, n)
				if (err == nil) != (serr == nil) || !sameStatus(whole, st) {
					t.Fatalf("seed %d step %d: DecideRules(%d, %v, %d) = %+v, %v; DecideStatus says %+v, %v", seed, step, key, at, n, whole, err, st, serr)
				}
				a, ok := alone[key]
				if !ok {
					if a, err = mk(); err != nil {
						t.Fatal(err)
					}
					alone[key] = a
				}
				var w keyed.Status
				w, want = a.DecideRules(at, n, want[:0])
				if !sameStatus(whole, w) || len(got) != len(want) {
					t.Fatalf("seed %d step %d: DecideRules(%d, %v, %d) = %+v, %+v; the key's limiter alone says %+v, %+v", seed, step, key, at, n, whole, got, w, want)
				}
				for i := range got {
					if !sameStatus(got[i], want[i]) {
						t.Fatalf("seed %d step %d: DecideRules(%d, %v, %d): rule %d's status %+v; the key's limiter alone says %+v", seed, step, key, at, n, i, got[i], want[i])
					}
				}
			}
			buf := make([]keyed.Status, 0, len(rules))
			if allocs := testing.AllocsPerRun(1000, func() {
				now = now.Add(time.Millisecond)
				_, buf, _ = k.DecideRules(1, now, 1, buf[:0])
			}); allocs != 0 {
				t.Errorf("%v allocs per DecideRules on a present key, want 0", allocs)
			}
		})
	}
	rk, err := keyed.New[int](func() (*ring.Limiter, error) { return ring.New(3, time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	if s, each, err := rk.DecideRules(1, time.Now(), 1, nil); err != nil || !s.Admitted || len(each) != 0 {
		t.Errorf("over rings: DecideRules = %+v, %+v, %v; want an admission and nothing appended", s, each, err)
	}
}

// TestOutsideLimiterDecideRules: goroutines decide with DecideRules on one
// keyed.Limiter over multi limiters (both flavours), four keys, a shared
// increasing clock (weighted calls, some stale, some out of range), at
// GOMAXPROCS 2 and 8: every answer must agree with itself and its decision
// (conformance.RunOutsideRules and RulesProblem), although other goroutines
// admit on the same keys at the same time.
func TestOutsideLimiterDecideRules(t *testing.T) {
	rules := []multi.Rule{{Limit: 5, Window: 200}, {Limit: 40, Window: 20_000}}
	for _, flavour := range []string{"exact", "approx"} {
		t.Run(flavour, func(t *testing.T) {
			conformance.RunOutsideRules(t, []int{5, 40}, 4, 10_000, func() conformance.RulesDecider {
				k, err := keyed.New[int](func() (rulesDecider, error) {
					if flavour == "exact" {
						return multi.New(rules...)
					}
					return multi.NewApprox(rules...)
				})
				if err != nil {
					t.Fatal(err)
				}
				return k.DecideRules
			}, func(err error) bool { return errors.Is(err, keyed.ErrNeverReady) })
		})
	}
}

// TestFullQueriesAgree: on a full Limiter of multi limiters, an absent key
// that no room can be made for is answered alike by every method that
// decides nothing (n = 0, n < 0, n above the limit): no room (TokensAt 0,
// ReadyAt not ok, Status.Remaining 0, no ResetAt) and no rule appended, as
// docs/keyed.md's full-store policy says; never a new limiter's answer, which
// would promise room the key cannot get.
func TestFullQueriesAgree(t *testing.T) {
	rules := []multi.Rule{{Limit: 4, Window: time.Second}, {Limit: 12, Window: 10 * time.Second}}
	k, err := keyed.New[string](func() (rulesDecider, error) { return multi.New(rules...) }, keyed.MaxKeys(1))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if !k.AllowN("a", now, 1) {
		t.Fatal("first key refused")
	}
	if got := k.TokensAt("b", now); got != 0 {
		t.Fatalf("TokensAt(absent key, full) = %d, want 0", got)
	}
	if _, ok := k.ReadyAt("b", now, 1); ok {
		t.Fatal("ReadyAt(absent key, full) is ok, want false")
	}
	for _, n := range []int{0, -1, 5} {
		s, appended, err := k.DecideRules("b", now, n, nil)
		if n == 0 && err != nil || n != 0 && !errors.Is(err, keyed.ErrNeverReady) {
			t.Errorf("DecideRules(absent key, full, n=%d): error %v", n, err)
		}
		if s.Remaining != 0 || !s.ResetAt.IsZero() || !s.RetryAt.IsZero() || s.Admitted != (n == 0) {
			t.Errorf("DecideRules(absent key, full, n=%d) = %+v, want no room, no instants, admitted only for n = 0", n, s)
		}
		if len(appended) != 0 {
			t.Errorf("DecideRules(absent key, full, n=%d) appended %+v, want nothing", n, appended)
		}
		st, _ := k.DecideStatus("b", now, n)
		if !sameStatus(st, s) {
			t.Errorf("n=%d: DecideStatus = %+v, DecideRules %+v", n, st, s)
		}
	}
	if got := k.Len(); got != 1 {
		t.Errorf("Len() = %d, want 1: a query created a key", got)
	}
}
