package slidelog

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// claimOnly is a test seam: it performs a claim of n at now exactly as AllowN
// does up to and including its linearization point, and then stops, as if
// its goroutine were descheduled there: for n == 1 the compare-and-swap on the
// claim slot; for n >= 2 the batch's publication and its marker. It returns
// the head it claimed at, the batch (nil for n == 1) and the stamp.
func claimOnly(t *testing.T, l *Log, now, n int64) (h uint64, d *batch, stamp int64) {
	t.Helper()
	h, d, stamp = publishOnly(t, l, now, n)
	if n == 1 {
		return h, nil, stamp
	}
	cv := l.slot(h).Load()
	if !l.slot(h).CompareAndSwap(cv, markerFor(h, n)) {
		t.Fatalf("claimOnly: marker CAS failed")
	}
	return h, d, stamp
}

// publishOnly is claimOnly stopped one step earlier for n >= 2: the batch is
// published in pending, its marker not yet placed. For n == 1 it is claimOnly.
func publishOnly(t *testing.T, l *Log, now, n int64) (h uint64, d *batch, stamp int64) {
	t.Helper()
	now = toStamp(now)
	h = l.head.Load()
	cv := l.slot(h).Load()
	if cv&lapBit == lapOf(h) || cv&busyBit != 0 {
		t.Fatalf("claimOnly: slot at head not free for a claim")
	}
	last, ok := l.stampAt(l.sub(h, 1))
	if !ok {
		t.Fatalf("claimOnly: predecessor unreadable")
	}
	stamp = max(now, last)
	for _, r := range l.rules {
		if s, ok := l.stampAt(l.sub(h, uint64(r.Limit-n+1))); !ok || (s != 0 && s > stamp-r.Window) {
			t.Fatalf("claimOnly: the claim would be refused")
		}
	}
	if n == 1 {
		if !l.slot(h).CompareAndSwap(cv, lapOf(h)|uint64(stamp)) {
			t.Fatalf("claimOnly: claim CAS failed")
		}
		return h, nil, stamp
	}
	if !l.clearMarkers(l.add(h, 1), n-1) {
		t.Fatalf("claimOnly: clearMarkers failed")
	}
	d = &batch{h: h, n: uint64(n), t: stamp}
	if !l.pending.CompareAndSwap(nil, d) {
		t.Fatalf("claimOnly: another batch is pending")
	}
	return h, d, stamp
}

// stampsOf returns the stamps of indices h .. h+n-1 as readers see them.
func stampsOf(t *testing.T, l *Log, h, n uint64) []int64 {
	t.Helper()
	var out []int64
	j := h
	for range n {
		s, ok := l.stampAt(j)
		if !ok {
			t.Fatalf("index %d unreadable", j)
		}
		out = append(out, s)
		j = l.add(j, 1)
	}
	return out
}

// rush has goroutines call AllowN(now, n) once each, all at once, and returns
// how many were admitted.
func rush(l *Log, goroutines int, now, n int64) int64 {
	var admitted atomic.Int64
	var start, wg sync.WaitGroup
	start.Add(1)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			if l.AllowN(now, n) {
				admitted.Add(1)
			}
		}()
	}
	start.Done()
	wg.Wait()
	return admitted.Load()
}

// A goroutine descheduled after its unit claim, before it advances the head,
// must neither block the others (they advance the head for it) nor let one
// of them past the limit.
func TestStalledUnitClaim(t *testing.T) {
	for _, limit := range []int64{1, 2, 3} {
		l := New([]Rule{{Limit: limit, Window: 1000}})
		const now = 500
		h, _, _ := claimOnly(t, l, now, 1)
		if got := rush(l, 8, now, 1); got != limit-1 {
			t.Fatalf("limit %d: %d admitted beside a stalled claim, want %d", limit, got, limit-1)
		}
		// The stalled goroutine resumes: its head advance is a no-op now.
		l.head.CompareAndSwap(h, l.add(h, 1))
		if got := l.TokensAt(now); got != 0 {
			t.Fatalf("limit %d: TokensAt = %d after the window filled, want 0", limit, got)
		}
		if !l.AllowN(now+1000, limit) {
			t.Fatalf("limit %d: a full window later, %d was refused", limit, limit)
		}
	}
}

// A goroutine descheduled right after claiming a batch (marker stored, no
// stamp written, head not advanced) must not stall the others: they finish
// its batch, with its claimant's stamp, then decide against it. Also with the
// batch half written.
func TestStalledBatchClaim(t *testing.T) {
	for _, tc := range []struct {
		limit, n    int64
		writeSecond bool
	}{
		{2, 2, false}, {3, 2, false}, {3, 2, true}, {5, 3, false}, {5, 3, true}, {8, 8, false},
	} {
		l := New([]Rule{{Limit: tc.limit, Window: 1000}})
		const now = 700
		l.AllowN(now-1500, 1) // an old admission, outside the window
		h, d, stamp := claimOnly(t, l, now, tc.n)
		if tc.writeSecond {
			second := l.add(h, 1)
			l.slot(second).Store(lapOf(second) | uint64(stamp))
		}
		if got := rush(l, 8, now, 1); got != tc.limit-tc.n {
			t.Fatalf("%+v: %d admitted beside a stalled batch, want %d", tc, got, tc.limit-tc.n)
		}
		// The claimant resumes and runs the rest of its admission.
		l.drive(d)
		if got := d.state.Load(); got != committed {
			t.Fatalf("%+v: resumed claimant sees outcome %d, want committed", tc, got)
		}
		if l.pending.Load() != nil {
			t.Fatalf("%+v: pending not cleared", tc)
		}
		for i, s := range stampsOf(t, l, h, uint64(tc.n)) {
			if s != stamp {
				t.Fatalf("%+v: unit %d of the batch stamped %d, want its claimant's %d", tc, i, s, stamp)
			}
		}
		if got := l.TokensAt(now); got != 0 {
			t.Fatalf("%+v: TokensAt = %d, want 0", tc, got)
		}
		if got := l.TokensAt(now + 999); got != 0 {
			t.Fatalf("%+v: TokensAt(now+999) = %d, want 0 (the batch is in that window)", tc, got)
		}
		if got := l.TokensAt(now + 1000); got != tc.limit {
			t.Fatalf("%+v: TokensAt(now+1000) = %d, want %d", tc, got, tc.limit)
		}
	}
}

// A stalled batch claim is finished by readers too, not only by AllowN, and
// with its claimant's instant, not the reader's: readers an hour before and
// after, and a refused call at another instant, all leave the batch stamped
// at its claimant's instant.
func TestStalledBatchFinishedByReaders(t *testing.T) {
	const hour = int64(3600e9)
	for i, finish := range []func(l *Log){
		func(l *Log) { l.TokensAt(10 - hour) },
		func(l *Log) { l.TokensAt(10 + hour) },
		func(l *Log) { l.ReadyAt(10-hour, 1) },
		func(l *Log) { l.ReadyAt(10+hour, 2) },
		func(l *Log) { l.IdleAt(10 + hour) },
		func(l *Log) { l.RemainingAt(10-hour, nil) },
		func(l *Log) { l.AllowN(10-hour, 2) },
	} {
		l := New([]Rule{{Limit: 4, Window: 1000}})
		h, d, stamp := claimOnly(t, l, 10, 3)
		finish(l)
		if l.head.Load() != l.add(h, 3) || l.pending.Load() != nil || d.state.Load() != committed {
			t.Fatalf("finisher %d: batch not finished", i)
		}
		for k, s := range stampsOf(t, l, h, 3) {
			if s != stamp {
				t.Fatalf("finisher %d: unit %d stamped %d, want the claimant's %d", i, k, s, stamp)
			}
		}
		if got := l.TokensAt(10); got != 1 {
			t.Fatalf("finisher %d: TokensAt = %d beside a batch of 3 (limit 4), want 1", i, got)
		}
		if at, ok := l.ReadyAt(10, 2); !ok || at != 1010 {
			t.Fatalf("finisher %d: ReadyAt(10, 2) = %d, %v, want 1010, true", i, at, ok)
		}
		if l.IdleAt(1009) || !l.IdleAt(1010) {
			t.Fatalf("finisher %d: IdleAt around the batch's expiry is wrong", i)
		}
	}
}

// A goroutine descheduled after publishing its batch, before any marker,
// stalls nobody: a unit claimant takes the slot and the batch fails (its
// claimant, resuming, learns it and may try again); a batch claimant marks it
// and finishes it first; a reader decides as if it were not there yet.
func TestStalledBatchPublished(t *testing.T) {
	const now = 500
	t.Run("units", func(t *testing.T) {
		l := New([]Rule{{Limit: 4, Window: 1000}})
		_, d, _ := publishOnly(t, l, now, 3)
		if got := l.TokensAt(now); got != 4 {
			t.Fatalf("TokensAt = %d with the batch only published, want 4", got)
		}
		if got := rush(l, 8, now, 1); got != 4 {
			t.Fatalf("%d units admitted beside an unmarked batch, want 4", got)
		}
		l.drive(d)
		if d.state.Load() != failed || l.pending.Load() != nil {
			t.Fatalf("outcome %d, pending %p: want failed, nil", d.state.Load(), l.pending.Load())
		}
		if l.AllowN(now, 3) {
			t.Fatalf("the failed batch's retry was admitted in a full window")
		}
	})
	t.Run("batches", func(t *testing.T) {
		l := New([]Rule{{Limit: 7, Window: 1000}})
		h, d, stamp := publishOnly(t, l, now, 3)
		if got := rush(l, 8, now+1, 2); got != 2 {
			t.Fatalf("%d batches of 2 admitted beside a published batch of 3 (limit 7), want 2", got)
		}
		l.drive(d)
		if d.state.Load() != committed {
			t.Fatalf("the published batch was not committed by its helpers")
		}
		if got := stampsOf(t, l, h, 3); !slices.Equal(got, []int64{stamp, stamp, stamp}) {
			t.Fatalf("batch stamped %v, want its claimant's %d", got, stamp)
		}
	})
}

// A descriptor a helper still holds (it took a reference, read the batch's
// fields, and was descheduled) must not go back to the pool when its batch
// ends: reused, the helper would act on another batch with stale fields
// (record it failed, clear it from pending). The claimant leaves it to the
// garbage collector instead.
func TestHeldDescriptorIsNotReused(t *testing.T) {
	l := New([]Rule{{Limit: 8, Window: 1000}})
	_, d, _ := publishOnly(t, l, 10, 2)
	held := l.acquirePending() // a helper, about to be descheduled
	if held != d {
		t.Fatalf("acquirePending = %p, want the published batch %p", held, d)
	}
	l.drive(d)      // anyone finishes the batch
	releaseBatch(d) // and its claimant lets go of it
	for range 64 {
		if got := batchPool.Get().(*batch); got == d {
			t.Fatalf("a descriptor a helper holds went back to the pool")
		}
	}
	held.refs.Add(-1)
	if d.state.Load() != committed || l.pending.Load() != nil {
		t.Fatalf("batch not finished")
	}
}

// TestLateFillWritesNothing: a helper descheduled inside fill, resumed after
// its batch was finished by others and the ring has gone a lap further, must
// write nothing: the slots it meant to fill now hold later indices (without
// the check, it wrote a stale stamp with the wrong lap bit over them).
func TestLateFillWritesNothing(t *testing.T) {
	l := New([]Rule{{Limit: 4, Window: 1000}})
	h, d, stamp := claimOnly(t, l, 10, 2)
	l.drive(d) // another caller completes the batch
	for i := range int64(4) {
		if !l.AllowN(5000+i, 1) {
			t.Fatal("admission refused")
		}
	}
	before := words(l)
	if l.fill(h, 2, stamp) {
		t.Error("late fill reported that it filled the batch")
	}
	if after := words(l); !slices.Equal(before, after) {
		t.Fatalf("late fill changed the log:\n%x\n%x", before, after)
	}
}
