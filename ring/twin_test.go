package ring

import (
	"context"
	"time"

	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/internal/slidelog/slidelogtest"
)

// mutexLimiter is the same sliding log behind a mutex (slidelogtest.Reference),
// with the same instant conversion as Limiter: the reference every test runs
// against too, and the baseline of the benchmarks.
type mutexLimiter struct {
	ref   *slidelogtest.Reference
	base  clock.Base
	limit int
}

func newMutex(limit int, window time.Duration) *mutexLimiter {
	return &mutexLimiter{
		ref:   slidelogtest.NewReference([]slidelogtest.Rule{{Limit: int64(limit), Window: int64(window)}}),
		base:  clock.NewBase(),
		limit: limit,
	}
}

func (m *mutexLimiter) Allow() bool { return m.ref.AllowN(m.base.Now(), 1) }
func (m *mutexLimiter) AllowN(now time.Time, n int) bool {
	return m.ref.AllowN(m.base.Offset(now), int64(n))
}
func (m *mutexLimiter) TokensAt(now time.Time) int {
	return int(m.ref.TokensAt(m.base.Offset(now)))
}
func (m *mutexLimiter) ReadyAt(now time.Time, n int) (time.Time, bool) {
	off := m.base.Offset(now)
	at, ok := m.ref.ReadyAt(off, int64(n))
	return m.base.Ready(now, off, at, ok)
}
func (m *mutexLimiter) IdleAt(now time.Time) bool { return m.ref.IdleAt(m.base.Offset(now)) }
func (m *mutexLimiter) WaitN(ctx context.Context, n int) error {
	return clock.Wait(ctx, "ring", m, n)
}

// limiter is the method set both implementations share.
type limiter interface {
	Allow() bool
	AllowN(now time.Time, n int) bool
	TokensAt(now time.Time) int
	ReadyAt(now time.Time, n int) (time.Time, bool)
	IdleAt(now time.Time) bool
	WaitN(ctx context.Context, n int) error
}

var (
	_ limiter = (*Limiter)(nil)
	_ limiter = (*mutexLimiter)(nil)
)

// impls lists every implementation; each test runs on all of them.
var impls = []struct {
	name string
	new  func(limit int, window time.Duration) limiter
}{
	{"lockfree", func(limit int, w time.Duration) limiter {
		l, err := New(limit, w)
		if err != nil {
			panic(err)
		}
		return l
	}},
	{"mutex", func(limit int, w time.Duration) limiter { return newMutex(limit, w) }},
}
