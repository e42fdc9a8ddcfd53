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
// every slot is taken. It never waits for another caller, except
// when all 4094 slots are taken, which needs that many callers suspended in
// the middle of an admission.
func (a *Approx) acquire(tag uint64) (uint64, []atomic.Uint64) {
	for {
		first := uint64(0)
		for c := range maxChunks {
			p := a.chunks[c].Load()
			size := uint64(2) << c
			if p == nil {
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
				// A free slot that already carries tag is skipped: a
				// head paired that tag with it, so the caller's head
				// is stale (the head has moved past tag since), and a
				// reader of that head, still validating against tag,
				// would take the caller's writes for its snapshot.
				if v := s[stateW].Load(); v&owned == 0 && v>>1 != tag && s[stateW].CompareAndSwap(v, tag<<1|owned) {
					return first + off, s
				}
			}
			first += size
		}
		runtime.Gosched()
	}
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
