package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/redis"
)

// TestOutsideServerTime: 16 goroutines on two separate clients (two
// connection pools, as two processes would have) hit one key on the server's
// clock with weighted calls. Seen from outside, through the instants the
// script returns for admitted calls, no window of any rule holds more than its
// limit for the exact log, and no more than 2*limit-1 for the window.
func TestOutsideServerTime(t *testing.T) {
	s, _, c1 := standalone(t)
	_, c2 := connect(t, s)

	rules := []redis.Rule{{Limit: 30, Window: 20 * time.Millisecond}, {Limit: 100, Window: 200 * time.Millisecond}}
	for _, exact := range []bool{true, false} {
		mk := mustWindow
		if exact {
			mk = mustLog
		}
		serverTimeLoad(t, exact, rules, mk(t, c1, redis.Options{Timeout: time.Second}, rules...), mk(t, c2, redis.Options{Timeout: time.Second}, rules...))
	}
}

// loadBound is the most a limiter may admit in any window of r under load:
// the limit for the exact log, 2*limit-1 for the window.
func loadBound(r redis.Rule, exact bool) int64 {
	if exact {
		return int64(r.Limit)
	}
	return 2*int64(r.Limit) - 1
}

// serverTimeLoad runs 16 goroutines, goroutine g on ls[g%len(ls)], each
// making 120 weighted calls on one key on the server's clock, and checks from
// the instants the script returned for the admitted calls that no window of
// any rule holds more than its limit (exact) or 2*limit-1 (the window).
func serverTimeLoad(t *testing.T, exact bool, rules []redis.Rule, ls ...*redis.Limiter) {
	t.Helper()
	res, err := runLoad(t.Context(), "shared", 16, ls...)
	require.NoError(t, err)
	checkLoad(t, exact, rules, res)
}

// loadResult is what the goroutines of one load saw: the instant the script
// returned and the cost of each admitted call, and how many calls were
// refused.
type loadResult struct {
	Admitted []oracle.Stamp
	Refused  int
	// First and Last are the earliest and the latest instant decided at,
	// admitted or not (µs).
	First, Last int64
}

// runLoad runs goroutines goroutines, goroutine g on ls[g%len(ls)], each
// making 120 calls of cost 1 to 3 on key on the server's clock, and returns
// what they saw. It stops at the first error.
func runLoad(ctx context.Context, key string, goroutines int, ls ...*redis.Limiter) (loadResult, error) {
	var mu sync.Mutex
	var res loadResult
	var errs []error
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			l := ls[g%len(ls)]
			for i := range 120 {
				n := 1 + (g+i)%3
				d, err := l.AllowN(ctx, key, time.Time{}, n)
				mu.Lock()
				if err == nil {
					at := d.At.UnixMicro()
					if res.First == 0 || at < res.First {
						res.First = at
					}
					res.Last = max(res.Last, at)
				}
				switch {
				case err != nil:
					errs = append(errs, fmt.Errorf("goroutine %d call %d: %w", g, i, err))
				case d.Allowed:
					res.Admitted = append(res.Admitted, oracle.Stamp{At: d.At.UnixMicro(), Cost: int64(n)})
				default:
					res.Refused++
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return res, errors.Join(errs...)
}

// checkLoad requires that the load admitted and refused calls, and that no
// window of any rule, on the instants the script returned, holds more than
// the limit (exact) or 2*limit-1 (the window).
func checkLoad(t *testing.T, exact bool, rules []redis.Rule, res loadResult) {
	t.Helper()
	require.NotEmpty(t, res.Admitted)
	require.Positive(t, res.Refused, "the load must exceed the limit for the test to mean anything")
	for _, r := range rules {
		got, bound := oracle.MaxInWindow(res.Admitted, r.Window.Microseconds()), loadBound(r, exact)
		require.LessOrEqual(t, got, bound, "exact %v rule %v: admitted %d in one window", exact, r, got)
		t.Logf("exact %v rule %d/%v: max %d in a window, %d admitted calls, %d refused", exact, r.Limit, r.Window, got, len(res.Admitted), res.Refused)
	}
}
