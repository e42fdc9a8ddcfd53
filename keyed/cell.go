package keyed

import (
	"reflect"
	"strings"
	"unsafe"

	"github.com/slidelimit/slidelimit/internal/twoword"
)

// stringKeys reports whether keys of type K are strings (K's underlying type
// is string), whose bytes a Window copies into each key's cell and a Limiter
// into a string of its own.
func stringKeys[K comparable]() bool { return reflect.TypeFor[K]().Kind() == reflect.String }

// cloneString returns a copy of key, whose type K is a string type, that
// shares no bytes with it: what a Limiter stores for a new key, so that it
// never keeps a caller's larger string alive through a key cut from it.
func cloneString[K comparable](key K) K {
	s := strings.Clone(*(*string)(unsafe.Pointer(&key)))
	return *(*K)(unsafe.Pointer(&s))
}

// inlineMax is the longest key whose bytes newCell copies into the cell's
// own allocation, right after the cell.
const inlineMax = 96

// sameKey reports whether c holds key. When inline is true (K is a string
// type and c was made by newCell), a key of 1 to inlineMax bytes is compared
// with the bytes right after the cell, whose address is known from c alone:
// the processor can load them while it loads the cell's first line, instead
// of waiting for the string's pointer from that line (when a 48-byte cell
// lies across two cache lines, which half of them do, that wait is a second
// dependent miss).
func sameKey[K comparable](c *cell[K], key K, inline bool) bool {
	if !inline {
		return c.key == key
	}
	k := *(*string)(unsafe.Pointer(&key))
	n := len(*(*string)(unsafe.Pointer(&c.key)))
	if n != len(k) {
		return false
	}
	if n == 0 || n > inlineMax {
		return c.key == key
	}
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(c), unsafe.Sizeof(*c))), n) == k
}

// newCell returns a cell holding key and a new state. If copyKey is true (K
// is a string type), the key's bytes are copied into the cell's own
// allocation when they fit in a few size classes (up to 96 bytes), and into
// a copy of their own otherwise. So comparing a caller's key with a cell's
// reads the cache line the cell's state is on, not wherever the caller's
// first string for that key lay; and a key cut from a larger string (a
// header, a request line) does not keep that string alive.
func newCell[K comparable](key K, copyKey bool) *cell[K] {
	if !copyKey {
		c := &cell[K]{key: key}
		c.at.Store(twoword.New())
		return c
	}
	s := *(*string)(unsafe.Pointer(&key))
	var c *cell[K]
	var buf []byte
	// Each size, with the cell's 32 bytes, fills a size class of the
	// allocator (48, 64, 80 and 128 bytes).
	switch n := len(s); {
	case n == 0:
		c = &cell[K]{key: key}
	case n <= 16:
		c, buf = cellWithBytes[K, [16]byte](n)
	case n <= 32:
		c, buf = cellWithBytes[K, [32]byte](n)
	case n <= 48:
		c, buf = cellWithBytes[K, [48]byte](n)
	case n <= inlineMax:
		c, buf = cellWithBytes[K, [inlineMax]byte](n)
	default:
		c = &cell[K]{}
		buf = make([]byte, n)
	}
	if buf != nil {
		copy(buf, s)
		// The bytes are written once, here, before the string exists, and
		// never again.
		*(*string)(unsafe.Pointer(&c.key)) = unsafe.String(&buf[0], len(buf))
	}
	c.at.Store(twoword.New())
	return c
}

// cellWithBytes allocates a cell followed by the byte array B, in one
// allocation, and returns the cell and the first n bytes of the array.
func cellWithBytes[K comparable, B any](n int) (*cell[K], []byte) {
	f := new(struct {
		c cell[K]
		b B
	})
	return &f.c, unsafe.Slice((*byte)(unsafe.Pointer(&f.b)), unsafe.Sizeof(f.b))[:n]
}
