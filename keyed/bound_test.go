package keyed

import (
	"testing"
	"time"
)

// TestPacedIgnoresStretchedSweeps: the next automatic sweep is paced by the
// last one's duration, except that a sweep that took more than twice as long
// per key as the estimate before it (a goroutine preempted mid-sweep) counts
// as twice the estimate; the estimate then follows a real rise by doubling,
// and a drop at once.
func TestPacedIgnoresStretchedSweeps(t *testing.T) {
	var b bound
	steps := []struct {
		took time.Duration
		keys int64
		want time.Duration
	}{
		{time.Millisecond, 1000, time.Millisecond},             // the first: as measured
		{time.Millisecond, 1000, time.Millisecond},             // the same cost
		{100 * time.Millisecond, 1000, 2 * time.Millisecond},   // preempted: twice the estimate
		{100 * time.Millisecond, 1000, 4 * time.Millisecond},   // a real rise is followed by doubling
		{100 * time.Millisecond, 1000, 8 * time.Millisecond},   //
		{500 * time.Microsecond, 1000, 500 * time.Microsecond}, // a drop, at once
		{2 * time.Millisecond, 4000, 2 * time.Millisecond},     // more keys at the same cost per key
		{time.Second, 4000, 4 * time.Millisecond},              // preempted again
		{3 * time.Millisecond, 1, 2 * time.Microsecond},        // one key at twice the estimate per key
		{time.Nanosecond, 1 << 40, 0},                          // under 1/1024 ns per key: the caller paces by 1 ns
		{time.Millisecond, 1000, time.Nanosecond},              // the estimate stayed positive and doubles from there (2/1024 ns per key)
	}
	for i, s := range steps {
		if got := b.paced(s.took, s.keys); got != s.want {
			t.Fatalf("step %d: paced(%v, %d) = %v, want %v (estimate %d/1024 ns per key)", i, s.took, s.keys, got, s.want, b.perKey)
		}
	}
}

// TestPacedLongSweep: a sweep of weeks does not overflow the estimate.
func TestPacedLongSweep(t *testing.T) {
	var b bound
	if got, want := b.paced(time.Duration(1)<<62, 1), time.Duration(1)<<50; got != want {
		t.Fatalf("paced(2^62 ns, 1) = %v, want %v", got, want)
	}
	if b.perKey <= 0 {
		t.Fatalf("estimate %d after a long sweep, want it positive", b.perKey)
	}
}
