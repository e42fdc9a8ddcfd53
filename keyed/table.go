package keyed

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/slidelimit/slidelimit/internal/twoword"
)

// cell is one key's state in a Window: its two-counter window (package
// twoword's two words, side by side: per-key contention is rare, and padding
// each key's words apart would cost two cache lines per key) and its key. A
// cell is written only through the two words; its key never changes. A cell
// whose state is dead has left, or is leaving, the table: nothing decides on
// it again.
type cell[K comparable] struct {
	at, cnt atomic.Uint64
	key     K
}

// dead reports whether c's state was retired (by a sweep) or killed (by
// Delete).
func (c *cell[K]) dead() bool { return twoword.Dead(c.cnt.Load()) }

// table maps keys to cells. It is an open-addressing hash table cut into
// shards by the hash's top bits, each shard an array of slots probed
// linearly. Lookups take no lock: they read the shard's current array, then
// the slots from the key's home slot on. Insertions, removals and the
// rebuilding of an array take the shard's mutex; no user code runs under it.
//
// Why lookups need no lock: a slot's hash is stored after its cell, and a
// slot is never emptied while its array is current (a removed cell leaves a
// tombstone: the hash stays, the cell becomes nil), so a probe that reaches
// an empty slot has passed every slot where its key could be. A rebuild
// copies the cells (not their state: a cell never moves) into a new array
// and publishes it; the old array is never written again, so a lookup still
// reading it sees a consistent, if dated, table: a cell it finds there is the
// same object as in the new array, or a dead one (removed since), which
// lookups skip. A key inserted after a lookup loaded the array may be missed;
// the caller then takes the shard's mutex to insert it and finds it there.
type table[K comparable] struct {
	seed maphash.Seed
	// inline: K is a string type, and each cell holds a copy of its key's
	// bytes (newCell).
	inline bool
	shards [shardCount]shard[K]
}

const (
	shardBits  = 8
	shardCount = 1 << shardBits

	minSlots = 8
	// An array is rebuilt when its slots with a hash (cells and tombstones)
	// would exceed maxLoad percent, or its cells fall below minLoad percent;
	// a rebuilt array has its cells at rebuildLoad percent. With linear
	// probing, a lookup for a present key then reads about 1.5 to 3 slots
	// (16 bytes each, so mostly one cache line) on average.
	maxLoad     = 80
	minLoad     = 20
	rebuildLoad = 55
)

// shard is one part of a table, on cache lines of its own.
type shard[K comparable] struct {
	slots atomic.Pointer[slots[K]] // nil until the first insertion

	mu   sync.Mutex
	used int // slots with a hash in the current array: cells and tombstones
	live int // slots with a cell in the current array
	_    [cacheLine - 8 - 8 - 2*8]byte
}

// slots is one array of a shard.
type slots[K comparable] struct {
	s []slot[K]
}

// slot is one place in an array: empty (hash 0), a cell and its key's hash,
// or a tombstone (a hash and a nil cell).
type slot[K comparable] struct {
	hash atomic.Uint64
	cell atomic.Pointer[cell[K]]
}

func newTable[K comparable](inline bool) *table[K] {
	return &table[K]{seed: maphash.MakeSeed(), inline: inline}
}

// hash returns key's hash, never 0 (the mark of an empty slot).
func (t *table[K]) hash(key K) uint64 {
	return max(maphash.Comparable(t.seed, key), 1)
}

// shardOf returns the shard for hash h: its top bits.
func (t *table[K]) shardOf(h uint64) *shard[K] {
	return &t.shards[h>>(64-shardBits)]
}

// home returns the first slot probed for hash h in an array of n slots: the
// bits below the shard's, scaled to [0, n) by a multiplication, so that n
// need not be a power of two.
func home(h uint64, n int) int {
	hi, _ := bits.Mul64(h<<shardBits, uint64(n))
	return int(hi)
}

// find returns key's cell, or nil if key is absent or its cell is dead. It
// takes no lock and writes nothing.
func (t *table[K]) find(h uint64, key K) *cell[K] {
	arr := t.shardOf(h).slots.Load()
	if arr == nil {
		return nil
	}
	s := arr.s
	for i := home(h, len(s)); ; {
		x := &s[i]
		xh := x.hash.Load()
		if xh == 0 {
			return nil
		}
		if xh == h {
			if c := x.cell.Load(); c != nil && sameKey(c, key, t.inline) {
				if c.dead() {
					return nil
				}
				return c
			}
		}
		if i++; i == len(s) {
			i = 0
		}
	}
}

// loadOrInsert returns key's cell and true if key is present; otherwise it
// inserts c (whose key is key) and returns c and false.
func (t *table[K]) loadOrInsert(h uint64, c *cell[K]) (actual *cell[K], loaded bool) {
	sh := t.shardOf(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	free := -1 // the first tombstone on key's probe sequence
	if arr := sh.slots.Load(); arr != nil {
		s := arr.s
		for i := home(h, len(s)); ; {
			x := &s[i]
			xh := x.hash.Load()
			if xh == 0 {
				break
			}
			cur := x.cell.Load()
			if cur == nil || cur.dead() {
				// A tombstone. (The current array holds no dead cell, see
				// removeLocked; were one left, it would be treated as
				// the tombstone it should be.)
				if free < 0 {
					free = i
				}
			} else if xh == h && cur.key == c.key {
				return cur, true
			}
			if i++; i == len(s) {
				i = 0
			}
		}
	}
	arr := sh.slots.Load()
	if free < 0 && (arr == nil || (sh.used+1)*100 > len(arr.s)*maxLoad) {
		arr = sh.rebuild(sh.live + 1)
	}
	s := arr.s
	if free < 0 {
		for free = home(h, len(s)); s[free].hash.Load() != 0; {
			if free++; free == len(s) {
				free = 0
			}
		}
		sh.used++
	}
	// The cell before the hash: a lookup that sees the hash sees the cell.
	// A lookup that sees a tombstone's old hash with the new cell compares
	// keys and goes on.
	if s[free].cell.Load() != nil {
		sh.live-- // a dead cell left in place, replaced (see above)
	}
	s[free].cell.Store(c)
	s[free].hash.Store(h)
	sh.live++
	return c, false
}

// removeLocked removes cell c, whose key hashes to h, from its shard's
// current array, if it is there. The caller holds the shard's mutex and has
// made c dead under it, so the current array never holds a dead cell.
func (sh *shard[K]) removeLocked(h uint64, c *cell[K]) bool {
	arr := sh.slots.Load()
	if arr == nil {
		return false
	}
	s := arr.s
	for i := home(h, len(s)); ; {
		x := &s[i]
		if x.hash.Load() == 0 {
			return false
		}
		if x.cell.Load() == c {
			x.cell.Store(nil) // a tombstone: the hash stays
			sh.live--
			if len(s) > minSlots && sh.live*100 < len(s)*minLoad {
				sh.rebuild(sh.live)
			}
			return true
		}
		if i++; i == len(s) {
			i = 0
		}
	}
}

// rebuild publishes a new array for the shard's cells, sized for need cells
// at rebuildLoad percent, and returns it. The caller holds the mutex.
func (sh *shard[K]) rebuild(need int) *slots[K] {
	n := max(minSlots, need*100/rebuildLoad+1)
	next := &slots[K]{s: make([]slot[K], n)}
	live := 0
	if arr := sh.slots.Load(); arr != nil {
		for i := range arr.s {
			x := &arr.s[i]
			c := x.cell.Load()
			if c == nil || c.dead() {
				continue // a dead cell is dropped, as a tombstone is
			}
			live++
			h := x.hash.Load()
			j := home(h, n)
			for next.s[j].hash.Load() != 0 {
				if j++; j == n {
					j = 0
				}
			}
			next.s[j].cell.Store(c)
			next.s[j].hash.Store(h)
		}
	}
	sh.live, sh.used = live, live
	sh.slots.Store(next)
	return next
}

// rangeShard calls f with each live cell in shard i's current array, with no
// lock held, until f returns false; it reports whether f never did. (It does
// not pass the slot's hash: a slot being reused holds the new cell with the
// old hash for a moment.)
func (t *table[K]) rangeShard(i int, f func(c *cell[K]) bool) bool {
	arr := t.shards[i].slots.Load()
	if arr == nil {
		return true
	}
	for j := range arr.s {
		x := &arr.s[j]
		c := x.cell.Load()
		if c == nil || c.dead() {
			continue
		}
		if !f(c) {
			return false
		}
	}
	return true
}

// liveCells appends to buf the live cells of shard i's current array, read
// under the shard's lock, and returns it. Range visits these rather than the
// array, which a removal and an insertion can change under it: a key removed
// and inserted again while Range runs could otherwise be met twice, in its
// old slot and then in a tombstone further on that its new cell took.
func (t *table[K]) liveCells(i int, buf []*cell[K]) []*cell[K] {
	sh := &t.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if arr := sh.slots.Load(); arr != nil {
		for j := range arr.s {
			if c := arr.s[j].cell.Load(); c != nil && !c.dead() {
				buf = append(buf, c)
			}
		}
	}
	return buf
}

// slotCount returns the number of slots in all current arrays (for tests and
// for the memory accounting in the documentation).
func (t *table[K]) slotCount() int {
	n := 0
	for i := range t.shards {
		if arr := t.shards[i].slots.Load(); arr != nil {
			n += len(arr.s)
		}
	}
	return n
}
