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

// TestHookGrownSlotHead makes the case where a caller grows the table
// happen every time, and checks that the slot it gets is its own until it is
// superseded. One rule, limit 100, one instant; the hook stops callers at
// hookAllowRule, after the rule's words are read. A call G1 is stopped on its
// first round while a call X is admitted, so that G1 loses the head's
// compare-and-swap and decides again holding a scratch slot. Stopped there,
// a call G2 is stopped on its first round while a call Y is admitted: with
// one slot G1's scratch and the other the head, Y grows the table and
// installs its snapshot in the first new slot. G2 then loses to Y and
// decides again holding a scratch slot too, and stopped there a call Z is
// admitted: the old slots are taken, the head's slot is the first new one,
// and Z must take another. (G2 and G1 then lose to Z and decide a third
// time.) Every call is admitted, five units in all, and the limiter then
// answers 95 at once. Had Y's slot been handed out without
// its owned mark, Z would take the head's own slot as scratch and overwrite
// it: readers would wait for a snapshot that never comes, or read Z's and
// not Y's.
func TestHookGrownSlotHead(t *testing.T) {
	a, err := NewApprox(Rule{Limit: 100, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	now := a.base.Time(1000)
	admitted := map[string]bool{}
	allow := func(name string) {
		admitted[name] = a.AllowN(now, 1)
	}
	fired := 0
	hookFn = func(point int) {
		if point != hookAllowRule {
			return
		}
		fired++
		switch fired {
		case 1: // G1, first round
			allow("X") // fires 2
		case 3: // G1, second round, holding a scratch slot
			allow("G2") // fires 4 to 6
		case 4: // G2, first round
			allow("Y") // fires 5: grows the table
		case 6: // G2, second round, holding a scratch slot
			allow("Z") // fires 7
		}
	}
	done := make(chan int)
	go func() {
		defer func() { hookFn = nil }()
		allow("G1")
		hookFn = nil
		done <- a.TokensAt(now)
	}()
	select {
	case tokens := <-done:
		if fired < 7 || Slots(a) <= 2 {
			t.Fatalf("the hook fired %d times and the table holds %d slots, want at least 7 and more than 2: "+
				"the case tests nothing", fired, Slots(a))
		}
		for _, name := range []string{"G1", "X", "G2", "Y", "Z"} {
			if !admitted[name] {
				t.Errorf("%s refused, with at most 5 of 100 taken", name)
			}
		}
		if tokens != 95 {
			t.Errorf("TokensAt = %d after 5 admissions of 1 with limit 100, want 95", tokens)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer after 5 s: the head names a slot whose tag is not its own")
	}
}
