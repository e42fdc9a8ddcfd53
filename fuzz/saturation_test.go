package fuzz

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slidelimit/slidelimit/internal/twocount"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
)

// waiter is an exact limiter with its blocking wait.
type waiter interface {
	exact
	WaitN(ctx context.Context, n int) error
}

// saturationSubjects build a ring and a multi.New inside the caller's time
// (so that under synctest their base is the bubble's clock).
var saturationSubjects = []struct {
	name  string
	limit int
	new   func(t testing.TB) waiter
}{
	{"ring", 2, func(t testing.TB) waiter {
		l, err := ring.New(2, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}},
	{"multi", 2, func(t testing.TB) waiter {
		l, err := multi.New(multi.Rule{Limit: 2, Window: time.Second}, multi.Rule{Limit: 5, Window: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}},
}

// TestSaturatedReadyAgreesWithAllowN: at every instant a time.Time can hold
// (the zero Time, the far past and future, a time.Unix(ms, 0) unit mistake, beyond the range
// stamps saturate at), AllowN, TokensAt and ReadyAt agree: ReadyAt says "now"
// iff TokensAt has room iff AllowN admits; an instant ReadyAt names admits and
// the nanosecond before it does not; and when ReadyAt says never, no instant
// up to the largest time.Time admits.
func TestSaturatedReadyAgreesWithAllowN(t *testing.T) {
	now := time.Now()
	year := 365 * 24 * time.Hour
	maxTime := time.Unix(1<<63-1-62135596800, 999999999)
	instants := []time.Time{
		{},
		time.Unix(-1<<62, 0),
		now.Add(-80 * year),
		now.Add(-73 * year),
		now,
		now.Add(73*year - time.Second),
		now.Add(73 * year),
		now.Add(100 * year),
		time.Unix(now.UnixMilli(), 0), // a unit mistake: about year 57000
		maxTime,
	}
	for _, s := range saturationSubjects {
		for i, u := range instants {
			l := s.new(t)
			for step := range 6 {
				n := 1 + step%s.limit
				tok := l.TokensAt(u)
				at, ok := l.ReadyAt(u, n)
				fitsNow := ok && at.Equal(u)
				if fitsNow != (tok >= n) {
					t.Fatalf("%s instant %d step %d: TokensAt = %d but ReadyAt(%d) = %v, %v", s.name, i, step, tok, n, at, ok)
				}
				if ok && at.Before(u) {
					t.Fatalf("%s instant %d step %d: ReadyAt = %v, before now", s.name, i, step, at)
				}
				if ok && !fitsNow {
					if l.TokensAt(at) < n {
						t.Fatalf("%s instant %d step %d: ReadyAt(%d) = %v, where TokensAt = %d", s.name, i, step, n, at, l.TokensAt(at))
					}
					if l.TokensAt(at.Add(-1)) >= n {
						t.Fatalf("%s instant %d step %d: ReadyAt(%d) = %v, but it fits a nanosecond earlier", s.name, i, step, n, at)
					}
				}
				if !ok {
					for _, v := range []time.Time{u, u.Add(time.Hour), u.Add(1000 * year), maxTime} {
						if l.TokensAt(v) >= n {
							t.Fatalf("%s instant %d step %d: ReadyAt(%d) says never, TokensAt(%v) = %d", s.name, i, step, n, v, l.TokensAt(v))
						}
					}
				}
				if got := l.AllowN(u, n); got != fitsNow {
					t.Fatalf("%s instant %d step %d: AllowN(%d) = %v, ReadyAt said %v, %v", s.name, i, step, n, got, at, ok)
				}
			}
		}
	}
}

// TestSaturatedWaitBeyondRange: a limiter whose clock was pushed beyond the
// saturation range (one call at time.Unix(ms, 0)) must make WaitN fail with
// ErrNeverReady at once, not spin, also with a context that never ends.
func TestSaturatedWaitBeyondRange(t *testing.T) {
	for _, s := range saturationSubjects {
		synctest.Test(t, func(t *testing.T) {
			l := s.new(t)
			mistake := time.Unix(time.Now().UnixMilli(), 0)
			if !l.AllowN(mistake, s.limit) {
				t.Fatalf("%s: AllowN(mistake, limit) refused on a fresh limiter", s.name)
			}
			start := time.Now()
			if err := l.WaitN(context.Background(), 1); !errors.Is(err, ring.ErrNeverReady) {
				t.Fatalf("%s: WaitN = %v, want ErrNeverReady", s.name, err)
			}
			if time.Since(start) != 0 {
				t.Fatalf("%s: WaitN waited %v before saying never", s.name, time.Since(start))
			}
		})
	}
}

// TestReadyAtLastInstant: a window that empties exactly at the last instant
// a limiter represents: ReadyAt names that instant (AllowN admits there),
// not "never", for the exact limiters (their last stamp, 2^61-1 ns after
// the base) and for Approx (twocount.OffMax), whose DecideStatus names it
// as RetryAt and ResetAt too.
func TestReadyAtLastInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const w = time.Second
		base := time.Now() // the limiters below take their base at this instant
		l, _ := ring.New(1, w)
		m, _ := multi.New(multi.Rule{Limit: 1, Window: w}, multi.Rule{Limit: 3, Window: time.Millisecond})
		last := base.Add(1<<61 - 1)
		at := last.Add(-w)
		for _, x := range []exact{l, m} {
			if !x.AllowN(at, 1) {
				t.Fatalf("%T: first call refused", x)
			}
			r, ok := x.ReadyAt(at, 1)
			if !ok || !r.Equal(last) {
				t.Errorf("%T: ReadyAt = base%+v, %v; want the last instant base%+v, true", x, r.Sub(base), ok, last.Sub(base))
			}
			if !x.AllowN(last, 1) {
				t.Errorf("%T: AllowN(last instant) refused", x)
			}
		}

		a, _ := multi.NewApprox(multi.Rule{Limit: 1, Window: w})
		last = base.Add(twocount.OffMax)
		at = last.Add(-2 * w)
		if !a.AllowN(at, 1) {
			t.Fatal("Approx: first call refused")
		}
		r, ok := a.ReadyAt(at, 1)
		if !ok || !r.Equal(last) {
			t.Errorf("Approx: ReadyAt = base%+v, %v; want base%+v, true", r.Sub(base), ok, last.Sub(base))
		}
		if s := a.DecideStatus(at, 1); s.Admitted || !s.RetryAt.Equal(last) || !s.ResetAt.Equal(last) {
			t.Errorf("Approx: DecideStatus = %+v; want RetryAt and ResetAt base%+v", s, last.Sub(base))
		}
		if !a.AllowN(last, 1) {
			t.Error("Approx: AllowN(last instant) refused")
		}
	})
}
