package window

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/internal/twocount"
	"github.com/slidelimit/slidelimit/internal/twoword"
)

// This file holds the mutex twin and the harness that runs every test on
// both implementations; oracle_test.go holds newRef, the naive reference for
// the decisions (internal/oracle's two-counter model).

// mutexLimiter has the semantics of Limiter, with the state in plain fields
// guarded by a mutex. It is the reference the lock-free protocol is tested
// against and the baseline the benchmarks compare with. It shares the
// arithmetic of internal/twocount with Limiter (checked there against
// math/big), but none of the word encoding.
type mutexLimiter struct {
	rule twocount.Rule
	base clock.Base

	mu sync.Mutex
	// start, prev and curr are guarded by mu: the current window's start and
	// the cost admitted in the window before it and in it.
	start, prev, curr int64
}

func newMutex(limit int, window time.Duration) (*mutexLimiter, error) {
	if err := validate(limit, window); err != nil {
		return nil, err
	}
	r := twocount.Rule{Limit: int64(limit), Window: int64(window)}
	return &mutexLimiter{rule: r, base: clock.NewBase(), start: twocount.StartNew}, nil
}

func (m *mutexLimiter) Limit() int                       { return int(m.rule.Limit) }
func (m *mutexLimiter) Window() time.Duration            { return time.Duration(m.rule.Window) }
func (m *mutexLimiter) Allow() bool                      { return m.allow(m.base.Now(), 1) }
func (m *mutexLimiter) AllowN(now time.Time, n int) bool { return m.allow(m.base.Offset(now), n) }
func (m *mutexLimiter) Wait(ctx context.Context) error   { return m.WaitN(ctx, 1) }
func (m *mutexLimiter) WaitN(ctx context.Context, n int) error {
	return clock.Wait(ctx, "window", m, n)
}

func (m *mutexLimiter) allow(off int64, n int) bool {
	if n <= 0 {
		return n == 0
	}
	k := int64(n)
	if k > m.rule.Limit {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ws, p, c, _ := m.rule.View(m.start, m.prev, m.curr, off)
	if !m.rule.Fits(p, c, t-ws, k) {
		return false
	}
	m.start, m.prev, m.curr = ws, p, c+k
	return true
}

// viewLocked requires m.mu.
func (m *mutexLimiter) viewLocked(off int64) (t, ws, p, c int64) {
	t, ws, p, c, _ = m.rule.View(m.start, m.prev, m.curr, off)
	return t, ws, p, c
}

func (m *mutexLimiter) TokensAt(now time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ws, p, c := m.viewLocked(m.base.Offset(now))
	return int(m.rule.Tokens(p, c, t-ws))
}

func (m *mutexLimiter) ReadyAt(now time.Time, n int) (time.Time, bool) {
	if n == 0 {
		return now, true
	}
	if n < 0 || int64(n) > m.rule.Limit {
		return time.Time{}, false
	}
	off := m.base.Offset(now)
	m.mu.Lock()
	t, ws, p, c := m.viewLocked(off)
	m.mu.Unlock()
	switch r := m.rule.ReadyAt(ws, p, c, t, int64(n)); {
	case r == t:
		return now, true
	case r > twocount.OffMax:
		return time.Time{}, false
	default:
		return m.base.At(now, off, r), true
	}
}

func (m *mutexLimiter) IdleAt(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rule.Idle(m.start, m.base.Offset(now))
}

// limiter is the method set both implementations share (docs/api-contract.md),
// plus setState, a test seam that puts a limiter in a given state.
type limiter interface {
	Allow() bool
	AllowN(now time.Time, n int) bool
	TokensAt(now time.Time) int
	ReadyAt(now time.Time, n int) (time.Time, bool)
	IdleAt(now time.Time) bool
	Wait(ctx context.Context) error
	WaitN(ctx context.Context, n int) error
	Limit() int
	Window() time.Duration

	// setState makes the current window start at instant start with the
	// given counters, as if reached without an admission at start (the
	// state a concurrent race can leave, see docs/window.md).
	setState(start time.Time, prev, curr int64)
}

func (l *Limiter) setState(start time.Time, prev, curr int64) {
	a := l.at.Load()
	l.at.Store(twoword.PackAt(twocount.Clamp(l.base.Offset(start)), false, a&1))
	gen := l.cnt.Load() >> twoword.GenShift
	l.cnt.Store(gen<<twoword.GenShift | uint64(prev)<<twoword.CountBits | uint64(curr))
}

func (m *mutexLimiter) setState(start time.Time, prev, curr int64) {
	m.mu.Lock()
	m.start, m.prev, m.curr = twocount.Clamp(m.base.Offset(start)), prev, curr
	m.mu.Unlock()
}

var (
	_ limiter = (*Limiter)(nil)
	_ limiter = (*mutexLimiter)(nil)
)

// impl is one implementation under test.
type impl struct {
	name string
	new  func(limit int, window time.Duration) (limiter, error)
}

var impls = []impl{
	{"lockfree", func(limit int, window time.Duration) (limiter, error) {
		l, err := New(limit, window)
		if err != nil {
			return nil, err
		}
		return l, nil
	}},
	{"mutex", func(limit int, window time.Duration) (limiter, error) {
		m, err := newMutex(limit, window)
		if err != nil {
			return nil, err
		}
		return m, nil
	}},
}

// forEachImpl runs f as a subtest on every implementation.
func forEachImpl(t *testing.T, f func(t *testing.T, mk func(limit int, window time.Duration) limiter)) {
	t.Helper()
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			f(t, func(limit int, window time.Duration) limiter {
				t.Helper()
				l, err := im.new(limit, window)
				if err != nil {
					t.Fatalf("New(%d, %v): %v", limit, window, err)
				}
				return l
			})
		})
	}
}
