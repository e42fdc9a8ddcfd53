package accuracy

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
)

// The models are the yardstick of every published number; internal/oracle
// tests them by hand. These tests pin the configurations the replays pick
// (models.go), on fixtures small enough to count by hand.
func TestLogByHand(t *testing.T) {
	o := oracle.NewLog(oracle.R(2, time.Second))
	steps := []struct {
		at   time.Duration
		n    int
		want bool
	}{
		{0, 1, true},
		{0, 1, true},
		{0, 1, false},                 // (−1s, 0] holds 2
		{time.Second - 1, 1, false},   // stamps at 0 still inside
		{time.Second, 1, true},        // (0, 1s]: the stamps at 0 left
		{time.Second, 1, true},        //
		{time.Second / 2, 1, false},   // stale: decided at the latest admission, 1s
		{2*time.Second - 1, 2, false}, // n > room; refused, so it moves nothing
		{time.Second + 1, 1, false},   // stale: still decided at 1s
		{2 * time.Second, 2, true},    // all room back
		{2 * time.Second, 0, true},    // n == 0 writes nothing
		{2 * time.Second, -1, false},  //
		{5 * time.Second, 3, false},   // n > limit
		{5 * time.Second, 2, true},    //
	}
	for i, s := range steps {
		if got := o.AllowN(int64(s.at), s.n); got != s.want {
			t.Errorf("step %d: AllowN(%v, %d) = %v want %v", i, s.at, s.n, got, s.want)
		}
	}
}

func TestGridTwoCounterByHand(t *testing.T) {
	m := twoCounter(Grid, oracle.R(10, 10*time.Nanosecond))
	// Window 0: 10 at t=9. Window 1 at elapsed e: admits while
	// 10*(10-e) + (curr+1)*10 <= 100, i.e. curr+1 <= e.
	for i := range 10 {
		if !m.AllowN(9, 1) {
			t.Fatalf("fill %d refused", i)
		}
	}
	if m.AllowN(10, 1) {
		t.Errorf("elapsed 0 with a full previous window admitted")
	}
	if !m.AllowN(11, 1) || m.AllowN(11, 1) {
		t.Errorf("elapsed 1 should admit exactly one")
	}
	if !m.AllowN(15, 4) || m.AllowN(15, 1) {
		t.Errorf("elapsed 5 should admit four more, then none")
	}
	if m.AllowN(17, 3) || !m.AllowN(12, 1) {
		t.Errorf("a refusal at 17 moves the instant: 12 is decided at 17, where 10*3 + 6*10 <= 100 (at 12, 10*8 + 6*10 > 100)")
	}
	if !m.AllowN(35, 10) {
		t.Errorf("two windows later the state should be empty")
	}
}

func TestAnchoredTwoCounterByHand(t *testing.T) {
	m := twoCounter(Anchored, oracle.R(10, 10*time.Nanosecond))
	steps := []struct {
		at   int64
		n    int
		want bool
	}{
		{5, 10, true},  // anchors a window at 5
		{14, 1, false}, // same window, full
		{15, 1, false}, // rolled: prev 10, elapsed 0
		{16, 1, true},  // elapsed 1: 10*9 + 1*10 <= 100
		{3, 1, false},  // before the window start (15): decided at 15
		{35, 10, true}, // 35-15 >= 2W: a new anchor at 35, both counters 0
		{36, 1, false}, //
		{45, 1, false}, // rolled to 45: prev 10, elapsed 0
	}
	for i, s := range steps {
		if got := m.AllowN(s.at, s.n); got != s.want {
			t.Errorf("step %d: AllowN(%d, %d) = %v want %v", i, s.at, s.n, got, s.want)
		}
	}
}

// TestAccuracy replays every workload through every contender and checks the
// guarantees that must hold for ours. With BENCH_ACCURACY_OUT set it writes the
// results (with the sliding-count series) as JSON for cmd/report.
func TestAccuracy(t *testing.T) {
	out := os.Getenv("BENCH_ACCURACY_OUT")
	var all []Result
	for _, c := range Contenders() {
		for _, w := range Workloads() {
			r := Run(t, c, w, out != "")
			all = append(all, r)
			if c.Exact && r.LogOver+r.LogUnder != 0 {
				t.Errorf("%s on %s: %d admissions the exact log refuses, %d refusals it admits",
					c.Name, w.Name, r.LogOver, r.LogUnder)
			}
			if c.Must && r.FormulaOver+r.FormulaUnder != 0 {
				t.Errorf("%s on %s: %d admissions above the formula, %d refusals below it",
					c.Name, w.Name, r.FormulaOver, r.FormulaUnder)
			}
		}
	}
	var multis []MultiResult
	for _, c := range MultiContenders() {
		for _, w := range Workloads() {
			r := RunMulti(t, c, w)
			multis = append(multis, r)
			if c.Exact && r.LogOver+r.LogUnder != 0 {
				t.Errorf("%s on %s: %d admissions the exact logs refuse, %d refusals they admit",
					c.Name, w.Name, r.LogOver, r.LogUnder)
			}
		}
	}
	if testing.Verbose() {
		var b strings.Builder
		for _, r := range all {
			fmt.Fprintf(&b, "%-22s %-26s admitted %5d oracle %5d max %4d (%.2fx) log +%d -%d formula +%d -%d\n",
				r.Workload, r.Limiter, r.Admitted, r.OracleAdmitted, r.MaxInWindow, r.Ratio,
				r.LogOver, r.LogUnder, r.FormulaOver, r.FormulaUnder)
		}
		for _, r := range multis {
			fmt.Fprintf(&b, "%-22s %-26s admitted %5d oracle %5d max %v log +%d -%d\n",
				r.Workload, r.Limiter, r.Admitted, r.OracleAdmitted, r.MaxPerRule, r.LogOver, r.LogUnder)
		}
		t.Log("\n" + b.String())
	}
	if out != "" {
		doc := Report{Seed: Seed, Limit: Limit, Window: Window, Results: all, Multi: multis}
		for _, r := range MultiRules {
			doc.MultiRules = append(doc.MultiRules, fmt.Sprintf("%d per %v", r.Limit, r.Window))
		}
		for _, c := range Contenders() {
			doc.Contenders = append(doc.Contenders, Info{Name: c.Name, API: c.API, Algo: c.Algo, Clock: c.Clock, Pacer: c.Pacer, Exact: c.Exact, Model: c.Model})
		}
		for _, w := range Workloads() {
			doc.Workloads = append(doc.Workloads, WorkloadInfo{Name: w.Name, About: w.About, Calls: len(w.Calls)})
		}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
