package keyed

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/slidelimit/slidelimit/internal/twoword"
)

// TestTableGrowsAndShrinks: the slots stay between minLoad and maxLoad
// percent full (beyond each shard's first minSlots), as keys come and go, and
// every key present is found.
func TestTableGrowsAndShrinks(t *testing.T) {
	const n = 50_000
	w, err := NewWindow[int](1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	check := func(keys int) {
		t.Helper()
		slots := w.keys.slotCount()
		if lo := keys * 100 / maxLoad; slots < lo {
			t.Errorf("%d keys in %d slots: above %d%% full", keys, slots, maxLoad)
		}
		if hi := keys*100/minLoad + shardCount*minSlots; slots > hi {
			t.Errorf("%d keys in %d slots: below %d%% full", keys, slots, minLoad)
		}
	}
	for k := range n {
		w.AllowN(k, t0, 1)
	}
	check(n)
	for k := range n {
		if w.keys.find(w.keys.hash(k), k) == nil {
			t.Fatalf("key %d not found", k)
		}
	}
	for k := range n - n/10 {
		w.Delete(k)
	}
	check(n / 10)
	if got := w.Sweep(t0.Add(2 * time.Second)); got != n/10 {
		t.Errorf("Sweep removed %d, want %d", got, n/10)
	}
	if got := w.keys.slotCount(); got > shardCount*minSlots {
		t.Errorf("%d slots left with no key, want at most %d", got, shardCount*minSlots)
	}
}

// TestCellKeyBytes: a string key's cell keeps its bytes where sameKey reads
// them, right after the cell, for every length it copies inline; and sameKey
// agrees with string comparison for keys of every length, equal or not.
func TestCellKeyBytes(t *testing.T) {
	for n := range 200 {
		key := strings.Repeat("k", n)
		c := newCell(strings.Clone(key), true)
		if c.key != key {
			t.Fatalf("length %d: the cell holds %q", n, c.key)
		}
		if n > 0 && n <= inlineMax {
			if got, want := unsafe.Pointer(unsafe.StringData(c.key)), unsafe.Add(unsafe.Pointer(c), unsafe.Sizeof(*c)); got != want {
				t.Fatalf("length %d: the key's bytes are at %p, want %p (right after the cell)", n, got, want)
			}
		}
		for _, other := range []string{key, key + "k", strings.TrimSuffix(key, "k"), strings.Repeat("j", n)} {
			if got, want := sameKey(c, other, true), c.key == other; got != want {
				t.Fatalf("sameKey(cell %q, %q) = %v, want %v", c.key, other, got, want)
			}
		}
	}
}

// sameHome returns count int keys of t that fall in one shard and share a
// home slot in an array of n slots.
func sameHome(t *table[int], count, n int) []int {
	byHome := map[[2]uint64][]int{}
	for k := 0; ; k++ {
		h := t.hash(k)
		id := [2]uint64{h >> (64 - shardBits), uint64(home(h, n))}
		byHome[id] = append(byHome[id], k)
		if len(byHome[id]) == count {
			return byHome[id]
		}
	}
}

// TestInsertFindsKeyPastTombstone: loadOrInsert, which a creator calls
// when its lock-free lookup missed the key (another creator inserted it
// meanwhile), must find a key stored past a tombstone on its probe path,
// not insert a second cell for it.
func TestInsertFindsKeyPastTombstone(t *testing.T) {
	tb := newTable[int](false)
	ks := sameHome(tb, 3, minSlots)
	cells := map[int]*cell[int]{}
	for _, k := range ks {
		c := newCell(k, false)
		if got, loaded := tb.loadOrInsert(tb.hash(k), c); loaded || got != c {
			t.Fatalf("insert %d: loaded=%v", k, loaded)
		}
		cells[k] = c
	}
	// Remove the first key: a tombstone at the shared home slot.
	h0 := tb.hash(ks[0])
	sh := tb.shardOf(h0)
	sh.mu.Lock()
	twoword.Kill(&cells[ks[0]].cnt)
	if !sh.removeLocked(h0, cells[ks[0]]) {
		t.Fatal("remove failed")
	}
	sh.mu.Unlock()
	for _, k := range ks[1:] {
		got, loaded := tb.loadOrInsert(tb.hash(k), newCell(k, false))
		if !loaded || got != cells[k] {
			t.Fatalf("key %d present past a tombstone: loadOrInsert inserted a second cell (loaded=%v)", k, loaded)
		}
		if f := tb.find(tb.hash(k), k); f != cells[k] {
			t.Fatalf("key %d: find returns another cell", k)
		}
	}
}

// TestTableChurnOneShard: many keys of one shard inserted and removed in
// turns (tombstones, growth, shrinking): every present key is found, once,
// and the counts stay right.
func TestTableChurnOneShard(t *testing.T) {
	tb := newTable[int](false)
	var ks []int
	for k := 0; len(ks) < 300; k++ {
		if tb.hash(k)>>(64-shardBits) == 7 {
			ks = append(ks, k)
		}
	}
	present := map[int]*cell[int]{}
	sh := &tb.shards[7]
	for round := 0; round < 40; round++ {
		for i, k := range ks {
			if (i+round)%3 == 0 {
				if c := present[k]; c != nil {
					sh.mu.Lock()
					twoword.Kill(&c.cnt)
					if !sh.removeLocked(tb.hash(k), c) {
						t.Fatalf("round %d: remove %d failed", round, k)
					}
					sh.mu.Unlock()
					delete(present, k)
					countsAgree(t, sh, round, k)
				}
			} else if present[k] == nil || round%5 == 0 {
				c := newCell(k, false)
				got, loaded := tb.loadOrInsert(tb.hash(k), c)
				if loaded != (present[k] != nil) {
					t.Fatalf("round %d key %d: loaded=%v, present=%v", round, k, loaded, present[k] != nil)
				}
				if loaded && got != present[k] {
					t.Fatalf("round %d key %d: another cell", round, k)
				}
				present[k] = got
				countsAgree(t, sh, round, k)
			}
		}
		live := 0
		tb.rangeShard(7, func(c *cell[int]) bool { live++; return true })
		if live != len(present) || sh.live != len(present) {
			t.Fatalf("round %d: %d cells ranged, live=%d, want %d", round, live, sh.live, len(present))
		}
		for _, k := range ks {
			if got := tb.find(tb.hash(k), k); got != present[k] {
				t.Fatalf("round %d: find(%d) = %p, want %p", round, k, got, present[k])
			}
		}
		arr := sh.slots.Load()
		if arr != nil && sh.used*100 > len(arr.s)*maxLoad {
			t.Fatalf("round %d: %d of %d slots used", round, sh.used, len(arr.s))
		}

	}
}

// countsAgree checks a shard's counts against its array, after an insert or
// a removal of key k: a count that drifts (an insert not counted in used,
// say) lets the array fill up, and then a probe never meets an empty slot
// and spins, which only a timeout would name.
func countsAgree(t *testing.T, sh *shard[int], round, k int) {
	t.Helper()
	arr := sh.slots.Load()
	if arr == nil {
		return
	}
	used, live := 0, 0
	for i := range arr.s {
		if arr.s[i].hash.Load() != 0 {
			used++
			if c := arr.s[i].cell.Load(); c != nil && !c.dead() {
				live++
			}
		}
	}
	if used != sh.used || live != sh.live || used == len(arr.s) {
		t.Fatalf("round %d, key %d: the array holds %d hashes and %d cells in %d slots; the shard counts %d and %d", round, k, used, live, len(arr.s), sh.used, sh.live)
	}
}

// TestProbeLengths: keys spread over each shard's array, so that a lookup
// for a present key reads about 1.5 to 3 slots on average at the table's 55
// to 80% load (the cost the layout argument of the documentation counts).
// A home computed from the bits that choose the shard (the same for every
// key of a shard) would pile each shard's keys up at one end of its array:
// a mean distance of about 200 slots here.
func TestProbeLengths(t *testing.T) {
	const n = 100_000
	w, err := NewWindow[int](1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	for k := range n {
		w.AllowN(k, t0, 1)
	}
	total, longest := 0, 0
	for k := range n {
		h := w.keys.hash(k)
		s := w.keys.shardOf(h).slots.Load().s
		i, d := home(h, len(s)), 0
		for s[i].cell.Load() == nil || s[i].cell.Load().key != k {
			if i++; i == len(s) {
				i = 0
			}
			if d++; d > len(s) {
				t.Fatalf("key %d not in its shard's array", k)
			}
		}
		total += d
		longest = max(longest, d)
	}
	// Linear probing at load a averages (1/(1-a) - 1)/2 slots past home
	// for a present key: 0.6 at 55%, 2 at 80%, the most the table allows.
	if mean := float64(total) / n; mean > 2.5 {
		t.Errorf("distance from home to a key's slot: mean %.2f over %d keys (longest %d); want at most 2.5", mean, n, longest)
	}
	t.Logf("distance from home: mean %.2f, longest %d", float64(total)/n, longest)
}
