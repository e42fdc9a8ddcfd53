//go:build slidelimit_hooks

package multi

import (
	"testing"
	"time"
)

// TestHookTokensSlotReuse makes the race valid guards in TokensAt happen
// every time. Two rules of limits 5 and 6 (one window): with nothing
// admitted TokensAt is min(5, 6) = 5. The call reads rule 0's words from the
// snapshot's slot (5), then, at hookTokensRule, two admissions (1, then 3)
// move the head to the other slot and back: the second writer takes the
// freed slot and rewrites it. Rule 1's words, read next, are then the last
// state's (2), and min(5, 2) = 2 is no state's answer: the states during the
// call answer 5, 4 and 1. With the check the call reads again (1).
func TestHookTokensSlotReuse(t *testing.T) {
	a, err := NewApprox(Rule{Limit: 5, Window: time.Second}, Rule{Limit: 6, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	now := a.base.Time(1000)
	states := []int{a.TokensAt(now)} // every state's answer, in order
	h0, _ := a.load()
	fired := 0
	hookFn = func(point int) {
		if point != hookTokensRule {
			return
		}
		hookFn = nil // the calls below must not re-enter
		fired++
		for _, n := range []int{1, 3} {
			if !a.AllowN(now, n) {
				t.Fatalf("AllowN(now, %d) refused", n)
			}
			states = append(states, a.TokensAt(now))
		}
		if h, _ := a.load(); h&idxMask != h0&idxMask {
			t.Fatalf("the head's slot is %d, not the call's %d: nothing rewrote it", h&idxMask, h0&idxMask)
		}
	}
	defer func() { hookFn = nil }()
	got := a.TokensAt(now)
	if fired != 1 {
		t.Fatalf("the hook fired %d times, want 1", fired)
	}
	for _, k := range states {
		if got == k {
			return
		}
	}
	t.Fatalf("TokensAt = %d: no state the limiter was in gives that; the states during the call give %v", got, states)
}

// TestHookAllowLoserSlot makes the race valid guards on allowN's refusal
// path happen every time. Two rules, limits 10 and 5 (one window), nothing
// admitted: slot 0 holds the snapshot. A call R of 3 reads rule 0's words
// there (0: fits), and then, at hookAllowRule, a call W of 5 reads rule 0
// from slot 0 too, and at the same point in W a call P of 1 is admitted: it
// takes slot 1, and frees slot 0. W, still on the first snapshot, takes slot
// 0 as scratch, writes its next snapshot there (5 of rule 1's 5), loses the
// head's compare-and-swap to P, decides again on P's state (1 + 5 > 5),
// is refused and frees slot 0, its words left in it. R then reads rule 1's
// words from slot 0: W's snapshot, which no head ever named, in which 3 does
// not fit. Every state the limiter was in during R's call admits 3 (rule 1
// has 5, then 4 left); without the check R is refused on that mix of the
// first snapshot and the loser's, with it R reads again and is admitted.
// (A mix of two installed snapshots cannot do this: the rule that refuses
// has both its words from one of them, which then refuses too. The words of
// a snapshot that lost its compare-and-swap are what only valid keeps out.)
func TestHookAllowLoserSlot(t *testing.T) {
	a, err := NewApprox(Rule{Limit: 10, Window: time.Second}, Rule{Limit: 5, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	now := a.base.Time(1000)
	states := []int{a.TokensAt(now)} // every state's answer, in order
	h0, s0 := a.load()
	fired := 0
	hookFn = func(point int) {
		if point != hookAllowRule {
			return
		}
		fired++
		switch fired {
		case 1: // in R, after rule 0
			if a.AllowN(now, 5) { // W: see below
				t.Errorf("W (5) was admitted: P's admission did not overtake it")
			}
			// The case happened: W's losing snapshot is in R's slot,
			// freed, with rule 1 full, and the head names another slot.
			if h, _ := a.load(); h&idxMask == h0&idxMask || s0[stateW].Load()&owned != 0 ||
				s0[ruleW+3].Load()&lowMask != 5 {
				t.Errorf("slot %d does not hold W's freed snapshot with rule 1 full (state %#x, rule 1 %#x, "+
					"head %#x): the case tests nothing", h0&idxMask, s0[stateW].Load(), s0[ruleW+3].Load(), h)
			}
		case 2: // in W, after rule 0
			if !a.AllowN(now, 1) { // P
				t.Errorf("P (1) was refused")
			}
			states = append(states, a.TokensAt(now))
		}
		// Later calls (W's next round, R's) pass.
	}
	defer func() { hookFn = nil }()
	got := a.AllowN(now, 3)
	hookFn = nil
	if t.Failed() {
		t.FailNow()
	}
	if fired < 2 {
		t.Fatalf("the hook fired %d times, want at least 2", fired)
	}
	for _, k := range states {
		if k < 3 {
			t.Fatalf("a state during the call refuses 3 (TokensAt %v): the case tests nothing", states)
		}
	}
	if !got {
		t.Fatalf("AllowN(now, 3) refused: no state the limiter was in gives that; the states during the call "+
			"have TokensAt %v, each admitting 3. The refusal rests on rule 1's words of W's losing snapshot "+
			"(5 of 5), which no head named", states)
	}
}
