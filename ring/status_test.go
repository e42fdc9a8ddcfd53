package ring

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/conformance"
)

// TestDecideStatusMatchesQueries: with one goroutine, every field of
// DecideStatus is what AllowN, TokensAt and ReadyAt answer around the same
// decision, for several configurations; the zero Limiter admits only n == 0;
// nothing is allocated (conformance.RunStatus).
func TestDecideStatusMatchesQueries(t *testing.T) {
	// Past the last instant the log tells apart (73 years).
	conformance.RunStatus(t, func(limit int, w time.Duration) (conformance.StatusLimiter, error) {
		return New(limit, w)
	}, new(Limiter), 100, 80*365*24*time.Hour)
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
