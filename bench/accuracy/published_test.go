package accuracy

import (
	"testing"
)

func contender(t *testing.T, name string) Contender {
	t.Helper()
	for _, c := range Contenders() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no contender %q", name)
	return Contender{}
}

func workload(t *testing.T, name string) Workload {
	t.Helper()
	for _, w := range Workloads() {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("no workload %q", name)
	return Workload{}
}

// TestReplayReproducesPublishedFigures: the replay is deterministic, so the
// accuracy tables of docs/benchmarks.md are reproduced exactly. A few cells
// of each kind (admitted, oracle, the largest count in a window and its
// ratio, and the totals against the exact log and the formula over every
// workload) are pinned here, so that a change to the judge, the workloads,
// the window sweep or a peer's configuration shows as a changed figure.
func TestReplayReproducesPublishedFigures(t *testing.T) {
	cells := []struct {
		limiter, workload     string
		admitted, oracle, max int64
		ratio                 float64
	}{
		{"x/time/rate", "stale-3x", 2105, 2000, 203, 2.03},
		{"slidelimit window", "edge-burst-flood", 298, 202, 198, 1.98},
		{"RussellLuo/slidingwindow", "weighted-3x", 1940, 1918, 109, 1.09},
		{"uber-go/ratelimit", "weighted-3x", 6248, 1918, 109, 1.09},
		{"juju/ratelimit (quantum)", "stale-3x", 2000, 2000, 134, 1.34},
	}
	for _, c := range cells {
		r := Run(t, contender(t, c.limiter), workload(t, c.workload), false)
		if r.Admitted != c.admitted || r.OracleAdmitted != c.oracle || r.MaxInWindow != c.max || r.Ratio != c.ratio {
			t.Errorf("%s on %s: admitted %d, oracle %d, max %d (%.2fx); published %d, %d, %d (%.2fx)",
				c.limiter, c.workload, r.Admitted, r.OracleAdmitted, r.MaxInWindow, r.Ratio, c.admitted, c.oracle, c.max, c.ratio)
		}
	}

	totals := []struct {
		limiter                                      string
		logOver, logUnder, formulaOver, formulaUnder int
	}{
		{"slidelimit window", 661, 24282, 0, 0},
		{"RussellLuo/slidingwindow", 3278, 2601, 7101, 0},
	}
	for _, c := range totals {
		var lo, lu, fo, fu int
		for _, w := range Workloads() {
			r := Run(t, contender(t, c.limiter), w, false)
			lo, lu, fo, fu = lo+r.LogOver, lu+r.LogUnder, fo+r.FormulaOver, fu+r.FormulaUnder
		}
		if lo != c.logOver || lu != c.logUnder || fo != c.formulaOver || fu != c.formulaUnder {
			t.Errorf("%s over every workload: log +%d −%d, formula +%d −%d; published +%d −%d, +%d −%d",
				c.limiter, lo, lu, fo, fu, c.logOver, c.logUnder, c.formulaOver, c.formulaUnder)
		}
	}

	var approx MultiContender
	for _, c := range MultiContenders() {
		if c.Name == "slidelimit multi (approx)" {
			approx = c
		}
	}
	m := RunMulti(t, approx, workload(t, "weighted-3x"))
	if m.Admitted != 1923 || m.OracleAdmitted != 1909 || len(m.RatioPerRule) != 2 ||
		m.RatioPerRule[0] != 1.11 || m.RatioPerRule[1] != 1.25 || m.LogOver != 127 || m.LogUnder != 98 {
		t.Errorf("multi approx on weighted-3x: %d (%d); %v; +%d −%d; published 1923 (1909); [1.11 1.25]; +127 −98",
			m.Admitted, m.OracleAdmitted, m.RatioPerRule, m.LogOver, m.LogUnder)
	}
}

// TestOursAreHeldToTheirModels: TestAccuracy requires zero differences only
// of the contenders flagged Exact (from the log) or Must (from the formula);
// every limiter of ours and every reference is one or the other.
func TestOursAreHeldToTheirModels(t *testing.T) {
	want := map[string]string{
		"slidelimit ring": "exact", "slidelimit multi (1 rule)": "exact", "mutex log (bench ref)": "exact",
		"slidelimit window": "formula", "slidelimit multi approx (1 rule)": "formula", "mutex window (bench ref)": "formula",
	}
	cs := append(Ours(), References()...)
	if len(cs) != len(want) {
		t.Fatalf("%d of ours and references, want %d", len(cs), len(want))
	}
	for _, c := range cs {
		got := ""
		switch {
		case c.Exact && !c.Must && c.Model == "":
			got = "exact"
		case c.Must && !c.Exact && c.Model == Anchored:
			got = "formula"
		}
		if got != want[c.Name] {
			t.Errorf("%s: held to %q (Exact %v, Must %v, Model %q), want %q", c.Name, got, c.Exact, c.Must, c.Model, want[c.Name])
		}
	}
}
