package window

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/conformance"
)

// TestDecideStatusMatchesQueries feeds two limiters the same random calls, one
// at a time: one decides with DecideStatus, the other with AllowN and is then
// asked TokensAt and ReadyAt at the same instant. Costs of every kind (zero,
// negative, above the limit), stale instants, idle gaps and instants past the
// last one a window tells apart. Every field must be what the queries answer:
// with nothing in between, the snapshot's answers and the queries' are the
// same.
func TestDecideStatusMatchesQueries(t *testing.T) {
	for _, tc := range []struct {
		limit int
		w     time.Duration
	}{
		{1, time.Second},
		{5, time.Second},
		{7, 10 * time.Millisecond},
		{MaxLimit, time.Hour},
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
					// Past the last instant a window tells apart: time
					// stops for the limiters from here on.
					now = now.Add(70 * 365 * 24 * time.Hour)
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
				want := Status{Admitted: b.AllowN(at, n), Remaining: b.TokensAt(at)}
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
		want := Status{Admitted: n == 0, ResetAt: t0}
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
// admission made by DecideStatus: the window's bound holds, and every answer
// is consistent with itself although other goroutines admit at the same time.
func TestOutsideStatus(t *testing.T) {
	var made []*statusLimiter // the check builds its limiters one subtest at a time
	conformance.RunOutside(t, conformanceOptions(func(limit int, window time.Duration) (conformance.Limiter, error) {
		l, err := New(limit, window)
		if err != nil {
			return nil, err
		}
		s := &statusLimiter{Limiter: l}
		made = append(made, s)
		return s, nil
	}, nil))
	if len(made) == 0 {
		t.Fatal("the check made no limiter")
	}
	for _, l := range made {
		if msg := l.bad.Load(); msg != nil {
			t.Error(*msg)
		}
	}
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
