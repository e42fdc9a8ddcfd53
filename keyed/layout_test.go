package keyed

import (
	"testing"
	"unsafe"

	"github.com/slidelimit/slidelimit/ring"
)

// TestEntrySize: the Limiter's own cost per key, on top of the map's entry and
// the limiter, is one pointer and the state word (padded to a pointer).
func TestEntrySize(t *testing.T) {
	got := unsafe.Sizeof(entry[*ring.Limiter]{})
	if want := 2 * unsafe.Sizeof(uintptr(0)); got != want {
		t.Fatalf("size of entry = %d bytes, want %d", got, want)
	}
}

// TestLimiterLayout: the counter that key creation writes is on another cache
// line than the fields every call reads.
func TestLimiterLayout(t *testing.T) {
	var k Limiter[string, *ring.Limiter]
	if d := unsafe.Offsetof(k.n) - unsafe.Offsetof(k.floor); d < cacheLine {
		t.Fatalf("n is %d bytes after floor, want at least %d", d, cacheLine)
	}
}

// TestWindowLayout: in a Window too, the counter that key creation writes is
// on another cache line than the fields every call reads, the last of which
// is floor.
func TestWindowLayout(t *testing.T) {
	var w Window[string]
	if d := unsafe.Offsetof(w.n) - unsafe.Offsetof(w.floor); d < cacheLine {
		t.Fatalf("n is %d bytes after floor, want at least %d", d, cacheLine)
	}
	if unsafe.Offsetof(w.keys) > unsafe.Offsetof(w.floor) {
		t.Fatal("keys is after floor, on the line creations write")
	}
}
