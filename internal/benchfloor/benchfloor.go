// Package benchfloor is the floor every limiter benchmark of this module is
// measured against: one monotonic clock read plus one compare-and-swap on one
// shared word, the least a limiter that reads the clock and records a decision
// can do. Benchmarks run it in the same run as the limiters, labelled
// impl=floor, so that a ratio compares numbers taken under the same load.
//
// It is used by benchmarks only; it is a package (not a test file) so that
// every package's benchmarks, and the separate bench module, share one
// definition.
package benchfloor

import (
	"sync/atomic"
	"testing"
	"time"
)

// Floor is one shared word and the clock base its operation reads from. The
// zero Floor is not usable: use New. A Floor must not be copied after first
// use.
type Floor struct {
	// The word has a cache line to itself, as a limiter's hot word does.
	_     [64]byte
	word  atomic.Uint64
	_     [56]byte
	start time.Time
}

// New returns a Floor whose clock starts now.
func New() *Floor { return &Floor{start: time.Now()} }

// Allow is one floor operation: it reads the monotonic clock and adds the
// reading to the shared word with one load and one compare-and-swap, as a
// limiter's decision does. It reports whether the compare-and-swap won, which
// callers may count so that the work cannot be optimized away.
func (f *Floor) Allow() bool {
	d := uint64(time.Since(f.start))
	old := f.word.Load()
	return f.word.CompareAndSwap(old, old+d)
}

// sink keeps the results of Serial and Parallel alive.
var sink atomic.Int64

// Serial benchmarks the floor from one goroutine.
func Serial(b *testing.B) {
	f := New()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if f.Allow() {
			n++
		}
	}
	sink.Add(int64(n))
}

// Parallel benchmarks the floor from every P on one shared word.
func Parallel(b *testing.B) {
	f := New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			if f.Allow() {
				n++
			}
		}
		sink.Add(int64(n))
	})
}
