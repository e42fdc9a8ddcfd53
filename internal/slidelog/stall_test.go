package slidelog

import (
	"sync"
	"sync/atomic"
	"testing"
)

// claimOnly is a test seam: it performs a claim of n at now exactly as AllowN
// does up to and including its compare-and-swap on the claim slot, and then
// stops, as if its goroutine were descheduled there. It returns the head it
// claimed at and the value it stored (a stamp for n == 1, a marker for n >= 2).
func claimOnly(t *testing.T, l *Log, now, n int64) (h, stored uint64, stamp int64) {
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
	stored = lapOf(h) | uint64(stamp)
	if n > 1 {
		if !l.clearMarkers(l.add(h, 1), n-1) {
			t.Fatalf("claimOnly: clearMarkers failed")
		}
		stored = markerFor(h, n)
	}
	if !l.slot(h).CompareAndSwap(cv, stored) {
		t.Fatalf("claimOnly: claim CAS failed")
	}
	return h, stored, stamp
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
// its batch, then decide against it. Also with the batch half written.
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
		h, marker, stamp := claimOnly(t, l, now, tc.n)
		if tc.writeSecond {
			second := l.add(h, 1)
			l.slot(second).Store(lapOf(second) | uint64(stamp))
		}
		if got := rush(l, 8, now, 1); got != tc.limit-tc.n {
			t.Fatalf("%+v: %d admitted beside a stalled batch, want %d", tc, got, tc.limit-tc.n)
		}
		// The claimant resumes and runs the rest of its admission.
		if got := l.complete(h, marker, stamp); got != 0 && got != stamp {
			t.Fatalf("%+v: resumed claimant sees stamp %d, want %d", tc, got, stamp)
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

// A stalled batch claim is finished by readers too, not only by AllowN.
func TestStalledBatchFinishedByReaders(t *testing.T) {
	l := New([]Rule{{Limit: 4, Window: 1000}})
	claimOnly(t, l, 10, 3)
	if got := l.TokensAt(10); got != 1 {
		t.Fatalf("TokensAt = %d beside a stalled batch of 3 (limit 4), want 1", got)
	}
	if at, ok := l.ReadyAt(10, 2); !ok || at != 1010 {
		t.Fatalf("ReadyAt(10, 2) = %d, %v, want 1010, true", at, ok)
	}
	if l.IdleAt(1009) || !l.IdleAt(1010) {
		t.Fatalf("IdleAt around the batch's expiry is wrong")
	}
}
