//go:build slidelimit_hooks

package slidelog

import "testing"

// TestHookSlowTwoLaps makes the race fresh guards on allowSlow's refusal
// path happen every time: a call at the stale instant 0 reads the head h,
// the claim slot and the predecessor (t = 30), and then, at hookSlowChecks,
// 2*L units are admitted, so the rule's check slot holds the index two laps
// on, whose lap bit is the same. Set against t = 30 that later stamp refuses
// a call that the state at the start of the call (head h, t = 30) and the
// one at its end (head h+2L, t = 90) both admit: with the check the call
// starts over and is admitted as at the end. Its answer, head and instant
// must be those of a twin log that saw one of the two states.
func TestHookSlowTwoLaps(t *testing.T) {
	cases := []struct {
		name  string
		rules []Rule
		n     int64
	}{
		{"batch", []Rule{{Limit: 3, Window: 10}}, 2},                        // a batch: allowSlow
		{"rules", []Rule{{Limit: 3, Window: 10}, {Limit: 3, Window: 5}}, 1}, // two rules
	}
	type answer struct {
		admitted bool
		first    uint64
		stamp    int64
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			setup := []int64{10, 20, 30}              // before the call: head h = 3 on
			during := []int64{40, 50, 60, 70, 80, 90} // 2*L = 6 units at the hook
			admit := func(l *Log, at []int64) {
				for _, u := range at {
					if !l.AllowN(u, 1) {
						t.Fatalf("setup: AllowN(%d, 1) refused", u)
					}
				}
			}
			// The twins: the state at the start of the call, and at its end.
			var twins []answer
			for _, at := range [][]int64{setup, append(append([]int64(nil), setup...), during...)} {
				tw := New(c.rules)
				admit(tw, at)
				ok, first, stamp := tw.allowN(0, c.n)
				if !ok {
					t.Fatalf("the twin after %v refused: the case tests nothing", at)
				}
				twins = append(twins, answer{ok, first, stamp})
			}

			l := New(c.rules)
			admit(l, setup)
			fired := 0
			hookFn = func(point int) {
				if point != hookSlowChecks {
					return
				}
				hookFn = nil // the admissions below must not re-enter
				fired++
				admit(l, during)
			}
			defer func() { hookFn = nil }()
			ok, first, stamp := l.allowN(0, c.n)
			if fired != 1 {
				t.Fatalf("the hook fired %d times, want 1", fired)
			}
			for _, tw := range twins {
				if tw.admitted == ok && tw.first == first && tw.stamp == stamp {
					return
				}
			}
			t.Fatalf("allowN(0, %d) = %v at head %#x, instant %d: no state the log was in gives that; "+
				"at the start: %v at %#x, %d; at the end: %v at %#x, %d",
				c.n, ok, first, fromStamp(stamp), twins[0].admitted, twins[0].first, fromStamp(twins[0].stamp),
				twins[1].admitted, twins[1].first, fromStamp(twins[1].stamp))
		})
	}
}
