package conformance

import (
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
)

// statusDecider is a one-rule limiter that also reports its status with a
// decision (ring.Limiter, window.Limiter).
type statusDecider interface {
	DecideStatus(now time.Time, n int) slidelimit.Status
}

// callerClock checks that instants answered for instants a caller built by
// hand (time.Date, in a location of its own) are on the caller's clock: no
// monotonic reading, the caller's location, and so equal (==) to the same
// answer of a twin made at another moment. A limiter that measures instants
// from a reading of time.Now taken at its construction must not hand that
// reading's monotonic clock and location to a caller who never used either:
// a twin would answer an instant that is Equal but not ==, and a caller's
// own arithmetic (t0.Add(w)) would not == the answer.
func (s *suite) callerClock(t *testing.T) {
	const limit = 3
	const w = time.Second
	loc := time.FixedZone("UTC+5", 5*3600)
	t0 := time.Unix(time.Now().Unix(), 0).In(loc) // near now, for limiters that map instants to a range of their own
	a := s.newLimiter(t, limit, w)
	time.Sleep(time.Millisecond) // a's and b's construction instants differ
	b := s.newLimiter(t, limit, w)
	wall := func(what string, x time.Time) {
		t.Helper()
		if x.IsZero() {
			return // "never"
		}
		if x != x.Round(0) {
			t.Errorf("%s = %v: has a monotonic reading the caller never gave", what, x)
		}
		if x.Location() != loc {
			t.Errorf("%s = %v: in %v, want the caller's location %v", what, x, x.Location(), loc)
		}
	}
	calls := []struct {
		off time.Duration
		n   int
	}{{0, limit}, {w / 4, 1}, {w / 2, 2}, {w + w/3, 1}, {3 * w, limit}, {3*w + 1, 1}}
	for i, c := range calls {
		now := t0.Add(c.off)
		if ga, gb := a.AllowN(now, c.n), b.AllowN(now, c.n); ga != gb {
			t.Fatalf("call %d: AllowN(t0+%v, %d) = %v, a twin %v", i, c.off, c.n, ga, gb)
		}
		for n := 1; n <= limit; n++ {
			ra, oka := a.ReadyAt(now, n)
			rb, okb := b.ReadyAt(now, n)
			if !oka || !okb {
				t.Fatalf("after call %d: ReadyAt(t0+%v, %d) not ok", i, c.off, n)
			}
			wall("ReadyAt", ra)
			if ra != rb {
				t.Errorf("after call %d: ReadyAt(t0+%v, %d) = %v, a twin made later %v: equal instants, not ==", i, c.off, n, ra, rb)
			}
		}
	}
	sa, ok := a.(statusDecider)
	if !ok {
		return
	}
	sb := b.(statusDecider)
	now := t0.Add(10 * w)
	for i, n := range []int{limit, 1, 0, limit + 1} {
		x, y := sa.DecideStatus(now, n), sb.DecideStatus(now, n)
		wall("DecideStatus RetryAt", x.RetryAt)
		wall("DecideStatus ResetAt", x.ResetAt)
		if x != y {
			t.Errorf("DecideStatus %d (n=%d) = %+v, a twin made later %+v", i, n, x, y)
		}
	}
}
