//go:build slidelimit_hooks

package slidelog

import (
	"testing"
	"time"
)

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
	t.Run("batch", func(t *testing.T) { twoLapsAtHook(t, hookSlowChecks, []Rule{{Limit: 3, Window: 10}}, 2) })
	t.Run("rules", func(t *testing.T) {
		twoLapsAtHook(t, hookSlowChecks, []Rule{{Limit: 3, Window: 10}, {Limit: 3, Window: 5}}, 1)
	})
}

// TestHookSlowHeadMoves makes the race the head re-check after the claim
// load guards in allowSlow happen every time: a call at the stale instant 0
// reads the head h, and then, at hookSlowHead (before the claim slot), 2*L
// units are admitted. The claim slot then holds the index one lap on, which
// looks unclaimed at h, and the predecessor and check slots hold the state at
// the new head h+2L (t = 90), which admits; a unit's claim CAS on the claim
// slot succeeds, claiming index h+2L, but the call would report head h with
// instant 90: no state gives that (the start admits at h with 30, the end at
// h+2L with 90). With the check the call starts over and is admitted as at
// the end. A batch without the check fails its drive (the head is past h)
// and starts over, but its marker CAS has already put a marker of index h in
// the claim slot, which at h+2L reads as claimed with no batch pending: every
// later call spins (a 10 s watchdog fails the test instead).
func TestHookSlowHeadMoves(t *testing.T) {
	t.Run("rules", func(t *testing.T) { // the claim CAS
		twoLapsAtHook(t, hookSlowHead, []Rule{{Limit: 3, Window: 10}, {Limit: 3, Window: 5}}, 1)
	})
	t.Run("batch", func(t *testing.T) { twoLapsAtHook(t, hookSlowHead, []Rule{{Limit: 3, Window: 10}}, 2) }) // the marker
}

// twoLapsAtHook admits units at 10, 20 and 30 (head h = 3 on, limit 3), then
// makes a call of n at the stale instant 0, during which, at the hook point,
// 2*L = 6 more units are admitted (40 to 90): the call's answer, the head it
// reports and its instant must be those of a twin log that saw the state at
// the start of the call or the one at its end (both admit). The call runs
// behind a 10 s watchdog, so that one that spins fails the test.
func twoLapsAtHook(t *testing.T, point int, rules []Rule, n int64) {
	type answer struct {
		admitted bool
		first    uint64
		stamp    int64
	}
	setup := []int64{10, 20, 30}
	during := []int64{40, 50, 60, 70, 80, 90}
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
		tw := New(rules)
		admit(tw, at)
		ok, first, stamp := tw.allowN(0, n)
		if !ok {
			t.Fatalf("the twin after %v refused: the case tests nothing", at)
		}
		twins = append(twins, answer{ok, first, stamp})
	}

	l := New(rules)
	admit(l, setup)
	fired := 0
	hookFn = func(p int) {
		if p != point {
			return
		}
		hookFn = nil // the admissions below must not re-enter
		fired++
		admit(l, during)
	}
	defer func() { hookFn = nil }()
	done := make(chan answer, 1)
	go func() {
		ok, first, stamp := l.allowN(0, n)
		done <- answer{ok, first, stamp}
	}()
	var r answer
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("allowN(0, %d) still running after 10 s: it spins", n)
	}
	if fired != 1 {
		t.Fatalf("the hook fired %d times, want 1", fired)
	}
	for _, tw := range twins {
		if tw == r {
			return
		}
	}
	t.Fatalf("allowN(0, %d) = %v at head %#x, instant %d: no state the log was in gives that; "+
		"at the start: %v at %#x, %d; at the end: %v at %#x, %d",
		n, r.admitted, r.first, fromStamp(r.stamp), twins[0].admitted, twins[0].first, fromStamp(twins[0].stamp),
		twins[1].admitted, twins[1].first, fromStamp(twins[1].stamp))
}
