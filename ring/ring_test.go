package ring

import (
	"context"
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
