package window

import (
	"runtime"
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
	// Past the last instant a window tells apart.
	conformance.RunStatus(t, func(limit int, w time.Duration) (conformance.StatusLimiter, error) {
		return New(limit, w)
	}, new(Limiter), MaxLimit, 70*365*24*time.Hour)
}

// TestOutsideStatus runs the shared outside-view concurrency check with every
// admission made by DecideStatus: the window's bound holds, and every answer
// is consistent with itself although other goroutines admit at the same time.
func TestOutsideStatus(t *testing.T) {
	conformance.RunOutsideStatus(t, conformanceOptions(nil, nil), func(limit int, window time.Duration) (conformance.StatusLimiter, error) {
		return New(limit, window)
	})
}

// TestDecideStatusOwnSnapshot: goroutines calling DecideStatus(now, 1) at one
// instant until refused each learn what remained right after their own
// admission. Admissions at one instant are ordered, each taking one unit, so
// the Remaining of the admitted calls are exactly the numbers from what fit
// at that instant minus one down to 0, each once; a Remaining read after
// another goroutine's admission landed would repeat one of them. Phases
// cover a new window and a rolled one where the previous window still
// weighs.
func TestDecideStatusOwnSnapshot(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{2, 8} {
		runtime.GOMAXPROCS(procs)
		const limit, W, G = 1 << 15, time.Second, 8
		l, err := New(limit, W)
		if err != nil {
			t.Fatal(err)
		}
		// At t0 the window is anchored and the whole limit fits; at
		// t0+W+W/4 the previous window's limit weighs three quarters of
		// it and a quarter fits; at t0+3W+W/2 the limiter is idle again.
		for _, ph := range []struct {
			at   time.Duration
			want int
		}{{0, limit}, {W + W/4, limit / 4}, {3*W + W/2, limit}} {
			now := t0.Add(ph.at)
			var mu sync.Mutex
			var rems []int
			var wg sync.WaitGroup
			for range G {
				wg.Go(func() {
					var mine []int
					for {
						s := l.DecideStatus(now, 1)
						if !s.Admitted {
							if s.Remaining != 0 || !s.RetryAt.After(now) {
								t.Errorf("GOMAXPROCS %d, t0+%v: refused with %+v", procs, ph.at, s)
							}
							break
						}
						mine = append(mine, s.Remaining)
					}
					mu.Lock()
					rems = append(rems, mine...)
					mu.Unlock()
				})
			}
			wg.Wait()
			slices.Sort(rems)
			if len(rems) != ph.want {
				t.Fatalf("GOMAXPROCS %d, t0+%v: %d admitted, want %d", procs, ph.at, len(rems), ph.want)
			}
			for i, r := range rems {
				if r != i {
					t.Fatalf("GOMAXPROCS %d, t0+%v: Remaining of the admitted calls, sorted, has %d at index %d (each of 0..%d once expected)", procs, ph.at, r, i, ph.want-1)
				}
			}
		}
	}
}
