package httplimit_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
)

// The middleware's clock answers as time.Now does: between two readings of
// time.Now, on the monotonic clock and on the wall clock, also once its
// anchor is old and renewed, and never going back.
func TestClockReadsAsTimeNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := httplimit.ClockNow()
		var last time.Time
		for step, wait := range []time.Duration{0, time.Millisecond, 300 * time.Millisecond, 999 * time.Millisecond, time.Second, 2 * time.Second, time.Hour, 0} {
			time.Sleep(wait)
			before := time.Now()
			got := now()
			after := time.Now()
			require.False(t, got.Before(before) || got.After(after), "step %d: %v not between %v and %v", step, got, before, after)
			require.False(t, got.Round(0).Before(before.Round(0)) || got.Round(0).After(after.Round(0)),
				"step %d: wall clock %v not between %v and %v", step, got.Round(0), before.Round(0), after.Round(0))
			require.False(t, got.Before(last), "step %d: went back from %v to %v", step, last, got)
			last = got
		}
	})
}

// On the real clock: exact on the monotonic clock; on the wall clock within
// the few nanoseconds between time.Now's two reads (1 ms allowed, which only
// a step of the system clock during the test would exceed).
func TestClockOnTheRealClock(t *testing.T) {
	now := httplimit.ClockNow()
	for step := range 1000 {
		before := time.Now()
		got := now()
		after := time.Now()
		require.False(t, got.Before(before) || got.After(after), "step %d: %v not between %v and %v", step, got, before, after)
		require.WithinRange(t, got.Round(0), before.Round(0).Add(-time.Millisecond), after.Round(0).Add(time.Millisecond), "step %d: wall clock", step)
	}
}
