package ring

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/internal/conformance"
)

// TestDecideStatusMatchesQueries: with one goroutine, every field of
// DecideStatus is what AllowN, TokensAt and ReadyAt answer around the same
// decision (conformance.StatusMatchesQueries), for several configurations.
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
			a, err := New(tc.limit, tc.w)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := New(tc.limit, tc.w)
			// Past the last instant the log tells apart (73 years).
			conformance.StatusMatchesQueries(t, a, b, t0, 80*365*24*time.Hour)
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

// TestOutsideStatus runs the shared outside-view concurrency check with every
// admission made by DecideStatus: the exact bound holds, and every answer is
// consistent with itself although other goroutines admit at the same time.
func TestOutsideStatus(t *testing.T) {
	conformance.RunOutsideStatus(t, conformanceOptions(newLockFree, false), func(limit int, window time.Duration) (conformance.StatusLimiter, error) {
		return New(limit, window)
	})
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
