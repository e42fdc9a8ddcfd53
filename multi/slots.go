package multi

import (
	"math/bits"
	"runtime"
	"sync/atomic"
)

// This file is Approx's slot table: where its snapshots live, how a caller
// takes a free slot for the next one, and how a reader validates the one it
// read.

// The protocol, in short (docs/multi.md has the details and the proofs):
// the counters of all rules form a snapshot that lives in a slot of a
// preallocated slot table. The head word names the current slot and carries
// a tag that grows with every admission. A caller reads the head, reads the
// slot, and checks that the slot still holds that tag (the tag in the slot's
// state word works as a seqlock: a slot taken for reuse gets a new tag
// first). A refused call stops there, having written nothing. An admitted
// call takes a free slot, writes the next snapshot into it, and installs it
// with one compare-and-swap on the head: the linearization point of the
// whole decision, for every rule at once. The superseded slot is then
// released. Nobody waits for another caller: a failed compare-and-swap means
// another admission succeeded, and when every slot is taken (callers
// suspended mid-admission) the table grows, up to 4094 slots; only with 4093
// callers suspended mid-admission would a caller yield until one resumes.

// Head word layout (high to low):
//
//	bits 12..63  tag: version of the current snapshot, never 0 (0 marks a
//	             slot being written); grows by one per admission
//	bits 0..11   idx: the slot holding it
//
// Slot layout, stride words (a multiple of 8, so that two slots share at
// most one cache line):
//
//	word 0          state: tag<<1 | owned. tag is the version of the snapshot
//	                the slot holds or, while its owner writes it, the version
//	                it will hold (no head pairs that tag with this slot before
//	                the owner's compare-and-swap); owned is 1 while the slot is
//	                the head's or a caller's scratch, 0 when it is free
//	word 1+2i       start: the instant rule i's current window starts
//	                (int64 offset from base; twocount.StartNew at first)
//	word 2+2i       prev<<32 | curr of rule i (both <= MaxApproxLimit)
const (
	idxBits   = 12
	idxMask   = 1<<idxBits - 1
	tagMask   = 1<<(64-idxBits) - 1
	maxChunks = 11 // 2+4+...+2048 = 4094 slots < 1<<idxBits

	stateW = 0
	ruleW  = 1
	owned  = 1

	lowMask = 1<<32 - 1
)

// slot returns the words of slot idx. Its chunk exists: idx came from the
// head or from acquire.
func (a *Approx) slot(idx uint64) []atomic.Uint64 {
	c := uint(bits.Len64(idx+2)) - 2
	off := idx + 2 - 2<<c
	words := *a.chunks[c].Load()
	return words[off*a.stride : (off+1)*a.stride]
}

// acquire takes a free slot as scratch for the next snapshot, tagging it
// with tag (the tag the next snapshot will have), and grows the table when
// every slot is taken. It returns a nil slot, having taken none, when the
// only free slots carry tag or a later one and the head has moved on since
// the caller read it: the caller's compare-and-swap would fail anyway, and it
// starts again from the new head instead of growing the table. It never
// waits for another caller, except when all 4094 slots are taken, which needs
// that many callers suspended in the middle of an admission.
func (a *Approx) acquire(tag uint64) (uint64, []atomic.Uint64) {
	for {
		first := uint64(0)
		skipped := false // a free slot whose tag is not older than tag
		for c := range maxChunks {
			p := a.chunks[c].Load()
			size := uint64(2) << c
			if p == nil {
				if skipped && nextTag(a.head.Load()>>idxBits) != tag {
					return 0, nil
				}
				words := make([]atomic.Uint64, size*a.stride)
				words[stateW].Store(tag<<1 | owned)
				if a.chunks[c].CompareAndSwap(nil, &words) {
					return first, words[:a.stride]
				}
				p = a.chunks[c].Load()
			}
			words := *p
			for off := range size {
				s := words[off*a.stride : (off+1)*a.stride]
				// Taking a free slot also replaces its tag, so a
				// reader still looking at its old snapshot sees it go.
				// A slot's tag only ever grows: a free slot that
				// carries tag or a later one is skipped. Then no
				// reader validating against a tag this slot once
				// carried can see that tag come back while the slot
				// is rewritten (the caller's head is stale when it
				// meets such a slot: a head has carried a later tag).
				v := s[stateW].Load()
				if v&owned != 0 {
					continue
				}
				if !older(v>>1, tag) {
					skipped = true
					continue
				}
				if s[stateW].CompareAndSwap(v, tag<<1|owned) {
					return first + off, s
				}
			}
			first += size
		}
		runtime.Gosched()
	}
}

// nextTag is the tag after tag: tags run from 1 to tagMask and wrap to 1.
func nextTag(tag uint64) uint64 {
	if tag == tagMask {
		return 1
	}
	return tag + 1
}

// older reports whether a slot's tag a is older than tag b (a tag of a head
// to come): 0 (a slot never tagged) is older than every tag; otherwise a must
// be behind b by less than half the tag space, so that the order survives
// the wrap. A slot left free for 2^51 admissions looks newer until 2^51 more
// have passed, and is not taken meanwhile: the table has others.
func older(a, b uint64) bool {
	if a == 0 {
		return true
	}
	d := (b - a) & tagMask
	return d != 0 && d < 1<<51
}

// load reads the head and returns its tag and its slot. The caller reads the
// rules' words and then calls valid.
func (a *Approx) load() (h uint64, s []atomic.Uint64) {
	for {
		h = a.head.Load()
		s = a.slot(h & idxMask)
		if s[stateW].Load()>>1 == h>>idxBits {
			return h, s
		}
	}
}

// valid reports whether slot s still holds the snapshot of head h: every
// word read from it between load and valid belongs to that snapshot.
func valid(h uint64, s []atomic.Uint64) bool {
	return s[stateW].Load()>>1 == h>>idxBits
}
