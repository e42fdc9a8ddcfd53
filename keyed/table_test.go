package keyed

import (
	"strings"
	"testing"
	"time"
	"unsafe"
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
