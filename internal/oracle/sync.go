package oracle

import (
	"context"
	"sync"
	"time"

	"github.com/slidelimit/slidelimit/internal/clock"
)

// Sync is a Model behind the limiter method set, with time.Time instants
// measured from a base and a mutex around every call: a limiter that is
// slow and obviously correct, for tests that need one (a per-key limiter in
// keyed's tests, the conformance suite's own check). It is safe for
// concurrent use.
type Sync struct {
	base time.Time

	mu sync.Mutex
	// m is guarded by mu.
	m Model
}

// NewSync returns m as a limiter whose offsets are measured from base.
func NewSync(base time.Time, m Model) *Sync { return &Sync{base: base, m: m} }

// Allow is shorthand for AllowN(time.Now(), 1).
func (s *Sync) Allow() bool { return s.AllowN(time.Now(), 1) }

// AllowN decides n at now.
func (s *Sync) AllowN(now time.Time, n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.AllowN(Offset(s.base, now), n)
}

// TokensAt returns the largest n AllowN(now, n) would admit.
func (s *Sync) TokensAt(now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.TokensAt(Offset(s.base, now))
}

// ReadyAt returns the earliest instant >= now at which n would be admitted
// if nothing else were: now itself, unchanged, when n fits at now.
func (s *Sync) ReadyAt(now time.Time, n int) (at time.Time, ok bool) {
	off := Offset(s.base, now)
	s.mu.Lock()
	u, ok := s.m.ReadyAt(off, n)
	s.mu.Unlock()
	switch {
	case !ok:
		return time.Time{}, false
	case u == off:
		return now, true
	}
	return clock.OnClockOf(now, Instant(s.base, u)), true
}

// IdleAt reports whether every call at or after now is decided as by a new
// model.
func (s *Sync) IdleAt(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.IdleAt(Offset(s.base, now))
}

// Wait is shorthand for WaitN(ctx, 1).
func (s *Sync) Wait(ctx context.Context) error { return s.WaitN(ctx, 1) }

// WaitN blocks until n is admitted, as the limiters' WaitN does.
func (s *Sync) WaitN(ctx context.Context, n int) error { return clock.Wait(ctx, "oracle", s, n) }

// Limit returns the smallest limit of the rules.
func (s *Sync) Limit() int { return int(minLimit(s.m.Rules())) }

// Window returns the longest window of the rules.
func (s *Sync) Window() time.Duration { return time.Duration(maxWindow(s.m.Rules())) }
