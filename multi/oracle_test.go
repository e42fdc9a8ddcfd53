package multi_test

import (
	shared "github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/multi"
)

// The tests compare both flavours with the naive models of internal/oracle,
// all-or-nothing over the rules: the exact sliding log for New, the
// two-counter estimate in window's layout for NewApprox (windows anchored at
// an admission into an idle rule, a stale instant decided at its rule's
// window start). Instants are int64 nanoseconds from the test's origin.

// oracle is what both models provide.
type oracle = shared.Model

// sharedRules converts rules for the models.
func sharedRules(rules []multi.Rule) []shared.Rule {
	out := make([]shared.Rule, len(rules))
	for i, r := range rules {
		out[i] = shared.R(r.Limit, r.Window)
	}
	return out
}

// newLogOracle returns the exact model of New(rules...).
func newLogOracle(rules []multi.Rule) oracle { return shared.NewLog(sharedRules(rules)...) }

// newApproxOracle returns the two-counter model of NewApprox(rules...).
func newApproxOracle(rules []multi.Rule) oracle {
	return shared.NewTwoCounter(shared.StaleToStart, shared.AnchorIdle, sharedRules(rules)...)
}
