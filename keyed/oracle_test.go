package keyed_test

import (
	"sync"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/keyed"
)

// This file holds the references of the tests: the oracle for a keyed
// Limiter (below), and the test-only limiter: the exact sliding log kept as an
// unbounded slice of stamps under a mutex, with the contract's clamping rule.
// It is deliberately naive, so that it cannot share a bug with ring/, and it
// has hooks that let a test stop a call in the middle of a decision.

type stamp struct {
	at int64 // nanoseconds since the Unix epoch
	n  int
}

// naive implements keyed.PerKey, the part of the contract keyed uses.
type naive struct {
	limit  int
	window int64

	// Hooks, set before the limiter is shared: beforeAllow runs at the start
	// of AllowN, afterAllow after it recorded its decision (with the mutex
	// released), inIdle at the start of IdleAt and afterIdle at its end.
	beforeAllow, afterAllow func(now time.Time, n int, allowed bool)
	inIdle                  func(now time.Time)
	afterIdle               func(now time.Time, idle bool)

	mu     sync.Mutex
	latest int64 // latest admission's instant; valid if len(log) > 0
	log    []stamp
}

func newNaive(limit int, window time.Duration) *naive {
	return &naive{limit: limit, window: int64(window)}
}

// clampLocked applies the time-never-goes-backwards rule.
func (l *naive) clampLocked(now time.Time) int64 {
	t := now.UnixNano()
	if len(l.log) > 0 && t < l.latest {
		return l.latest
	}
	return t
}

// costLocked returns the cost stamped in (t-window, t].
func (l *naive) costLocked(t int64) int {
	c := 0
	for _, s := range l.log {
		if s.at > t-l.window && s.at <= t {
			c += s.n
		}
	}
	return c
}

func (l *naive) AllowN(now time.Time, n int) bool {
	if l.beforeAllow != nil {
		l.beforeAllow(now, n, false)
	}
	ok := l.allowN(now, n)
	if l.afterAllow != nil {
		l.afterAllow(now, n, ok)
	}
	return ok
}

func (l *naive) allowN(now time.Time, n int) bool {
	if n == 0 {
		return true
	}
	if n < 0 || n > l.limit {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.clampLocked(now)
	if l.costLocked(t)+n > l.limit {
		return false
	}
	l.log = append(l.log, stamp{at: t, n: n})
	l.latest = t
	return true
}

func (l *naive) TokensAt(now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit - l.costLocked(l.clampLocked(now))
}

func (l *naive) ReadyAt(now time.Time, n int) (time.Time, bool) {
	if n == 0 {
		return now, true
	}
	if n < 0 || n > l.limit {
		return time.Time{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.clampLocked(now)
	if l.costLocked(t)+n <= l.limit {
		return now, true // AllowN(now, n) would admit (at t, if now is stale)
	}
	// The cost in the window only falls when a stamp leaves it, at s.at+window.
	for _, s := range l.log {
		if at := s.at + l.window; at > t && l.costLocked(at)+n <= l.limit {
			return time.Unix(0, at), true
		}
	}
	return time.Time{}, false // unreachable: every stamp leaves eventually
}

// IdleAt: every stamp is out of every window ending at or after now, and no
// admission is later than now (so no clamping would differ from a fresh log).
func (l *naive) IdleAt(now time.Time) bool {
	if l.inIdle != nil {
		l.inIdle(now)
	}
	l.mu.Lock()
	idle := len(l.log) == 0 || l.latest <= now.UnixNano()-l.window
	l.mu.Unlock()
	if l.afterIdle != nil {
		l.afterIdle(now, idle)
	}
	return idle
}

// oracle is the reference for a Limiter: per key, a limiter that is never
// evicted, and the floor rule. For an exact limiter type the per-key limiter
// is the naive log; otherwise it is a limiter of the same type (a shadow),
// which checks that eviction and recreation change nothing.
type oracle struct {
	new   func() keyed.PerKey
	floor time.Time
	keys  map[string]keyed.PerKey
}

func newOracle(t testing.TB, im impl, limit int, w time.Duration) *oracle {
	mk := func() keyed.PerKey { return newNaive(limit, w) }
	if !im.exact {
		mk = func() keyed.PerKey {
			l, err := im.new(limit, w)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
	}
	return &oracle{new: mk, keys: map[string]keyed.PerKey{}}
}

func (o *oracle) key(key string) keyed.PerKey {
	l := o.keys[key]
	if l == nil {
		l = o.new()
		o.keys[key] = l
	}
	return l
}

func (o *oracle) clamp(now time.Time) time.Time {
	if now.Before(o.floor) {
		return o.floor
	}
	return now
}
