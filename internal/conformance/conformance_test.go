package conformance_test

import (
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/conformance"
	"github.com/slidelimit/slidelimit/internal/oracle"
)

// The suite checks itself on the oracle's own limiters: a check that fails
// here is wrong, not the limiter.

func oracleOptions(kind conformance.Kind, stale oracle.Stale) conformance.Options {
	model := func(rules ...conformance.Rule) oracle.Model {
		rs := make([]oracle.Rule, len(rules))
		for i, r := range rules {
			rs[i] = oracle.R(r.Limit, r.Window)
		}
		if kind == conformance.Exact {
			return oracle.NewLog(rs...)
		}
		return oracle.NewTwoCounter(stale, oracle.AnchorIdle, rs...)
	}
	return conformance.Options{
		Pkg:  "oracle",
		Kind: kind, Stale: stale,
		New: func(limit int, window time.Duration) (conformance.Limiter, error) {
			return oracle.NewSync(time.Now(), model(conformance.Rule{Limit: limit, Window: window})), nil
		},
		NewRules: func(rules ...conformance.Rule) (conformance.Limiter, error) {
			return oracle.NewSync(time.Now(), model(rules...)), nil
		},
		Skip: map[string]string{"Allocs": "the oracle allocates by design"},
	}
}

func TestConformance(t *testing.T) {
	t.Run("log", func(t *testing.T) { conformance.Run(t, oracleOptions(conformance.Exact, 0)) })
	t.Run("twocounter-start", func(t *testing.T) {
		conformance.Run(t, oracleOptions(conformance.Approx, oracle.StaleToStart))
	})
	t.Run("twocounter-latest", func(t *testing.T) {
		conformance.Run(t, oracleOptions(conformance.Approx, oracle.StaleToLatest))
	})
}

func TestOutsideConformance(t *testing.T) {
	t.Run("log", func(t *testing.T) { conformance.RunOutside(t, oracleOptions(conformance.Exact, 0)) })
	t.Run("twocounter", func(t *testing.T) {
		conformance.RunOutside(t, oracleOptions(conformance.Approx, oracle.StaleToStart))
	})
}
