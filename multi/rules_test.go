package multi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/multi"
)

// TestConstructorsCopyRules: New and NewApprox keep a copy of the rules they
// are given, so a caller that reuses its slice afterwards changes neither
// what Rules answers nor a decision.
func TestConstructorsCopyRules(t *testing.T) {
	for _, impl := range impls {
		rules := []multi.Rule{{Limit: 2, Window: time.Second}, {Limit: 5, Window: time.Minute}}
		l := mustNew(t, impl.new, rules...)
		rules[0] = multi.Rule{Limit: 7, Window: time.Hour}
		rules[1].Limit = 1
		if got, want := fmt.Sprint(l.Rules()), "[{2 1s} {5 1m0s}]"; got != want {
			t.Errorf("%s: Rules() = %s after the caller changed its slice, want %s", impl.name, got, want)
		}
		t0 := time.Now()
		if !l.AllowN(t0, 2) || l.AllowN(t0, 1) {
			t.Errorf("%s: the limiter no longer admits 2 and then refuses 1 at one instant", impl.name)
		}
	}
}
