package window

import (
	"fmt"
	"testing"
	"time"

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
		{MaxLimit, time.Hour},
	} {
		t.Run(fmt.Sprintf("limit=%d,window=%v", tc.limit, tc.w), func(t *testing.T) {
			a, err := New(tc.limit, tc.w)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := New(tc.limit, tc.w)
			// Past the last instant a window tells apart.
			conformance.StatusMatchesQueries(t, a, b, t0, 70*365*24*time.Hour)
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

// TestOutsideStatus runs the shared outside-view concurrency check with every
// admission made by DecideStatus: the window's bound holds, and every answer
// is consistent with itself although other goroutines admit at the same time.
func TestOutsideStatus(t *testing.T) {
	conformance.RunOutsideStatus(t, conformanceOptions(nil, nil), func(limit int, window time.Duration) (conformance.StatusLimiter, error) {
		return New(limit, window)
	})
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
