package accuracy

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The oracle and the sweep are the yardstick of every published number: check
// them on fixtures small enough to count by hand (A3).
func TestOracleByHand(t *testing.T) {
	o := NewOracle(2, time.Second)
	steps := []struct {
		at   time.Duration
		n    int64
		want bool
	}{
		{0, 1, true},
		{0, 1, true},
		{0, 1, false},                 // (−1s, 0] holds 2
		{time.Second - 1, 1, false},   // stamps at 0 still inside
		{time.Second, 1, true},        // (0, 1s]: the stamps at 0 left
		{time.Second, 1, true},        //
		{time.Second / 2, 1, false},   // stale: treated as 1s
		{2*time.Second - 1, 2, false}, // n > room
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

func TestMaxInWindowByHand(t *testing.T) {
	W := int64(10)
	cases := []struct {
		stamps []Stamp
		want   int64
	}{
		{nil, 0},
		{[]Stamp{{0, 1}}, 1},
		{[]Stamp{{0, 1}, {10, 1}}, 1},          // 0 is outside (0, 10]
		{[]Stamp{{0, 1}, {9, 1}}, 2},           //
		{[]Stamp{{5, 3}, {5, 4}, {14, 1}}, 8},  // (4, 14]
		{[]Stamp{{20, 1}, {0, 5}, {1, 5}}, 10}, // unsorted input
	}
	for i, c := range cases {
		if got := MaxInWindow(c.stamps, W); got != c.want {
			t.Errorf("case %d: MaxInWindow = %d want %d", i, got, c.want)
		}
		var peak int64
		for _, p := range SlidingCount(c.stamps, W) {
			peak = max(peak, p.Count)
		}
		if peak != c.want {
			t.Errorf("case %d: SlidingCount peak = %d want %d", i, peak, c.want)
		}
	}
}

func TestTwoCounterByHand(t *testing.T) {
	m := NewTwoCounter(10, 10*time.Nanosecond)
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
	if !m.AllowN(35, 10) {
		t.Errorf("two windows later the state should be empty")
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
			if c.Exact && r.OracleDiffs != 0 {
				t.Errorf("%s on %s: %d decisions differ from the exact log", c.Name, w.Name, r.OracleDiffs)
			}
			if c.Formula && r.FormulaOver+r.FormulaUnder != 0 {
				t.Errorf("%s on %s: %d admissions above the formula, %d refusals below it",
					c.Name, w.Name, r.FormulaOver, r.FormulaUnder)
			}
		}
	}
	if testing.Verbose() {
		var b strings.Builder
		for _, r := range all {
			fmt.Fprintf(&b, "%-22s %-26s admitted %5d oracle %5d max %4d (%.2fx) diffs %d over %d\n",
				r.Workload, r.Limiter, r.Admitted, r.OracleAdmitted, r.MaxInWindow, r.Ratio, r.OracleDiffs, r.FormulaOver)
		}
		t.Log("\n" + b.String())
	}
	if out != "" {
		doc := Report{Seed: Seed, Limit: Limit, Window: Window, Results: all}
		for _, c := range Contenders() {
			doc.Contenders = append(doc.Contenders, Info{Name: c.Name, API: c.API, Algo: c.Algo, Clock: c.Clock, Pacer: c.Pacer})
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
