package keyed

import "time"

// Sweep removes every key whose limiter is idle at now (IdleAt(now) is
// true), and returns how many it removed. Removing an idle key changes no
// decision at instants >= now, and Sweep records now so that no later call
// is decided at an earlier instant (see the package documentation). A now
// earlier than an earlier sweep's instant is replaced by that instant.
//
// Sweep visits each key once and calls IdleAt with no lock held; it takes
// the map's lock for one key only to remove it. Calls on other keys proceed
// meanwhile; a call on a key whose limiter a sweep is asking a second time
// (after a first IdleAt said idle) waits for that answer. Keys created during
// the sweep may or may not be visited. Sweeps may run concurrently; each key
// is inspected by one of them at a time. If IdleAt panics, the panic reaches
// Sweep's caller and the key being inspected stays.
func (k *Limiter[K, L]) Sweep(now time.Time) int {
	k.mustBeMade()
	return k.sweep(now)
}

// sweep is Sweep.
func (k *Limiter[K, L]) sweep(now time.Time) int {
	now = k.raiseFloor(now) // before any removal: see allowN
	// Keys are checked in batches: loading the limiters of a batch first
	// lets the processor overlap their cache misses, which dominate the
	// cost of a sweep over more keys than the cache holds.
	var (
		keys    [sweepBatch]K
		entries [sweepBatch]*entry[L]
		lims    [sweepBatch]L
		b       int
		removed int
	)
	flush := func() {
		for i := range b {
			lims[i] = entries[i].lim
		}
		for i := range b {
			if lims[i].IdleAt(now) && k.evictIfIdle(keys[i], entries[i], now) {
				removed++
			}
		}
		clear(keys[:b]) // keep no key alive longer than the sweep needs
		b = 0
	}
	k.keys.rangeAll(func(key K, e *entry[L]) bool {
		keys[b], entries[b] = key, e
		if b++; b == sweepBatch {
			flush()
		}
		return true
	})
	flush()
	return removed
}

// sweepBatch is how many keys a sweep checks together.
const sweepBatch = 32

// evictIfIdle removes key if its entry is still e and e's limiter is idle at
// now, with the protocol described on allowN: e is marked sweeping, its
// limiter asked again with no lock held, and e marked dead and removed under
// the map's lock for key (where no user code runs).
func (k *Limiter[K, L]) evictIfIdle(key K, e *entry[L], now time.Time) bool {
	if !e.state.CompareAndSwap(live, sweeping) {
		return false // dead, or another sweep holds it
	}
	settled := false
	defer func() {
		if !settled {
			// Not idle, or IdleAt panicked: e stays live, unless Delete
			// made it dead meanwhile.
			e.state.CompareAndSwap(sweeping, live)
		}
	}()
	if !e.lim.IdleAt(now) {
		return false
	}
	removed := k.keys.deleteIf(key, func(cur *entry[L]) bool {
		return cur == e && e.state.CompareAndSwap(sweeping, dead)
	})
	settled = removed
	if removed {
		k.n.Add(-1)
	}
	return removed
}

// Delete removes key and its limiter, forgetting its admissions: the next
// call on key starts from a fresh limiter. Unlike a sweep, Delete may change
// decisions; use it when a key is retired or its limit must be reset. A call
// deciding on key concurrently is decided on the limiter left in the map
// afterwards, as with a sweep. Deleting an absent key, or one not equal to
// itself, does nothing.
func (k *Limiter[K, L]) Delete(key K) {
	k.mustBeMade()
	if !k.validKey(key) {
		return
	}
	removed := k.keys.deleteIf(key, func(e *entry[L]) bool {
		e.state.Store(dead)
		return true
	})
	if removed {
		k.n.Add(-1)
	}
}
