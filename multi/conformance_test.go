package multi_test

import (
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/conformance"
	shared "github.com/slidelimit/slidelimit/internal/oracle" // the package's own oracle_test.go declares oracle
	"github.com/slidelimit/slidelimit/multi"
)

// flavourOptions describes one flavour of multi to the shared suite, with
// one rule (New, Construct) and several (NewRules).
func flavourOptions[L conformance.Limiter](newRules func(rules ...multi.Rule) (L, error), kind conformance.Kind, stale shared.Stale, maxLimit int, maxWindow time.Duration) conformance.Options {
	build := func(rules ...conformance.Rule) (conformance.Limiter, error) {
		rs := make([]multi.Rule, len(rules))
		for i, r := range rules {
			rs[i] = multi.Rule{Limit: r.Limit, Window: r.Window}
		}
		l, err := newRules(rs...)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	return conformance.Options{
		Pkg: "multi",
		New: func(limit int, window time.Duration) (conformance.Limiter, error) {
			return build(conformance.Rule{Limit: limit, Window: window})
		},
		NewRules: build,
		Construct: func(limit int, window time.Duration) (any, error) {
			return newRules(multi.Rule{Limit: limit, Window: window})
		},
		Kind:      kind,
		Stale:     stale,
		MaxLimit:  maxLimit,
		MaxWindow: maxWindow,
	}
}

var (
	exactOptions = flavourOptions(multi.New, conformance.Exact, 0, multi.MaxLimit, multi.MaxWindow)
	// Each rule of an Approx decides an instant before the start of its
	// current window at that start, as package window does.
	approxOptions = flavourOptions(multi.NewApprox, conformance.Approx, shared.StaleToStart, multi.MaxApproxLimit, multi.MaxApproxWindow)
)

// TestConformance runs the shared contract on both flavours, with one rule
// and with several.
func TestConformance(t *testing.T) {
	t.Run("exact", func(t *testing.T) { conformance.Run(t, exactOptions) })
	t.Run("approx", func(t *testing.T) { conformance.Run(t, approxOptions) })
}

// TestOutsideConformance runs the shared outside-view concurrency check on
// both flavours.
func TestOutsideConformance(t *testing.T) {
	t.Run("exact", func(t *testing.T) { conformance.RunOutside(t, exactOptions) })
	t.Run("approx", func(t *testing.T) { conformance.RunOutside(t, approxOptions) })
}
