package keyed

import (
	"sync/atomic"
	"time"
)

// bound is what Limiter and Window share besides their maps: the instant
// floor that sweeps raise, the count of keys held against MaxKeys, and the
// throttle of automatic sweeps.
type bound struct {
	maxKeys int64
	// floor is the latest instant given to a sweep, nil before the first. It
	// only grows (CAS). Calls clamp their instant up to it after looking
	// their key up.
	floor atomic.Pointer[time.Time]

	// n is written each time a key is created or removed, which a flood of
	// new keys does all the time: keep it off the cache line every call
	// reads.
	_ [cacheLine]byte

	// n counts the keys present plus the keys being created. A creator
	// reserves a slot (a CAS that keeps n <= maxKeys) before building the
	// key, and gives it back if that fails or panics or another call
	// stored the key first; a remover releases the slot after removing. So
	// the map never holds more than maxKeys entries.
	n atomic.Int64

	// autoSweeping is true while an automatic sweep runs; nextAuto is only
	// stored by the goroutine that set it.
	autoSweeping atomic.Bool
	// nextAuto is the earliest call instant at which a full Limiter may sweep
	// on its own again; nil means at once.
	nextAuto atomic.Pointer[time.Time]
	// perKey is what an automatic sweep is taken to cost per key held, in
	// 1/1024 ns (0 before the first), for pacing the next one: the cost
	// measured, but at most twice the previous estimate. A goroutine
	// preempted mid-sweep stretches the measured time without using the
	// CPU, and on a loaded machine that can hold the next sweep back for
	// seconds while a full store refuses new keys; a real rise in cost
	// (more keys, colder caches) is followed by doubling. Only the
	// goroutine running an automatic sweep reads or writes it.
	perKey int64
}

// clamp returns now, or the latest sweep's instant if that is later.
func (b *bound) clamp(now time.Time) time.Time {
	if f := b.floor.Load(); f != nil && now.Before(*f) {
		return *f
	}
	return now
}

// raiseFloor records now as the earliest instant calls are decided at, unless
// a later one is recorded, and returns the floor.
func (b *bound) raiseFloor(now time.Time) time.Time {
	for {
		f := b.floor.Load()
		if f != nil && !now.After(*f) {
			return *f
		}
		t := now
		if b.floor.CompareAndSwap(f, &t) {
			return now
		}
	}
}

// reserve takes one of the maxKeys slots, if one is free. A refused
// reservation writes nothing.
func (b *bound) reserve() bool {
	for {
		c := b.n.Load()
		if c >= b.maxKeys {
			return false
		}
		if b.n.CompareAndSwap(c, c+1) {
			return true
		}
	}
}

// full reports whether no slot is free for a new key.
func (b *bound) full() bool { return b.n.Load() >= b.maxKeys }

// sweepClock times automatic sweeps for their pacing: the real clock, which
// two stores given the same calls do not share; tests that compare such
// stores call for call replace it (export_test.go).
var sweepClock = time.Now

// sweepWhenFull runs sweep at now unless another automatic sweep is running
// or the last one was too recent, and reports whether it removed any key.
func (b *bound) sweepWhenFull(now time.Time, sweep func(time.Time) int) bool {
	if next := b.nextAuto.Load(); next != nil && now.Before(*next) {
		return false
	}
	if !b.autoSweeping.CompareAndSwap(false, true) {
		return false
	}
	defer b.autoSweeping.Store(false)
	if next := b.nextAuto.Load(); next != nil && now.Before(*next) {
		return false
	}
	keys := max(b.n.Load(), 1)
	start := sweepClock()
	removed := sweep(now)
	took := sweepClock().Sub(start)
	// At least one nanosecond: a second sweep at the same instant would
	// find nothing the first one left.
	next := now.Add(max(autoSweepGap*b.paced(took, keys), 1))
	b.nextAuto.Store(&next)
	return removed > 0
}

// paced records an automatic sweep over keys keys that took took, and
// returns the duration the next one is paced by: took, or less if took is
// more than twice the previous estimate per key (see perKey).
func (b *bound) paced(took time.Duration, keys int64) time.Duration {
	per := int64(min(took, 1<<50)) << 10 / keys // 13 days: no overflow
	if b.perKey > 0 && per > 2*b.perKey {
		per = 2 * b.perKey
	}
	b.perKey = max(per, 1)
	return time.Duration(min(per*keys>>10, int64(took)))
}
