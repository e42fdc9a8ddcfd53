// Package twoword is the lock-free state of one two-counter window, shared by
// package window (one limiter, each word on its own cache line) and by
// keyed.Window (one state per key, both words side by side): the window word,
// the count word, and the compare-and-swap protocol that keeps them
// consistent. The arithmetic is package twocount's; the protocol and its
// proofs are described in the repository's documentation of window, under
// "State and protocol".
//
// A state is the pair (at, cnt). A new state is (New(), 0). The functions
// take pointers to the two words, so that each caller lays them out as suits
// it. A state can be retired (Retire): from then on every function reports it
// dead and no call decides on it again, which is how keyed.Window evicts a
// key's state without a lock.
package twoword

import (
	"sync/atomic"

	"github.com/slidelimit/slidelimit/internal/twocount"
)

// The window word at. Bits, high to low:
//
//	bits 63..2  start: first instant of the current window, a signed
//	            62-bit nanosecond offset (twocount.StartNew in a new
//	            state). It only increases.
//	bit  1      roll: start was reached by a rollover (start = the old
//	            start + window), so the old curr becomes prev; if 0,
//	            start is a new anchor and both counters restart at 0
//	bit  0      parity: flips each time start changes
//
// at changes only by a compare-and-swap from a state whose counters are
// installed (cnt's generation parity equals at's parity).
//
// The count word cnt. Bits, high to low:
//
//	bit  63     dead: the state was retired; nothing decides on it again
//	bits 62..40 gen: generation, +1 (mod 2^23) each time the counters are
//	            installed for a new start
//	bits 39..20 prev: cost admitted in the window before start
//	bits 19..0  curr: cost admitted since start
//
// When gen's parity differs from at's parity, start has moved and the
// counters are still those of the old window: any caller installs the new
// ones (install) before deciding. Admissions add n to curr by a
// compare-and-swap on cnt alone. Retiring sets dead by a compare-and-swap on
// cnt alone, from an installed idle state.
const (
	CountBits = 20
	CountMask = 1<<CountBits - 1
	GenShift  = 2 * CountBits // the generation occupies bits 62..40 of cnt
	GenBits   = 23
	GenMask   = 1<<GenBits - 1

	rollBit = 2 // in at: start was reached by a rollover
	deadBit = 1 << 63
)

// The counters hold twocount's largest limit (array lengths must be
// non-negative).
var _ [CountMask - twocount.MaxLimit]struct{}

// New returns the window word of a state that has admitted nothing; its count
// word is 0.
func New() uint64 { return PackAt(twocount.StartNew, false, 0) }

// Allow decides a call of cost n at offset off (clamped here) on the state
// (at, cnt) under rule r, and records it if admitted. It reports dead, having
// decided nothing, if the state is retired. n <= 0 is admitted iff n == 0,
// and n above the limit is refused, without reading the state.
func Allow(at, cnt *atomic.Uint64, r *twocount.Rule, off int64, n int) (admitted, dead bool) {
	admitted, dead, _ = Decide(at, cnt, r, off, n)
	return admitted, dead
}

// Seen is the state a decision was made on: the instant t it decided at, the
// window start in effect at t and its counters, curr including the decision's
// own cost when it was admitted. Its zero value means the decision read no
// state (n <= 0, n above the limit, or a dead state).
type Seen struct {
	T, Start, Prev, Curr int64
}

// Decide is Allow, and also returns the state the decision was made on, so
// that a caller can report what remains and when the cost would fit from the
// very snapshot it was decided on, without reading the state again.
//
// Each round takes a consistent snapshot of both words; when start has moved
// and its counters are not installed yet, it installs them and starts again,
// so it always decides on installed counters. A call that does not fit
// returns without writing. A call that fits first brings the state up to its
// instant (a rollover or a new anchor, one compare-and-swap on at), then adds
// n to curr. Every write is a compare-and-swap against the snapshot, so a
// round whose snapshot went stale writes nothing and retries. (A call can
// move start and then find the room taken: see the documentation of window,
// "Races".)
func Decide(at, cnt *atomic.Uint64, r *twocount.Rule, off int64, n int) (admitted, dead bool, s Seen) {
	if n <= 0 {
		return n == 0, false, s
	}
	k := int64(n)
	if k > r.Limit {
		return false, false, s
	}
	t0 := twocount.Clamp(off)
	for {
		// The snapshot, written out here because Snapshot is over the
		// inlining budget and this is the hot path.
		a := at.Load()
		c := cnt.Load()
		if at.Load() != a {
			continue
		}
		if c&deadBit != 0 {
			return false, true, s
		}
		if (c>>GenShift)&1 != a&1 {
			// Start has moved and its counters are not installed yet:
			// install them before deciding anything (see Snapshot).
			cnt.CompareAndSwap(c, install(a, c))
			continue
		}
		// r.View, written out: it is over the inlining budget.
		t := max(t0, StartOf(a))
		ws, p, q, adv := r.Step(StartOf(a), PrevOf(c), CurrOf(c), t)
		if !r.Fits(p, q, t-ws, k) {
			return false, false, Seen{T: t, Start: ws, Prev: p, Curr: q}
		}
		switch {
		case adv == twocount.Roll:
			at.CompareAndSwap(a, PackAt(ws, true, a&1^1))
		case adv == twocount.Anchor:
			at.CompareAndSwap(a, PackAt(ws, false, a&1^1))
		default:
			if cnt.CompareAndSwap(c, c+uint64(k)) {
				return true, false, Seen{T: t, Start: ws, Prev: p, Curr: q + k}
			}
		}
	}
}

// Snapshot returns the window word a and the count word c, read while at held
// a and installed for a's start, or dead if the state is retired. A caller
// that finds start moved and its counters not installed yet installs them
// first (whoever it is, a reader too): so every decision is made on installed
// counters, and an increment decided on the window before the move can land
// only while no one has decided on the window after it. Reading at twice
// suffices: start only increases, so at never returns to an earlier value,
// and c was read while at held a.
func Snapshot(at, cnt *atomic.Uint64) (a, c uint64, dead bool) {
	for {
		a = at.Load()
		c = cnt.Load()
		if at.Load() != a {
			continue
		}
		if c&deadBit != 0 {
			return a, c, true
		}
		if (c>>GenShift)&1 == a&1 {
			return a, c, false
		}
		cnt.CompareAndSwap(c, install(a, c))
	}
}

// View returns the instant t offset off is decided at (clamped, and no
// earlier than start), the window start in effect at t and its counters, or
// dead if the state is retired.
func View(at, cnt *atomic.Uint64, r *twocount.Rule, off int64) (t, ws, p, c int64, dead bool) {
	a, ci, dead := Snapshot(at, cnt)
	if dead {
		return 0, 0, 0, 0, true
	}
	t, ws, p, c, _ = r.View(StartOf(a), PrevOf(ci), CurrOf(ci), off)
	return t, ws, p, c, false
}

// Idle reports whether the state carries no information at offset off
// (twocount.Rule.Idle), or dead if it is retired.
func Idle(at, cnt *atomic.Uint64, r *twocount.Rule, off int64) (idle, dead bool) {
	a, _, dead := Snapshot(at, cnt)
	if dead {
		return false, true
	}
	return r.Idle(StartOf(a), off), false
}

// Retire marks the state dead if it is idle at offset off, and reports
// whether it did. It is one compare-and-swap on cnt from the snapshot it
// judged idle: an admission is a compare-and-swap on cnt too, so either the
// admission lands first (and Retire's fails, keeping the state) or Retire
// lands first (and the admission's fails and sees the state dead). A state
// that is already dead is not retired again (false).
func Retire(at, cnt *atomic.Uint64, r *twocount.Rule, off int64) bool {
	for {
		a, c, dead := Snapshot(at, cnt)
		if dead || !r.Idle(StartOf(a), off) {
			return false
		}
		if cnt.CompareAndSwap(c, c|deadBit) {
			return true
		}
		// cnt moved: an admission, an install or another retirement.
		// Judge again.
	}
}

// install returns the count word for the start in a, given the count word c
// of the window before it: the next generation, with prev = the old curr
// after a rollover and zero after a new anchor, and curr = 0.
func install(a, c uint64) uint64 {
	next := (((c >> GenShift) + 1) & GenMask) << GenShift
	if a&rollBit != 0 {
		next |= (c & CountMask) << CountBits
	}
	return next
}

// PackAt returns the window word for start, whether it was reached by a
// rollover, and the parity bit.
func PackAt(start int64, roll bool, parity uint64) uint64 {
	a := uint64(start)<<2 | parity
	if roll {
		a |= rollBit
	}
	return a
}

// StartOf, PrevOf and CurrOf unpack the window start from a window word and
// the counters from a count word.
func StartOf(a uint64) int64 { return int64(a) >> 2 }
func PrevOf(c uint64) int64  { return int64(c>>CountBits) & CountMask }
func CurrOf(c uint64) int64  { return int64(c) & CountMask }

// Kill marks the state dead whatever it holds, unless it is dead already, and
// reports whether it did. Like Retire it is one compare-and-swap on cnt, so
// every admission lands either before it (and is dropped with the state) or
// after it (and fails, seeing the state dead).
func Kill(cnt *atomic.Uint64) bool {
	for {
		c := cnt.Load()
		if c&deadBit != 0 {
			return false
		}
		if cnt.CompareAndSwap(c, c|deadBit) {
			return true
		}
	}
}

// Dead reports whether the count word c belongs to a retired or killed state.
func Dead(c uint64) bool { return c&deadBit != 0 }
