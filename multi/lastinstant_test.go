package multi

import (
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/twocount"
)

// TestApproxLastInstant: an Approx tells instants apart up to twocount.OffMax
// after its base, and a cost that fits only after that never fits. With one
// rule of limit 1, a unit admitted at s, where the window is anchored, fits
// again at s+2W exactly (the window after s's holds it as prev until then).
// Admitted at OffMax-2W, it is ready at the last instant; admitted one
// nanosecond later, it is ready one nanosecond past it: never. ReadyAt,
// DecideStatus's RetryAt and each rule's RetryAt from DecideRules say so
// alike, and a second limiter one nanosecond earlier still answers.
func TestApproxLastInstant(t *testing.T) {
	const w = time.Second
	for _, c := range []struct {
		name string
		s    int64 // the admission's offset from the base
		ok   bool
	}{
		{"ready at the last instant", twocount.OffMax - 2*int64(w), true},
		{"ready one nanosecond past it", twocount.OffMax - 2*int64(w) + 1, false},
	} {
		a, err := NewApprox(Rule{Limit: 1, Window: w})
		if err != nil {
			t.Fatal(err)
		}
		s := a.base.Time(c.s)
		if !a.AllowN(s, 1) {
			t.Fatalf("%s: AllowN(s, 1) refused on a new limiter", c.name)
		}
		want := time.Time{}
		if c.ok {
			want = a.base.Time(twocount.OffMax)
		}
		at, ok := a.ReadyAt(s, 1)
		if ok != c.ok || !at.Equal(want) {
			t.Errorf("%s: ReadyAt(s, 1) = %v, %v; want %v, %v", c.name, at, ok, want, c.ok)
		}
		st, each := a.DecideRules(s, 1, nil)
		if st.Admitted || !st.RetryAt.Equal(want) {
			t.Errorf("%s: DecideRules(s, 1) = %+v; want refused, RetryAt %v", c.name, st, want)
		}
		if len(each) != 1 || !each[0].RetryAt.Equal(want) {
			t.Errorf("%s: DecideRules(s, 1)'s rule statuses %+v; want one, RetryAt %v", c.name, each, want)
		}
		if st := a.DecideStatus(s, 1); !st.RetryAt.Equal(want) {
			t.Errorf("%s: DecideStatus(s, 1).RetryAt = %v; want %v", c.name, st.RetryAt, want)
		}
	}
}
