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
