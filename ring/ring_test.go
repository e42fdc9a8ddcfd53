package ring

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ms returns the instant d milliseconds after t0.
func ms(d int64) time.Time { return t0.Add(time.Duration(d) * time.Millisecond) }

type step struct {
	t    time.Time
	n    int
	want bool
	note string
}

// run replays steps through l, reporting the step, the call, the result and
// the expectation on any difference.
func run(t *testing.T, l limiter, steps []step) {
	t.Helper()
	for i, s := range steps {
		if got := l.AllowN(s.t, s.n); got != s.want {
			t.Errorf("step %d (%s): AllowN(t0+%v, %d) = %v, want %v", i, s.note, s.t.Sub(t0), s.n, got, s.want)
		}
	}
}

func TestSteps(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			run(t, impl.new(3, time.Second), []step{
				{ms(0), 1, true, "first"},
				{ms(0), 1, true, "same instant"},
				{ms(10), 1, true, "third fills the window"},
				{ms(10), 1, false, "full"},
				{ms(999), 1, false, "t0 stamps still inside (t-W, t]"},
				{ms(1000), 1, true, "t0 stamps exactly W old: outside"},
				{ms(1000), 1, true, "second t0 stamp outside too"},
				{ms(1000), 1, false, "ms(10) still inside"},
				{ms(1009), 1, false, "1ms before ms(10) leaves"},
				{ms(1010), 1, true, "ms(10) leaves"},
				{ms(500), 1, false, "backwards: clamped to ms(1010), full"},
				{ms(2010), 3, true, "n == limit on an empty window"},
				{ms(2010), 0, true, "n == 0 always admitted"},
				{ms(2010), -1, false, "n < 0 refused"},
				{ms(5000), 4, false, "n > limit never admitted"},
				{ms(5000), 2, true, "cost 2"},
				{ms(5500), 2, false, "cost 2 does not fit beside cost 2"},
				{ms(5500), 1, true, "cost 1 does"},
				{ms(6000), 2, true, "the cost-2 admission leaves as a whole"},
			})
		})
	}
}

func TestLimitOne(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			run(t, impl.new(1, time.Millisecond), []step{
				{t0, 1, true, ""},
				{t0.Add(time.Millisecond - 1), 1, false, "1ns before the window ends"},
				{t0.Add(time.Millisecond), 1, true, "exactly one window later"},
				{t0.Add(time.Millisecond), 2, false, "n > limit"},
				{t0.Add(time.Millisecond), 0, true, "n == 0 even when full"},
				{t0.Add(2 * time.Millisecond), 1, true, ""},
			})
		})
	}
}

func TestLongWindows(t *testing.T) {
	for _, impl := range impls {
		for _, w := range []time.Duration{time.Hour, 24 * time.Hour, 30 * 24 * time.Hour, MaxWindow} {
			l := impl.new(2, w)
			run(t, l, []step{
				{t0, 2, true, "fill"},
				{t0.Add(w - 1), 1, false, "1ns before a window has passed"},
				{t0.Add(w), 2, true, "exactly one window later"},
			})
		}
	}
}

// TestClockBackwards: a stale instant is treated as the latest one; it
// never records an older state and never lets more through (golang/go#71360).
func TestClockBackwards(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			l := impl.new(2, time.Second)
			run(t, l, []step{
				{ms(5000), 1, true, ""},
				{ms(0), 1, true, "stale instant: recorded at ms(5000)"},
				{ms(0), 1, false, "full at ms(5000)"},
				{ms(5999), 1, false, "so still full 999ms later"},
				{ms(6000), 2, true, "both leave together: the stale one was not stamped at ms(0)"},
			})
			if got := l.TokensAt(ms(100)); got != 0 {
				t.Errorf("TokensAt(stale) = %d, want 0 (evaluated at the latest instant)", got)
			}
		})
	}
}

// TestExtremeInstants: instants far in the past or future saturate instead of
// overflowing, and never panic. An instant beyond the representable range
// moves the limiter's clock to the end of it; later instants are clamped
// there, as with any instant from the future.
func TestExtremeInstants(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			far := time.Unix(math.MaxInt64/2, 0)
			past := time.Time{}
			l := impl.new(2, time.Second)
			run(t, l, []step{
				{past, 1, true, "year 1"},
				{past, 1, true, ""},
				{past, 1, false, "full"},
				{t0, 2, true, "far later: window passed"},
				{far, 1, true, "beyond the range"},
				{far.Add(time.Hour), 1, true, "saturates at the same instant as far"},
				{far.Add(time.Hour), 1, false, "so the window is full there"},
				{t0, 1, false, "and stays full: the clock is held at the end of the range"},
			})
			// The window is full at the last instant the limiter can
			// represent, so it can never admit again: ReadyAt says so
			// (issue 10: it used to answer "now", and Wait spun).
			if at, ok := l.ReadyAt(far, 1); ok {
				t.Errorf("ReadyAt(far, 1) = %v, true; want never", at)
			}
			if at, ok := l.ReadyAt(t0, 1); ok {
				t.Errorf("ReadyAt(t0, 1) = %v, true; want never", at)
			}
			if err := l.WaitN(context.Background(), 1); !errors.Is(err, ErrNeverReady) {
				t.Errorf("WaitN = %v, want ErrNeverReady", err)
			}
			_ = l.TokensAt(past)
			_ = l.IdleAt(far)
		})
	}
}

func TestTokensAndReadyAt(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			l := impl.new(4, time.Second)
			check := func(now time.Time, tokens int, n int, ready time.Time, ok bool) {
				t.Helper()
				if got := l.TokensAt(now); got != tokens {
					t.Errorf("TokensAt(t0+%v) = %d, want %d", now.Sub(t0), got, tokens)
				}
				at, gotOK := l.ReadyAt(now, n)
				if gotOK != ok || (ok && !at.Equal(ready)) {
					t.Errorf("ReadyAt(t0+%v, %d) = t0+%v, %v; want t0+%v, %v", now.Sub(t0), n, at.Sub(t0), gotOK, ready.Sub(t0), ok)
				}
			}
			check(ms(0), 4, 4, ms(0), true)
			l.AllowN(ms(0), 1)
			l.AllowN(ms(100), 2)
			l.AllowN(ms(300), 1)
			check(ms(300), 0, 1, ms(1000), true)  // the ms(0) unit leaves first
			check(ms(300), 0, 3, ms(1100), true)  // then the ms(100) pair
			check(ms(300), 0, 4, ms(1300), true)  // all of it
			check(ms(1000), 1, 1, ms(1000), true) // ready now: returns now itself
			check(ms(1100), 3, 3, ms(1100), true)
			check(ms(1100), 3, 5, time.Time{}, false) // n > limit
			check(ms(1100), 3, -1, time.Time{}, false)
			check(ms(1100), 3, 0, ms(1100), true)
			check(ms(200), 0, 1, ms(1000), true) // stale: evaluated at ms(300)
			if !l.AllowN(ms(1000), 1) {
				t.Errorf("AllowN at the instant ReadyAt gave was refused")
			}
		})
	}
}

func TestIdleAt(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			l := impl.new(2, time.Second)
			if !l.IdleAt(t0) {
				t.Errorf("new limiter not idle")
			}
			l.AllowN(ms(0), 1)
			l.AllowN(ms(400), 1)
			for _, c := range []struct {
				at   time.Time
				idle bool
			}{{ms(0), false}, {ms(1000), false}, {ms(1399), false}, {ms(1400), true}, {ms(9000), true}} {
				if got := l.IdleAt(c.at); got != c.idle {
					t.Errorf("IdleAt(t0+%v) = %v, want %v", c.at.Sub(t0), got, c.idle)
				}
			}
		})
	}
}

// TestIdleMeansFresh: once idle, a limiter decides like a new one, for the
// same calls at or after that instant.
func TestIdleMeansFresh(t *testing.T) {
	for _, impl := range impls {
		old := impl.new(3, time.Second)
		for i := range 7 {
			old.AllowN(ms(int64(i*150)), 1+i%2)
		}
		at := ms(0)
		for !old.IdleAt(at) {
			at = at.Add(time.Millisecond)
		}
		fresh := impl.new(3, time.Second)
		for i := range 50 {
			now := at.Add(time.Duration(i*37) * time.Millisecond)
			n := 1 + i%3
			if a, b := old.AllowN(now, n), fresh.AllowN(now, n); a != b {
				t.Fatalf("%s: after idle at t0+%v, call %d AllowN(t0+%v, %d): old %v, fresh %v", impl.name, at.Sub(t0), i, now.Sub(t0), n, a, b)
			}
		}
	}
}

func TestNewErrors(t *testing.T) {
	for _, c := range []struct {
		limit  int
		window time.Duration
		want   string
	}{
		{0, time.Second, "ring: limit must be between 1 and"},
		{-5, time.Second, "got -5"},
		{MaxLimit + 1, time.Second, "limit"},
		{1, 0, "ring: window must be between 1ns and"},
		{1, -time.Second, "got -1s"},
		{1, MaxWindow + 1, "window"},
	} {
		l, err := New(c.limit, c.window)
		if err == nil || l != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%d, %v) = %v, %v; want nil and an error containing %q", c.limit, c.window, l, err, c.want)
		}
	}
	// The largest window is accepted (the largest limit would allocate
	// gigabytes; its bound is checked above).
	if l, err := New(1, MaxWindow); err != nil || l.Window() != MaxWindow {
		t.Errorf("New(1, MaxWindow) = %v, %v", l, err)
	}
}

func TestZeroValue(t *testing.T) {
	var l Limiter
	if l.Allow() || l.AllowN(t0, 1) {
		t.Errorf("zero Limiter admitted")
	}
	if !l.AllowN(t0, 0) {
		t.Errorf("zero Limiter refused n == 0")
	}
	if l.TokensAt(t0) != 0 {
		t.Errorf("zero Limiter has tokens")
	}
	if _, ok := l.ReadyAt(t0, 1); ok {
		t.Errorf("zero Limiter will be ready")
	}
	if !l.IdleAt(t0) {
		t.Errorf("zero Limiter not idle")
	}
}

func TestAllocs(t *testing.T) {
	l, _ := New(1000, time.Second)
	full, _ := New(1, time.Hour)
	full.AllowN(t0, 1)
	now := t0
	for name, f := range map[string]func(){
		"Allow":        func() { l.Allow() },
		"AllowN admit": func() { now = now.Add(time.Millisecond); l.AllowN(now, 1) },
		"AllowN batch": func() { now = now.Add(time.Second); l.AllowN(now, 10) },
		"AllowN deny":  func() { full.AllowN(t0, 1) },
		"TokensAt":     func() { l.TokensAt(now) },
		"ReadyAt":      func() { l.ReadyAt(now, 5) },
		"IdleAt":       func() { l.IdleAt(now) },
	} {
		if a := testing.AllocsPerRun(1000, f); a != 0 {
			t.Errorf("%s: %v allocs per call, want 0", name, a)
		}
	}
}

func TestWait(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := impl.new(2, time.Second)
				start := time.Now()
				ctx := context.Background()
				for range 2 {
					if err := l.WaitN(ctx, 1); err != nil {
						t.Fatal(err)
					}
				}
				if time.Since(start) != 0 {
					t.Fatalf("first two waits blocked")
				}
				if err := l.WaitN(ctx, 2); err != nil {
					t.Fatal(err)
				}
				if got := time.Since(start); got != time.Second {
					t.Fatalf("waited %v for the window to free, want 1s", got)
				}
				// A deadline before the room frees fails at once.
				dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
				defer cancel()
				before := time.Now()
				if err := l.WaitN(dctx, 1); !errors.Is(err, ErrDeadline) {
					t.Fatalf("WaitN with a short deadline = %v, want ErrDeadline", err)
				}
				if time.Since(before) != 0 {
					t.Fatalf("WaitN with a hopeless deadline waited")
				}
				if err := l.WaitN(ctx, 3); !errors.Is(err, ErrNeverReady) {
					t.Fatalf("WaitN(3) on limit 2 = %v, want ErrNeverReady", err)
				}
				if err := l.WaitN(ctx, 0); err != nil {
					t.Fatalf("WaitN(0) = %v", err)
				}
				// Cancellation while waiting returns ctx.Err() and admits nothing.
				cctx, cancel2 := context.WithCancel(ctx)
				go func() { time.Sleep(100 * time.Millisecond); cancel2() }()
				if err := l.WaitN(cctx, 2); !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled WaitN = %v", err)
				}
				if got := l.TokensAt(time.Now()); got != 0 {
					t.Fatalf("cancelled WaitN admitted: %d tokens left", got)
				}
			})
		})
	}
}

// TestConcurrentWaiters: waiters all get through, and never more than the
// limit within a window of the fake clock.
func TestConcurrentWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := New(3, time.Second)
		var mu sync.Mutex
		var got []time.Time
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := l.Wait(context.Background()); err != nil {
					t.Error(err)
				}
				mu.Lock()
				got = append(got, time.Now())
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(got) != 10 {
			t.Fatalf("%d of 10 waiters admitted", len(got))
		}
		for i := range got {
			in := 0
			for j := range got {
				if d := got[i].Sub(got[j]); d >= 0 && d < time.Second {
					in++
				}
			}
			if in > 3 {
				t.Fatalf("%d admissions in the window ending at %v", in, got[i])
			}
		}
	})
}
