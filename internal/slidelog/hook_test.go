//go:build slidelimit_hooks

package slidelog

import (
	"sync/atomic"
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

// TestHookFastHeadMoves is TestHookSlowHeadMoves on allowN's fast path (one
// rule, cost 1), at hookFastHead: without the head re-check after the claim
// load the claim slot (index h+L) looks unclaimed at h, the predecessor holds
// index h+2L-1, and the claim CAS succeeds: it claims index h+2L with the
// end's instant, which is right, but reports head h. The decision and the
// stamp are those of the end, so AllowN's answer is right; the head is
// wrong, which DecideStatus would read its status at if the freshness check
// there did not send it to the live state.
func TestHookFastHeadMoves(t *testing.T) {
	twoLapsAtHook(t, hookFastHead, []Rule{{Limit: 3, Window: 10}}, 1)
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

// TestHookAcquireReused makes the race the re-check of pending in
// acquirePending guards happen: a caller H takes the published batch X's
// descriptor d from pending and, at hookAcquire (before its reference),
// stops. Meanwhile X finishes and its claimant returns d to the pool (no
// reference is held yet); the next claimant C2 takes d from the pool,
// checks its batch of 2 at the new head and writes it into d, but cannot
// publish it, because a batch B3 (its claimant stopped right after
// publishing) is pending: C2 goes to finish B3, and stops at hookAcquire in
// turn. H then resumes. Without the re-check it drives d, that is C2's
// batch, which nobody published: it places C2's marker and admits C2's two
// units; B3 then fails (a marker other than its own is in its slot) and C2,
// which never learns that its batch went in, decides again on a full log.
// The callers then see X's 2 units admitted and nothing else, yet the log
// (limit 4) is full: H, C2 and B3's retry, each of 2, are refused with
// only 2 admitted, which no sequential state explains. With the check, H
// finds pending no longer naming d, drops it, and finishes B3 instead.
//
// Whether C2 gets d depends on the pool (under the race detector it drops
// a quarter of what it is given), so the case is tried until it did; an
// attempt where it did not decides as with the check.
func TestHookAcquireReused(t *testing.T) {
	for range 50 {
		if acquireReused(t) {
			return
		}
	}
	t.Fatal("in 50 attempts the pool never handed X's descriptor to C2: the case tests nothing")
}

// acquireReused is one attempt of TestHookAcquireReused; it reports whether
// C2 took X's descriptor (else the attempt tested nothing).
func acquireReused(t *testing.T) bool {
	const now, limit = 10, 4
	l := New([]Rule{{Limit: limit, Window: 1000}})
	_, x, _ := publishOnly(t, l, now, 2) // X: its claimant stops after publishing

	type result struct {
		h, c2, b3 bool // H's, C2's and B3's answers (B3's after its retry)
		reused    bool
		err       string
	}
	var stage atomic.Int32
	hStopped, hResume, hDone := make(chan struct{}), make(chan struct{}), make(chan bool, 1)
	var h2 uint64
	reused := false
	hookFn = func(p int) {
		if p != hookAcquire {
			return
		}
		switch stage.Add(1) {
		case 1: // H, holding x, before its reference
			close(hStopped)
			<-hResume
		case 2: // C2, after its publication failed: B3 is pending
			reused = x.h == h2 && x.state.Load() == undecided
			close(hResume)
			<-hDone // H has decided
			hDone <- true
		}
		// Later calls (H's and C2's next rounds) pass.
	}
	defer func() { hookFn = nil }()

	var hAdmitted atomic.Bool
	go func() {
		hAdmitted.Store(l.AllowN(now, 2))
		hDone <- true
	}()
	done := make(chan result, 1)
	go func() {
		var r result
		<-hStopped
		l.drive(x) // anyone finishes X
		if x.state.Load() != committed || l.pending.Load() != nil {
			r.err = "X was not committed and cleared"
			done <- r
			return
		}
		// Empty the pool, so that the next Get on this P is what X's
		// claimant gives back (a pooled descriptor has h != 0, a new one 0).
		for range 64 {
			if batchPool.Get().(*batch).h == 0 {
				break
			}
		}
		releaseBatch(x) // X's claimant lets go: refs is 0, back to the pool
		var b3 *batch
		h2 = l.head.Load()
		_, b3, _ = publishOnly(t, l, now, 2) // B3: stops after publishing
		r.c2 = l.AllowN(now, 2)              // C2: stops at hookAcquire, see above
		r.reused = reused
		// B3's claimant resumes: drive, then, if its batch failed, decide
		// again (allowSlow's loop).
		l.drive(b3)
		r.b3 = b3.state.Load() == committed || l.AllowN(now, 2)
		<-hDone
		r.h = hAdmitted.Load()
		done <- r
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the calls still run after 10 s: they spin")
	}
	if r.err != "" {
		t.Fatal(r.err)
	}
	units := int64(2) // X's
	for _, ok := range []bool{r.h, r.c2, r.b3} {
		if ok {
			units += 2
		}
	}
	left := l.TokensAt(now)
	if units < limit || left != limit-units {
		t.Fatalf("X admitted, H %v, C2 %v, B3 (after its retry) %v: %d units admitted at %d (limit %d), and "+
			"TokensAt = %d: no sequential state gives that (a call of 2 is refused only with 3 or more units in, "+
			"and the log holds what was admitted); the log holds a batch none of its callers was admitted for",
			r.h, r.c2, r.b3, units, now, limit, left)
	}
	return r.reused
}
