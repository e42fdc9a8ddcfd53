package multi_test

import (
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/multi"
)

// TestResetsAtPastTheRange: far beyond the range of instants a limiter tells
// apart (the year 9999), time stops for it. Once every rule has counted an
// admission there, no rule's whole limit is ever back: ResetsAt and each
// rule's ResetAt from DecideRules answer the zero Time (never), as ReadyAt
// says never for MaxN(), and not some instant at which nothing changes.
func TestResetsAtPastTheRange(t *testing.T) {
	far := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	rules := []multi.Rule{{Limit: 1, Window: time.Hour}, {Limit: 3, Window: 24 * time.Hour}}
	for _, flavour := range []string{"exact", "approx"} {
		l := newStatuser(t, flavour, rules...)
		if !l.AllowN(far, 1) {
			t.Fatalf("%s: AllowN(year 9999, 1) refused on a new limiter", flavour)
		}
		if at, ok := l.ReadyAt(far, l.MaxN()); ok {
			t.Fatalf("%s: ReadyAt(year 9999, %d) = %v, true; want never", flavour, l.MaxN(), at)
		}
		for i, at := range l.ResetsAt(far, nil) {
			if !at.IsZero() {
				t.Errorf("%s: ResetsAt(year 9999)[%d] = %v, want the zero Time (never)", flavour, i, at)
			}
		}
		_, each := l.DecideRules(far, 1, nil)
		for i, st := range each {
			if !st.ResetAt.IsZero() {
				t.Errorf("%s: DecideRules(year 9999, 1): rule %d's ResetAt = %v, want the zero Time (never)", flavour, i, st.ResetAt)
			}
		}
	}
}
