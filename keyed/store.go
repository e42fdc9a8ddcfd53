package keyed

// This file is the only one that imports xsync: a move to another concurrent
// map (xsync v4, sync.Map, a sharded map) changes this file and nothing else.
// The rest of the package relies on these properties of the map:
//   - load is lock-free and allocates nothing;
//   - loadOrStore and deleteIf take a lock that serializes them with every
//     other loadOrStore and deleteIf on the same key, so a key is stored at
//     most once and a value is removed only by the function that saw it;
//     deleteIf runs its function under that lock, so the package passes it
//     no user code;
//   - rangeAll holds no lock while it calls f, so f may call any method.

import "github.com/puzpuzpuz/xsync/v3"

// store maps keys to values; V is always a pointer in this package.
type store[K comparable, V comparable] struct {
	m *xsync.MapOf[K, V]
}

func newStore[K comparable, V comparable]() store[K, V] {
	return store[K, V]{m: xsync.NewMapOf[K, V]()}
}

// load returns the value for key, if any.
func (s store[K, V]) load(key K) (V, bool) { return s.m.Load(key) }

// loadOrStore returns the value for key and true if present; otherwise it
// stores v and returns v and false.
func (s store[K, V]) loadOrStore(key K, v V) (actual V, loaded bool) {
	return s.m.LoadOrStore(key, v)
}

// deleteIf calls remove with key's value, if key is present, under the key's
// lock, and removes the key if remove returns true. It reports whether it
// removed the key.
func (s store[K, V]) deleteIf(key K, remove func(V) bool) (removed bool) {
	s.m.Compute(key, func(cur V, loaded bool) (V, bool) {
		if !loaded {
			return cur, true // nothing stored: "delete" is a no-op
		}
		if !remove(cur) {
			return cur, false
		}
		removed = true
		return cur, true
	})
	return removed
}

// rangeAll calls f for the entries of the map, as xsync's Range does: no key
// is visited twice; a key stored or removed during the call may or may not be
// visited. It stops when f returns false.
func (s store[K, V]) rangeAll(f func(K, V) bool) { s.m.Range(f) }
