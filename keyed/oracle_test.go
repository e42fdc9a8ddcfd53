package keyed_test

import (
	"testing"
	"time"

	shared "github.com/slidelimit/slidelimit/internal/oracle" // this file declares oracle
	"github.com/slidelimit/slidelimit/keyed"
)

// This file holds the references of the tests: the oracle for a keyed
// Limiter (below), and the test-only limiter: internal/oracle's exact sliding
// log behind a mutex (oracle.Sync), so that it cannot share a bug with ring/,
// with hooks that let a test stop a call in the middle of a decision.

// naive implements keyed.PerKey, the part of the contract keyed uses.
type naive struct {
	// Hooks, set before the limiter is shared: beforeAllow runs at the start
	// of AllowN, afterAllow after it recorded its decision (with the mutex
	// released), inIdle at the start of IdleAt and afterIdle at its end.
	beforeAllow, afterAllow func(now time.Time, n int, allowed bool)
	inIdle                  func(now time.Time)
	afterIdle               func(now time.Time, idle bool)

	log *shared.Sync // instants measured from the Unix epoch
}

func newNaive(limit int, window time.Duration) *naive {
	return &naive{log: shared.NewSync(time.Unix(0, 0), shared.NewLog(shared.R(limit, window)))}
}

func (l *naive) AllowN(now time.Time, n int) bool {
	if l.beforeAllow != nil {
		l.beforeAllow(now, n, false)
	}
	ok := l.log.AllowN(now, n)
	if l.afterAllow != nil {
		l.afterAllow(now, n, ok)
	}
	return ok
}

func (l *naive) TokensAt(now time.Time) int { return l.log.TokensAt(now) }

func (l *naive) ReadyAt(now time.Time, n int) (time.Time, bool) { return l.log.ReadyAt(now, n) }

func (l *naive) IdleAt(now time.Time) bool {
	if l.inIdle != nil {
		l.inIdle(now)
	}
	idle := l.log.IdleAt(now)
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
