package multi

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAcquireGrows takes every slot of the table, as callers suspended in
// the middle of an admission would, and checks that each acquire gets a
// distinct slot (growing the table) and that decisions stay correct.
func TestAcquireGrows(t *testing.T) {
	a, err := NewApprox(Rule{3, time.Second}, Rule{5, time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if !a.AllowN(t0, 1) {
		t.Fatal("first call refused")
	}
	seen := map[uint64]bool{a.head.Load() & idxMask: true}
	for range 100 {
		idx, s := a.acquire(a.head.Load()>>idxBits + 1)
		if seen[idx] {
			t.Fatalf("slot %d handed out twice", idx)
		}
		seen[idx] = true
		if &a.slot(idx)[0] != &s[0] {
			t.Fatalf("slot %d: acquire and slot disagree", idx)
		}
		// A suspended writer leaves the slot owned, tagged for the next head.
	}
	// 101 slots taken (the head and 100 scratch): chunks of 2, 4, ..., 64.
	if got := Slots(a); got != 126 {
		t.Errorf("table holds %d slots, want 126", got)
	}
	if !a.AllowN(t0, 2) || a.AllowN(t0, 1) {
		t.Error("decisions changed after the table grew")
	}
	if got := a.RemainingAt(t0, nil); len(got) != 2 || got[0] != 0 || got[1] != 2 {
		t.Errorf("RemainingAt = %v, want [0 2]", got)
	}
}

// TestSlotLayout checks the index arithmetic of the chunked table.
func TestSlotLayout(t *testing.T) {
	a, _ := NewApprox(Rule{1, 1})
	total := uint64(0)
	for c := range maxChunks {
		total += 2 << c
	}
	if total > idxMask+1 {
		t.Fatalf("%d slots do not fit %d index bits", total, idxBits)
	}
	if a.stride%8 != 0 || a.stride < ruleW+2 {
		t.Errorf("stride %d", a.stride)
	}
}

// TestTagWraps checks that the tag skips 0 (the mark of a slot being
// written) when it wraps around.
func TestTagWraps(t *testing.T) {
	a, _ := NewApprox(Rule{1000, time.Second})
	s := a.slot(0)
	s[stateW].Store(tagMask<<1 | owned)
	a.head.Store(tagMask << idxBits)
	t0 := time.Now()
	for i := range 2 {
		if !a.AllowN(t0, 1) {
			t.Fatalf("call %d refused across the wrap", i)
		}
	}
	if tag := a.head.Load() >> idxBits; tag != 2 {
		t.Errorf("tag after the wrap = %d, want 2", tag)
	}
	if got := a.TokensAt(t0); got != 998 {
		t.Errorf("TokensAt = %d, want 998", got)
	}
}

// TestAcquireSkipsItsOwnTag: a caller whose head is stale takes a scratch
// slot for the tag after that head's, which a later admission may already
// have paired with a slot since freed. It must not take that slot: a reader
// that loaded that later head still validates against the tag, and would
// take the caller's writes for the snapshot it reads. The sequence (one
// rule of 4 per hour, every call at one instant): A admits, W reads the
// head (tag 2) and is suspended before it takes a slot for tag 3; V admits
// (tag 3, in the slot A freed), R loads that head and is suspended; U
// admits (tag 4), freeing V's slot, which keeps tag 3; W resumes.
func TestAcquireSkipsItsOwnTag(t *testing.T) {
	a, err := NewApprox(Rule{4, time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if !a.AllowN(t0, 1) { // A
		t.Fatal("A refused")
	}
	hW := a.head.Load() // W's head: tag 2
	if hW>>idxBits != 2 {
		t.Fatalf("head tag %d after one admission, want 2", hW>>idxBits)
	}
	if !a.AllowN(t0, 1) { // V: tag 3
		t.Fatal("V refused")
	}
	hR, sR := a.load()    // R's head: tag 3
	if !a.AllowN(t0, 1) { // U: tag 4, freeing R's slot with tag 3
		t.Fatal("U refused")
	}
	if v := sR[stateW].Load(); v&owned != 0 || v>>1 != 3 {
		t.Fatalf("R's slot: state %#x, want free with tag 3", v)
	}
	idx, s := a.acquire(hW>>idxBits + 1) // W takes a slot for tag 3, or none
	if s != nil && idx == hR&idxMask {
		t.Fatalf("W took slot %d, still paired with tag 3 by the head R validates against", idx)
	}
	if !valid(hR, sR) {
		t.Fatal("R's snapshot no longer validates, though nothing took its slot")
	}
}

// TestAcquireTagNeverComesBack: a slot's tag only grows, so the tag a reader
// validates against cannot come back to its slot while a writer rewrites it.
// The sequence (one rule of 100 per hour): A admits (tag 2); W decides at
// an instant two hours on, on that head, and is suspended before taking a
// slot for tag 3; V admits (tag 3); R loads that head and is suspended; three
// more admissions (tags 4, 5, 6) free R's slot, take it again for tag 5 and
// free it again; W resumes and writes its snapshot (a new window, 90 counted)
// into the slot it takes. Before slot tags were kept growing, W took R's
// slot back to tag 3, and R validated W's words: TokensAt 10 and a refusal of
// 20 from a limiter that had 95 left in every state R overlapped.
func TestAcquireTagNeverComesBack(t *testing.T) {
	a, err := NewApprox(Rule{100, time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	off0 := a.base.Offset(t0)
	if !a.AllowN(t0, 1) { // A
		t.Fatal("A refused")
	}
	hW := a.head.Load()
	if !a.AllowN(t0, 1) { // V
		t.Fatal("V refused")
	}
	hR, sR := a.load() // R
	for range 3 {
		if !a.AllowN(t0, 1) {
			t.Fatal("refused")
		}
	}
	if got := a.TokensAt(t0); got != 95 {
		t.Fatalf("TokensAt(t0) = %d after 5 admissions, want 95", got)
	}
	idx, s := a.acquire(hW>>idxBits + 1) // W: a slot for tag 3, or none (its head has moved on)
	if s != nil {
		s[ruleW].Store(uint64(off0 + int64(2*time.Hour)))
		s[ruleW+1].Store(90)
	}
	t1, ws, p, c := a.view(sR, 0, off0) // R resumes
	if valid(hR, sR) {
		if tok := a.rules[0].Tokens(p, c, t1-ws); tok < 95 || tok > 98 {
			t.Fatalf("W took slot %d and R validated it: R reads %d left, though every state it overlapped had 95 to 98", idx, tok)
		}
	}
	if s != nil {
		if v := s[stateW].Load(); v>>1 != 3 {
			t.Fatalf("W's slot carries tag %d, want 3", v>>1)
		}
	}
}

// TestOlder: a slot's tag against a tag to come, across the wrap.
func TestOlder(t *testing.T) {
	for _, c := range []struct {
		a, b uint64
		want bool
	}{
		{0, 1, true}, {0, tagMask, true}, {1, 2, true}, {2, 2, false}, {3, 2, false},
		{tagMask, 1, true}, {1, tagMask, false}, {5, 5 + 1<<51 - 1, true}, {5, 5 + 1<<51, false},
	} {
		if got := older(c.a, c.b); got != c.want {
			t.Errorf("older(%d, %d) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if nextTag(tagMask) != 1 || nextTag(1) != 2 {
		t.Error("nextTag does not wrap from the largest tag to 1")
	}
}

// ownedSlots counts the slots marked owned: when no call is in progress,
// only the head's.
func ownedSlots(a *Approx) int {
	n := 0
	for c := range maxChunks {
		p := a.chunks[c].Load()
		if p == nil {
			continue
		}
		words := *p
		for off := uint64(0); off < uint64(2)<<c; off++ {
			if words[off*a.stride+stateW].Load()&owned != 0 {
				n++
			}
		}
	}
	return n
}

// TestNoSlotLeak: calls that fit on their first snapshot, lose the head
// to a concurrent admission and are then refused must give their scratch
// slot back. Once every call has returned, exactly one slot (the head's) is
// owned, whatever the contention was.
func TestNoSlotLeak(t *testing.T) {
	for _, procs := range []int{2, 8} {
		old := runtime.GOMAXPROCS(procs)
		a, err := NewApprox(Rule{Limit: 16, Window: 1000}, Rule{Limit: 50, Window: 100000})
		if err != nil {
			t.Fatal(err)
		}
		base := time.Now()
		var clk atomic.Int64
		for phase := 0; phase < 1000; phase++ {
			now := base.Add(time.Duration(clk.Add(1_000_000)))
			var ready atomic.Int32
			var wg sync.WaitGroup
			for g := 0; g < procs; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ready.Add(1)
					for ready.Load() < int32(procs) {
						runtime.Gosched()
					}
					for a.AllowN(now, 1) {
					}
				}()
			}
			wg.Wait()
		}
		runtime.GOMAXPROCS(old)
		if n := ownedSlots(a); n != 1 {
			t.Errorf("GOMAXPROCS %d: %d slots owned after every call returned, want 1 (table of %d)", procs, n, Slots(a))
		}
	}
}
