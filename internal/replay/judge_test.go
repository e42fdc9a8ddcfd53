package replay

import (
	"slices"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
)

// A limiter of 2 per second that admits a third call in the window, then
// refuses one that fits, is caught on its own history: one admission over the
// log, one refusal under it, and the log deciding alone admits what it should.
func TestJudge(t *testing.T) {
	s := int64(time.Second)
	j := NewJudge(nil, oracle.R(2, time.Second))
	for _, d := range []struct {
		at int64
		ok bool
	}{{0, true}, {1, true}, {2, true}, {s + 3, false}, {s + 3, false}} {
		j.Decided(d.at, 1, d.ok, d.at)
	}
	// At s+3 the window (3, s+3] holds nothing the limiter admitted, so
	// both refusals were under the log; the log alone admits 0, 1, then
	// refuses 2 and admits two at s+3.
	want := Score{Admitted: 3, OracleAdmitted: 4, LogOver: 1, LogUnder: 2}
	if j.Score != want {
		t.Fatalf("score %+v, want %+v", j.Score, want)
	}
	if got := oracle.MaxInWindow(j.Stamps(), s); got != 3 {
		t.Fatalf("largest count in a window %d, want 3", got)
	}
}

// A weighted replay through a limiter of 10 per second, judged also against
// a model (here a log of 5 per second, simple to count by hand): every count
// is of its own kind of decision, the admitted and oracle totals are of cost,
// not calls, and the stamps are the limiter's admissions at the instants the
// events happen (one released later than presented, as a pacer's), at their
// cost.
func TestJudgeCountsWeightedCallsAgainstLogAndModel(t *testing.T) {
	s := int64(time.Second)
	j := NewJudge(oracle.NewLog(oracle.R(5, time.Second)), oracle.R(10, time.Second))
	for _, d := range []struct {
		pres int64
		n    int
		ok   bool
		at   int64
	}{
		{0, 4, true, 0},          // all agree; the model holds 4
		{1, 4, true, 1},          // fits the log (8), not the model: formula +1
		{2, 3, false, 2},         // 11 > 10: everyone refuses
		{2, 2, false, 2},         // 10 fits the log: log -1; the oracle admits 2
		{s, 6, true, s + s/2},    // 4 left in (0, s], 6 fits the log; the oracle (8 in window) refuses; formula +2
		{s + 1, 1, false, s + 1}, // the log holds 6: log -2; the oracle admits
		{3 * s, 1, false, 3 * s}, // all empty: log -3, formula -1; the oracle admits
		{3 * s, 10, true, 3 * s}, // fits the log; the oracle holds 1: refuses; n > 5: formula +3
		{3 * s, 1, true, 3 * s},  // the log holds 10: log +1; formula +4; the oracle admits
	} {
		j.Decided(d.pres, d.n, d.ok, d.at)
	}
	want := Score{Admitted: 25, OracleAdmitted: 13, LogOver: 1, LogUnder: 3, FormulaOver: 4, FormulaUnder: 1}
	if j.Score != want {
		t.Fatalf("score %+v, want %+v", j.Score, want)
	}
	stamps := []oracle.Stamp{{At: 0, Cost: 4}, {At: 1, Cost: 4}, {At: s + s/2, Cost: 6}, {At: 3 * s, Cost: 10}, {At: 3 * s, Cost: 1}}
	if !slices.Equal(j.Stamps(), stamps) {
		t.Fatalf("stamps %v, want %v", j.Stamps(), stamps)
	}
}
