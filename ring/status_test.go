package ring

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/internal/conformance"
)

// TestDecideStatusMatchesQueries feeds two limiters the same random calls, one
// at a time: one decides with DecideStatus, the other with AllowN and is then
// asked TokensAt and ReadyAt at the same instant. Costs of every kind (zero,
// negative, above the limit), stale instants, idle gaps and instants past the
// last one the log tells apart. Every field must be what the queries answer:
// with nothing in between, the decision's state and the queries' are the
// same.
func TestDecideStatusMatchesQueries(t *testing.T) {
	for _, tc := range []struct {
		limit int
		w     time.Duration
	}{
		{1, time.Second},
		{5, time.Second},
		{7, 10 * time.Millisecond},
		{100, time.Hour},
	} {
		t.Run(fmt.Sprintf("limit=%d,window=%v", tc.limit, tc.w), func(t *testing.T) {
			seed := rand.Uint64()
			r := rand.New(rand.NewPCG(seed, 11))
			a, err := New(tc.limit, tc.w)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := New(tc.limit, tc.w)
			now := t0
			step := max(int64(tc.w)/int64(4*tc.limit), 1)
			for i := range 20_000 {
				switch {
				case i == 18_000:
					// Past the last instant the log tells apart: time
					// stops for the limiters from here on.
					now = now.Add(80 * 365 * 24 * time.Hour)
				case r.IntN(200) == 0:
					now = now.Add(time.Duration(r.Int64N(int64(3 * tc.w)))) // an idle gap
				default:
					now = now.Add(time.Duration(r.Int64N(step)))
				}
				at := now
				if r.IntN(10) == 0 {
					at = now.Add(-time.Duration(r.Int64N(int64(2 * tc.w)))) // stale
				}
				n := 1 + r.IntN(min(tc.limit, 4))
				switch r.IntN(20) {
				case 0:
					n = 0
				case 1:
					n = -1 - r.IntN(3)
				case 2:
					n = tc.limit + 1 + r.IntN(3)
				}
				wantRetry, ready := b.ReadyAt(at, n) // a refusal records nothing
				want := slidelimit.Status{Admitted: b.AllowN(at, n), Remaining: b.TokensAt(at)}
				if !want.Admitted && n != 0 && ready {
					want.RetryAt = wantRetry
				}
				want.ResetAt, _ = b.ReadyAt(at, tc.limit)
				got := a.DecideStatus(at, n)
				// Each limiter's instants carry the monotonic reading of
				// its own New: compare the wall clock alone.
				if got.Admitted != want.Admitted || got.Remaining != want.Remaining ||
					!got.RetryAt.Round(0).Equal(want.RetryAt.Round(0)) || !got.ResetAt.Round(0).Equal(want.ResetAt.Round(0)) {
					t.Fatalf("seed %d, call %d: DecideStatus(t0+%v, %d) = %+v, the queries say %+v", seed, i, at.Sub(t0), n, got, want)
				}
			}
		})
	}
}

// TestDecideStatusZeroValue: the zero Limiter admits only n == 0, with nothing
// remaining of its limit of 0 (so the whole of it is there now).
func TestDecideStatusZeroValue(t *testing.T) {
	var l Limiter
	for _, n := range []int{-1, 0, 1, 2} {
		want := slidelimit.Status{Admitted: n == 0, ResetAt: t0}
		if got := l.DecideStatus(t0, n); got != want {
			t.Errorf("DecideStatus(t0, %d) = %+v, want %+v", n, got, want)
		}
	}
}

// statusLimiter is a Limiter whose admissions go through DecideStatus, each
// answer checked against what its caller knows (conformance.StatusProblem).
// The first inconsistency is kept in bad.
type statusLimiter struct {
	*Limiter
	bad atomic.Pointer[string]
}

func (l *statusLimiter) AllowN(now time.Time, n int) bool {
	s := l.DecideStatus(now, n)
	if why := conformance.StatusProblem(l.Limit(), n, now, s.Admitted, s.Remaining, s.RetryAt, s.ResetAt); why != "" {
		msg := fmt.Sprintf("DecideStatus(%v, %d) = %+v: %s", now, n, s, why)
		l.bad.CompareAndSwap(nil, &msg)
	}
	return s.Admitted
}

// TestOutsideStatus runs the shared outside-view concurrency check with every
// admission made by DecideStatus: the exact bound holds, and every answer is
// consistent with itself although other goroutines admit at the same time.
func TestOutsideStatus(t *testing.T) {
	var mu sync.Mutex
	var made []*statusLimiter
	conformance.RunOutside(t, conformanceOptions(func(limit int, window time.Duration) (conformance.Limiter, error) {
		l, err := New(limit, window)
		if err != nil {
			return nil, err
		}
		s := &statusLimiter{Limiter: l}
		mu.Lock()
		made = append(made, s)
		mu.Unlock()
		return s, nil
	}, false))
	if len(made) == 0 {
		t.Fatal("the check made no limiter")
	}
	for _, l := range made {
		if msg := l.bad.Load(); msg != nil {
			t.Error(*msg)
		}
	}
}

// TestOutsideStatusOneInstant: goroutines decide units at one shared instant
// per round, on a limiter that starts each round empty. The k-th admission
// (in the log's order, which the callers do not see) leaves exactly limit-k;
// a Status read from the live state instead can only say less. So, seen from
// outside, the i-th largest Remaining among the admissions is at most
// limit-i, and every refusal says 0 remaining and a retry when the instant's
// admissions leave the window.
func TestOutsideStatusOneInstant(t *testing.T) {
	const (
		limit      = 64
		goroutines = 8
		calls      = 12 // 96 per round, 64 admitted
		rounds     = 200
		w          = time.Second
	)
	l, err := New(limit, w)
	if err != nil {
		t.Fatal(err)
	}
	exact := 0
	for r := range rounds {
		at := t0.Add(time.Duration(r) * 3 * w)
		var mu sync.Mutex
		var rems []int
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range calls {
					s := l.DecideStatus(at, 1)
					if !s.Admitted {
						if s.Remaining != 0 || !s.RetryAt.Equal(at.Add(w)) || !s.ResetAt.Equal(at.Add(w)) {
							t.Errorf("round %d: a refusal at the full instant says %+v", r, s)
						}
						continue
					}
					mu.Lock()
					rems = append(rems, s.Remaining)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(rems) != limit {
			t.Fatalf("round %d: %d admitted, want %d", r, len(rems), limit)
		}
		slices.SortFunc(rems, func(a, b int) int { return b - a })
		for i, rem := range rems {
			if rem > limit-1-i {
				t.Fatalf("round %d: the %d-th largest Remaining is %d, above %d: %v", r, i+1, rem, limit-1-i, rems)
			}
			if rem == limit-1-i {
				exact++
			}
		}
	}
	t.Logf("%d of %d admissions reported exactly what they left", exact, rounds*limit)
}

func TestDecideStatusZeroAllocs(t *testing.T) {
	l, _ := New(1000, time.Millisecond)
	now := t0
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Microsecond)
		l.DecideStatus(now, 1)
		l.DecideStatus(now, 2000)
		l.DecideStatus(now, 0)
	})
	if allocs != 0 {
		t.Errorf("%v allocs per run, want 0", allocs)
	}
}
