package multi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/multi"
)

// TestAppendsKeepDst: DecideRules, RemainingAt and ResetsAt append to the
// caller's slice: what it held is left as it was, and the rules' answers
// follow it, in order. A reused buffer, or several limiters' answers in one
// slice, depends on that.
func TestAppendsKeepDst(t *testing.T) {
	rules := []multi.Rule{{Limit: 2, Window: time.Second}, {Limit: 5, Window: time.Minute}}
	kept := slidelimit.Status{Remaining: 99}
	for _, flavour := range []string{"exact", "approx"} {
		l := newStatuser(t, flavour, rules...)
		t0 := time.Unix(1_700_000_000, 0)
		// An admission and then a refusal, each appended after what is there.
		got := []slidelimit.Status{kept}
		_, got = l.DecideRules(t0, 2, got)
		_, got = l.DecideRules(t0, 1, got)
		if len(got) != 5 {
			t.Fatalf("%s: %d statuses after two DecideRules on one, want 5", flavour, len(got))
		}
		if got[0] != kept {
			t.Errorf("%s: DecideRules changed the caller's status: %+v, want %+v", flavour, got[0], kept)
		}
		for i, want := range []struct {
			admitted  bool
			remaining int
		}{{true, 0}, {true, 3}, {false, 0}, {false, 3}} {
			if st := got[1+i]; st.Admitted != want.admitted || st.Remaining != want.remaining {
				t.Errorf("%s: status %d: %+v, want Admitted %v and Remaining %d", flavour, 1+i, st, want.admitted, want.remaining)
			}
		}
		if r := l.RemainingAt(t0, []int{-1}); fmt.Sprint(r) != "[-1 0 3]" {
			t.Errorf("%s: RemainingAt after one value = %v, want [-1 0 3]", flavour, r)
		}
		mark := time.Unix(1, 0)
		if r := l.ResetsAt(t0, []time.Time{mark}); len(r) != 3 || !r[0].Equal(mark) || !r[1].After(t0) || !r[2].After(t0) {
			t.Errorf("%s: ResetsAt after one value = %v, want it kept and then two instants after now", flavour, r)
		}
	}
}
