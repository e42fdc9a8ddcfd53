package slidelog

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/slidelimit/slidelimit/internal/slidelog/slidelogtest"
)

// impl is what the shared tests need; both Log and the mutex-guarded
// reference (slidelogtest.Reference) provide it.
type impl interface {
	AllowN(now, n int64) bool
	TokensAt(now int64) int64
	ReadyAt(now, n int64) (int64, bool)
	IdleAt(now int64) bool
	RemainingAt(now int64, dst []int) []int
}

var (
	_ impl = (*Log)(nil)
	_ impl = (*slidelogtest.Reference)(nil)
)

// TestDifferentialSerial replays random serial call sequences (with steps
// backwards, batches and bad n) through Log and Reference and requires every
// answer to be equal. The seed of each run is logged.
func TestDifferentialSerial(t *testing.T) {
	serialRuns(t, 7919, func(lf *Log, rf *slidelogtest.Reference, rules []Rule, seed uint64, _, step int, now, n int64) {
		if g, w := lf.RemainingAt(now, nil), rf.RemainingAt(now, nil); !slices.Equal(g, w) {
			t.Fatalf("rules %v seed %d step %d: RemainingAt(%d) = %v, reference %v", rules, seed, step, now, g, w)
		}
		if g, w := lf.TokensAt(now), rf.TokensAt(now); g != w {
			t.Fatalf("rules %v seed %d step %d: TokensAt(%d) = %d, reference %d", rules, seed, step, now, g, w)
		}
		ga, gok := lf.ReadyAt(now, n)
		wa, wok := rf.ReadyAt(now, n)
		if ga != wa || gok != wok {
			t.Fatalf("rules %v seed %d step %d: ReadyAt(%d, %d) = %d,%v, reference %d,%v", rules, seed, step, now, n, ga, gok, wa, wok)
		}
		if g, w := lf.IdleAt(now), rf.IdleAt(now); g != w {
			t.Fatalf("rules %v seed %d step %d: IdleAt(%d) = %v, reference %v", rules, seed, step, now, g, w)
		}
		if g, w := lf.AllowN(now, n), rf.AllowN(now, n); g != w {
			t.Fatalf("rules %v seed %d step %d: AllowN(%d, %d) = %v, reference %v", rules, seed, step, now, n, g, w)
		}
	})
}

// serialRuleSets are the rule sets of the serial differential tests.
var serialRuleSets = [][]Rule{
	{{1, 10}}, {{2, 10}}, {{3, 100}}, {{10, 1000}}, {{64, 1 << 20}},
	{{2, 10}, {5, 100}}, {{3, 50}, {3, 100}, {7, 1000}}, {{1, 5}, {10, 1000}},
}

// serialRuns calls call with 20 runs of 400 random calls for each rule set
// (steps backwards, long steps, equal instants, batches and bad n; runs
// starting at the bottom and the top of the range), a fresh Log and
// Reference for each run. The seed of each rule set is derived from salt.
func serialRuns(t *testing.T, salt uint64, call func(lf *Log, rf *slidelogtest.Reference, rules []Rule, seed uint64, run, step int, now, n int64)) {
	t.Helper()
	for si, rules := range serialRuleSets {
		seed := uint64(si)*salt + 1
		rng := rand.New(rand.NewPCG(seed, seed))
		for run := 0; run < 20; run++ {
			lf, rf := New(rules), NewReference(rules)
			maxL := int64(0)
			maxW := int64(0)
			for _, r := range rules {
				maxL, maxW = max(maxL, r.Limit), max(maxW, r.Window)
			}
			now := int64(rng.IntN(1000)) - 500
			switch run % 5 {
			case 1:
				now = math.MinInt64 // the bottom of the range: saturates
			case 2:
				now = math.MaxInt64 - maxW*1000 // the top of the range
			}
			for step := 0; step < 400; step++ {
				switch rng.IntN(10) {
				case 0:
					now -= int64(rng.IntN(int(maxW)))
				case 1:
					now += maxW
				case 2, 3, 4:
				default:
					now += int64(rng.IntN(int(maxW)/max(int(maxL), 1) + 2))
				}
				n := int64(1)
				if rng.IntN(4) == 0 {
					n = int64(rng.IntN(int(maxL)+3)) - 1
				}
				call(lf, rf, rules, seed, run, step, now, n)
			}
		}
	}
}

// words returns the head and every slot word, raw.
func words(l *Log) []uint64 {
	w := []uint64{l.head.Load()}
	for i := range l.slots {
		w = append(w, l.slots[i].Load())
	}
	return w
}

// TestRefusalWritesNothing: with no admission in flight, a refused call
// leaves every word of the log as it was (for unit and batch costs, stale
// instants, and n outside the limits).
func TestRefusalWritesNothing(t *testing.T) {
	for _, rules := range [][]Rule{{{1, 100}}, {{3, 100}}, {{4, 100}, {2, 10}}} {
		l := New(rules)
		for i := range 5 {
			l.AllowN(int64(i), 1)
			l.AllowN(int64(i), 2)
		}
		before := words(l)
		refused := 0
		for _, c := range []struct{ now, n int64 }{{4, 1}, {4, 2}, {0, 1}, {-50, 3}, {4, 99}, {4, -1}} {
			if l.AllowN(c.now, c.n) {
				t.Fatalf("rules %v: AllowN(%d, %d) admitted on a full log", rules, c.now, c.n)
			}
			refused++
			if after := words(l); !slices.Equal(before, after) {
				t.Fatalf("rules %v: refused AllowN(%d, %d) changed the log:\n%x\n%x", rules, c.now, c.n, before, after)
			}
		}
		if refused == 0 {
			t.Fatal("no refusal checked")
		}
	}
}

// TestDecideStatusSerial replays random serial call sequences (steps
// backwards, batches, bad n, several rules) through DecideStatus on a Log and
// through AllowN then TokensAt and ReadyAt at the same instant on Reference:
// with nothing in between, the Status must be exactly what the queries
// answer.
func TestDecideStatusSerial(t *testing.T) {
	serialRuns(t, 104729, func(lf *Log, rf *slidelogtest.Reference, rules []Rule, seed uint64, run, step int, now, n int64) {
		minL := rules[0].Limit
		for _, r := range rules {
			minL = min(minL, r.Limit)
		}
		var want Status
		retry, retryOK := rf.ReadyAt(now, n) // a refusal records nothing
		admitted := rf.AllowN(now, n)
		if !admitted && retryOK {
			want.Retry, want.RetryOK = retry, true
		}
		want.Remaining = rf.TokensAt(now)
		if reset, ok := rf.ReadyAt(now, minL); ok {
			want.Reset, want.ResetOK = reset, true
		}
		got, st := lf.DecideStatus(now, n)
		if got != admitted || st != want {
			t.Fatalf("rules %v seed %d run %d step %d: DecideStatus(%d, %d) = %v %+v, the queries say %v %+v",
				rules, seed, run, step, now, n, got, st, admitted, want)
		}
	})
}
