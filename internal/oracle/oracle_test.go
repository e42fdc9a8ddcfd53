package oracle

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tables below were computed by hand from the definitions in the package
// doc; each step's comment gives the arithmetic.

// ready is the expected answer of ReadyAt.
type ready struct {
	At int64
	OK bool
}

// step is one timed call on a model.
type step struct {
	call string // AllowN, TokensAt, RemainingAt, ReadyAt or IdleAt
	at   int64
	n    int
	want any // bool, int, []int or ready
}

// runSteps plays steps on m in order and reports, for every step whose answer
// differs, the step, the call, what was got and what was wanted.
func runSteps(t *testing.T, m Model, steps []step) {
	t.Helper()
	for i, s := range steps {
		var got any
		switch s.call {
		case "AllowN":
			got = m.AllowN(s.at, s.n)
		case "TokensAt":
			got = m.TokensAt(s.at)
		case "RemainingAt":
			got = m.RemainingAt(s.at)
		case "ReadyAt":
			at, ok := m.ReadyAt(s.at, s.n)
			got = ready{at, ok}
		case "IdleAt":
			got = m.IdleAt(s.at)
		default:
			t.Fatalf("step %d: unknown call %q", i, s.call)
		}
		assert.Equalf(t, s.want, got, "step %d: %s(at=%d, n=%d)", i, s.call, s.at, s.n)
	}
}

func TestLogOneRule(t *testing.T) {
	// limit 3 per 10 ns; the window ending at t is (t-10, t].
	runSteps(t, NewLog(Rule{Limit: 3, Window: 10}), []step{
		{"AllowN", 0, 1, true},
		{"AllowN", 0, 2, true},
		{"AllowN", 5, 1, false},            // 3 in (-5, 5]
		{"TokensAt", 5, 0, 0},              //
		{"ReadyAt", 5, 1, ready{10, true}}, // the stamps at 0 leave (t-10, t] at t = 10
		{"AllowN", 9, 1, false},            //
		{"AllowN", 10, 1, true},            // (0, 10] is empty
		{"AllowN", 3, 2, true},             // stale: decided at 10, 1+2 <= 3, stamped at 10
		{"TokensAt", 15, 0, 0},             //
		{"ReadyAt", 15, 1, ready{20, true}},
		{"ReadyAt", 3, 1, ready{20, true}},  // stale: full at 10, room at 20
		{"ReadyAt", 15, 4, ready{0, false}}, // above the limit
		{"ReadyAt", 15, -1, ready{0, false}},
		{"ReadyAt", 15, 0, ready{15, true}},
		{"AllowN", 15, 0, true},
		{"AllowN", 15, -1, false},
		{"AllowN", 100, 4, false},
		{"IdleAt", 5, 0, false}, // before the latest admission
		{"IdleAt", 19, 0, false},
		{"IdleAt", 20, 0, true}, // the latest stamp (10) is one window old
		{"ReadyAt", 20, 3, ready{20, true}},
		{"RemainingAt", 20, 0, []int{3}},
	})
}

func TestLogSeveralRules(t *testing.T) {
	// 2 per 10 and 3 per 100, all or nothing.
	runSteps(t, NewLog(Rule{Limit: 2, Window: 10}, Rule{Limit: 3, Window: 100}), []step{
		{"AllowN", 0, 2, true},
		{"RemainingAt", 0, 0, []int{0, 1}},
		{"AllowN", 10, 2, false}, // the first rule has room 2, the second 1: nothing recorded
		{"RemainingAt", 10, 0, []int{2, 1}},
		{"TokensAt", 10, 0, 1},
		{"ReadyAt", 10, 3, ready{0, false}}, // above the smallest limit
		{"AllowN", 10, 1, true},
		{"RemainingAt", 10, 0, []int{1, 0}},
		// Candidates 20 (second rule still full) and 100 (the stamps at 0
		// leave the second rule's window; the first has (90, 100] empty).
		{"ReadyAt", 10, 1, ready{100, true}},
		{"ReadyAt", 10, 2, ready{100, true}}, // at 100 the second rule holds only the stamp at 10
		{"IdleAt", 109, 0, false},
		{"IdleAt", 110, 0, true}, // the longest window has passed since 10
	})
}

func TestLogBounds(t *testing.T) {
	// A limiter that represents offsets in [-100, 100] only: 1 per 50.
	l := NewLog(Rule{Limit: 1, Window: 50})
	l.Bounds = Bounds{Min: -100, Max: 100}
	runSteps(t, l, []step{
		{"AllowN", 1000, 1, true},             // stamped at 100
		{"ReadyAt", 1000, 1, ready{0, false}}, // room at 150, which cannot be represented
		{"TokensAt", 2000, 0, 0},
		{"AllowN", -1000, 1, false}, // decided at the latest admission, 100
		{"IdleAt", math.MaxInt64, 0, false},
	})
	assert.Equal(t, []Stamp{{At: 100, Cost: 1}}, l.Stamps())
}

func TestLogClampSeen(t *testing.T) {
	// 2 per 10; a refused call at 12 moves the instant stale calls are
	// decided at.
	l := NewLog(Rule{Limit: 2, Window: 10})
	l.ClampSeen = true
	runSteps(t, l, []step{
		{"AllowN", 0, 2, true},
		{"AllowN", 5, 1, false},
		{"AllowN", 12, 3, false}, // above the limit, but seen
		{"AllowN", 8, 1, true},   // decided at 12: (2, 12] is empty; stamped at 12
		{"IdleAt", 21, 0, false},
		{"IdleAt", 22, 0, true},
	})
	assert.Equal(t, []Stamp{{0, 2}, {12, 1}}, l.Stamps())
	// By default a refusal moves nothing.
	d := NewLog(Rule{Limit: 2, Window: 10})
	runSteps(t, d, []step{
		{"AllowN", 0, 2, true},
		{"AllowN", 12, 3, false},
		{"AllowN", 8, 1, false}, // decided at 8: (-2, 8] holds 2
	})
}

func TestLogExtremeInstants(t *testing.T) {
	runSteps(t, NewLog(Rule{Limit: 1, Window: 10}), []step{
		{"AllowN", math.MinInt64, 1, true},
		{"ReadyAt", math.MinInt64, 1, ready{math.MinInt64 + 10, true}},
		{"AllowN", math.MaxInt64 - 5, 1, true},
		{"ReadyAt", math.MaxInt64, 1, ready{0, false}}, // the stamp never leaves
		{"IdleAt", math.MaxInt64, 0, false},
		{"TokensAt", math.MaxInt64, 0, 0},
	})
}

func TestTwoCounterStaleToStart(t *testing.T) {
	// 4 per 1000, windows anchored on an admission into an idle limiter.
	runSteps(t, NewTwoCounter(StaleToStart, AnchorIdle, Rule{Limit: 4, Window: 1000}), []step{
		{"AllowN", 0, 1, true}, // anchors a window at 0
		{"AllowN", 300, 1, true},
		{"AllowN", 600, 1, true},
		{"AllowN", 900, 1, true},                // curr = 4
		{"AllowN", 999, 1, false},               // 0*1 + 5*1000 > 4000
		{"AllowN", 1900, 1, true},               // next window: 4*100 + 1*1000 <= 4000
		{"AllowN", 1100, 1, false},              // stale, inside the window: 4*900 + 2*1000 > 4000
		{"AllowN", 500, 1, false},               // before the window: decided at 1000, 4*1000 + 2000 > 4000
		{"TokensAt", 1100, 0, 0},                //
		{"TokensAt", 1900, 0, 2},                // 400 + (1+k)*1000 <= 4000
		{"ReadyAt", 1100, 1, ready{1500, true}}, // 4*(1000-el) + 2000 <= 4000 from el = 500
		{"ReadyAt", 1100, 3, ready{2000, true}}, // next window: 1*(1000-0) + 3000 <= 4000
		{"ReadyAt", 1100, 0, ready{1100, true}},
		{"ReadyAt", 1100, 5, ready{0, false}},
		{"IdleAt", 2999, 0, false}, // the window from 2000 has prev = 1
		{"IdleAt", 3000, 0, true},
		{"AllowN", 5000, 4, true},  // idle: anchors at 5000
		{"AllowN", 5999, 1, false}, // 5*1000 > 4000
		{"AllowN", 6000, 1, false}, // 4*1000 + 1000 > 4000
		{"AllowN", 6250, 1, true},  // 4*750 + 1000 == 4000
		{"RemainingAt", 6250, 0, []int{0}},
	})
}

func TestTwoCounterStaleToLatest(t *testing.T) {
	runSteps(t, NewTwoCounter(StaleToLatest, AnchorIdle, Rule{Limit: 4, Window: 1000}), []step{
		{"AllowN", 0, 1, true},
		{"AllowN", 300, 1, true},
		{"AllowN", 600, 1, true},
		{"AllowN", 900, 1, true},
		{"AllowN", 1900, 1, true},
		{"AllowN", 1100, 1, true},  // decided at 1900: 4*100 + 2*1000 <= 4000
		{"TokensAt", 1000, 0, 1},   // at 1900: 400 + (2+k)*1000 <= 4000
		{"IdleAt", 1000, 0, false}, // before the latest admission
		{"IdleAt", 2999, 0, false},
		{"IdleAt", 3000, 0, true},
	})
}

func TestTwoCounterSeveralRules(t *testing.T) {
	// 2 per 10 and 3 per 100, each rule clamping to its own window start.
	runSteps(t, NewTwoCounter(StaleToStart, AnchorIdle, Rule{Limit: 2, Window: 10}, Rule{Limit: 3, Window: 100}), []step{
		{"AllowN", 0, 2, true},
		{"AllowN", 10, 1, false}, // the first rule rolls: 2*10 + 1*10 > 20
		{"AllowN", 15, 1, true},  // first: 2*5 + 10 <= 20; second: 3 <= 3
		{"RemainingAt", 15, 0, []int{0, 0}},
		// First rule: room from 20 (prev 1, curr 0); second: from its next
		// window, 3*(100-el) + 100 <= 300 from el = 34.
		{"ReadyAt", 15, 1, ready{134, true}},
		{"IdleAt", 199, 0, false},
		{"IdleAt", 200, 0, true},
	})
}

func TestTwoCounterGrid(t *testing.T) {
	runSteps(t, NewTwoCounter(StaleToSeen, AnchorGrid, Rule{Limit: 2, Window: 10}), []step{
		{"AllowN", 5, 2, true},              // window [0, 10)
		{"AllowN", 9, 1, false},             //
		{"AllowN", 12, 1, false},            // 2*8 + 1*10 > 20
		{"AllowN", 15, 1, true},             // 2*5 + 1*10 == 20
		{"AllowN", 25, 1, true},             // window [20, 30): 1*5 + 10 <= 20
		{"AllowN", 31, 2, false},            // 1*9 + 20 > 20
		{"AllowN", 39, 2, false},            // 1*1 + 20 > 20
		{"AllowN", 40, 2, true},             // [30, 40) is empty
		{"ReadyAt", 41, 1, ready{55, true}}, // [40, 50) is full; then 2*(10-el) + 10 <= 20 from el = 5
	})
	// A refused call moves the instant stale calls are decided at.
	m := NewTwoCounter(StaleToSeen, AnchorGrid, Rule{Limit: 1, Window: 10})
	runSteps(t, m, []step{
		{"AllowN", 5, 1, true},
		{"AllowN", 14, 1, false}, // 1*6 + 10 > 10
		{"AllowN", 30, 2, false}, // above the limit, but seen
		{"AllowN", 14, 1, true},  // decided at 30: [20, 30) is empty
	})
}

func TestTwoCounterFarInstants(t *testing.T) {
	m := NewTwoCounter(StaleToStart, AnchorIdle, Rule{Limit: 1, Window: 10})
	m.Bounds = Bounds{Min: -1000, Max: 1000}
	runSteps(t, m, []step{
		{"AllowN", math.MaxInt64, 1, true}, // anchors at 1000
		{"ReadyAt", math.MaxInt64, 1, ready{0, false}},
		{"ReadyAt", math.MinInt64, 1, ready{0, false}},
		{"TokensAt", math.MinInt64, 0, 0},
		{"IdleAt", math.MaxInt64, 0, false},
	})
	u := NewTwoCounter(StaleToStart, AnchorIdle, Rule{Limit: 1, Window: math.MaxInt64})
	runSteps(t, u, []step{
		{"AllowN", math.MinInt64, 1, true},
		{"AllowN", 0, 1, false},                           // the next window starts at -1: 1*(W-1) + 1*W > W
		{"ReadyAt", 0, 1, ready{math.MaxInt64 - 1, true}}, // two windows after MinInt64
		{"AllowN", math.MaxInt64, 1, true},
	})
}

func TestMaxInWindow(t *testing.T) {
	stamps := []Stamp{{15, 3}, {0, 1}, {10, 1}, {5, 2}, {10, 1}}
	tests := []struct {
		w    int64
		want int64
	}{
		{1, 3},  // one instant: 10 holds 2, 15 holds 3
		{5, 3},  // (5, 10] holds 2, (10, 15] holds 3
		{6, 5},  // (9, 15]
		{10, 5}, // (5, 15]: 1+1+3; (0, 10]: 2+1+1
		{11, 7}, // (4, 15]
		{16, 8},
		{math.MaxInt64, 8},
	}
	for _, tt := range tests {
		assert.Equalf(t, tt.want, MaxInWindow(stamps, tt.w), "MaxInWindow(%v, %d)", stamps, tt.w)
	}
	assert.Equal(t, int64(0), MaxInWindow(nil, 10), "MaxInWindow(nil, 10)")
	far := []Stamp{{math.MinInt64, 1}, {math.MaxInt64, 1}}
	assert.Equal(t, int64(1), MaxInWindow(far, math.MaxInt64), "MaxInWindow(%v, MaxInt64)", far)
	assert.Equal(t, []Point{{0, 1}, {5, 3}, {10, 2}, {15, 0}}, SlidingCount([]Stamp{{5, 2}, {0, 1}}, 10))
}

func TestSaturation(t *testing.T) {
	assert.Equal(t, int64(math.MaxInt64), AddSat(math.MaxInt64-1, 5))
	assert.Equal(t, int64(math.MinInt64), AddSat(math.MinInt64+1, -5))
	assert.Equal(t, int64(3), AddSat(1, 2))
	assert.Equal(t, int64(math.MaxInt64), SubSat(0, math.MinInt64))
	assert.Equal(t, int64(math.MinInt64), SubSat(math.MinInt64, 1))
	assert.Equal(t, int64(-1), SubSat(math.MinInt64, math.MinInt64+1))
	base := time.Unix(0, 0)
	assert.Equal(t, int64(math.MinInt64), Offset(base, time.Time{}))
	assert.Equal(t, int64(math.MaxInt64), Offset(base, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)))
	assert.Equal(t, int64(7), Offset(base, Instant(base, 7)))
}

func TestSync(t *testing.T) {
	base := time.Unix(1000, 0)
	s := NewSync(base, NewLog(Rule{Limit: 1, Window: int64(time.Second)}))
	now := base.Add(time.Millisecond)
	require.True(t, s.AllowN(now, 1), "AllowN(+1ms, 1)")
	at, ok := s.ReadyAt(now, 1)
	require.True(t, ok, "ReadyAt(+1ms, 1) ok")
	assert.True(t, at.Equal(base.Add(time.Second+time.Millisecond)), "ReadyAt(+1ms, 1) = %v", at)
	later := now.Add(time.Hour)
	at, ok = s.ReadyAt(later, 1)
	assert.True(t, ok && at == later, "ReadyAt(now, 1) must return now unchanged when n fits, got %v, %v", at, ok)
	assert.Equal(t, 1, s.Limit())
	assert.Equal(t, time.Second, s.Window())
	assert.True(t, s.IdleAt(later), "IdleAt(+1h)")
	assert.Equal(t, 1, s.TokensAt(later), "TokensAt(+1h)")
}

// TestReadyAtAgreesWithFits checks both models' ReadyAt against a linear
// search over instants, on small random histories.
func TestReadyAtAgreesWithFits(t *testing.T) {
	models := map[string]func() Model{
		"log":    func() Model { return NewLog(Rule{3, 7}, Rule{5, 20}) },
		"start":  func() Model { return NewTwoCounter(StaleToStart, AnchorIdle, Rule{3, 7}, Rule{5, 20}) },
		"latest": func() Model { return NewTwoCounter(StaleToLatest, AnchorIdle, Rule{3, 7}, Rule{5, 20}) },
		"grid":   func() Model { return NewTwoCounter(StaleToSeen, AnchorGrid, Rule{3, 7}, Rule{5, 20}) },
	}
	for name, mk := range models {
		m := mk()
		now := int64(0)
		for i := range 200 {
			now += int64(i*7919%11) - 2
			n := 1 + i%3
			at, ok := m.ReadyAt(now, n)
			want := int64(-1)
			for u := now; u < now+100; u++ {
				if m.Fits(u, n) {
					want = u
					break
				}
			}
			require.Truef(t, ok, "%s step %d: ReadyAt(%d, %d) not ok", name, i, now, n)
			require.Equalf(t, want, at, "%s step %d: ReadyAt(%d, %d)", name, i, now, n)
			m.AllowN(now, n)
		}
	}
}

func TestTwoCounterAdvanceCloneKey(t *testing.T) {
	m := NewTwoCounter(StaleToStart, AnchorIdle, Rule{Limit: 2, Window: 10})
	require.True(t, m.AllowN(0, 2), "AllowN(0, 2)")
	assert.Equal(t, []int64{5}, m.DecisionInstants(5), "before the advance, 5 is in the current window")
	before := m.Key()
	c := m.Clone()
	m.Advance(15) // the window [10, 20) with prev 2, curr 0
	assert.NotEqual(t, before, m.Key(), "an advance changes the key")
	assert.Equal(t, before, c.Key(), "a clone is independent")
	assert.Equal(t, []int64{10}, m.DecisionInstants(5), "a stale instant is decided at the advanced window's start")
	assert.Equal(t, 1, m.TokensAt(15), "2*(10-5) + 1*10 <= 20")
	assert.Equal(t, 0, m.TokensAt(5), "decided at 10: 2*10 + 10 > 20")
	assert.Empty(t, m.Stamps(0)[1:], "an advance stamps nothing")
	require.True(t, c.AllowN(25, 1), "the clone: prev 2 at el 5: 2*5 + 10 <= 20")
	assert.Equal(t, 1, m.TokensAt(15), "the original is unchanged by its clone")

	big := NewTwoCounter(StaleToStart, AnchorIdle, Rule{Limit: 1<<20 - 1, Window: 1000})
	require.True(t, big.AllowN(0, 1000))
	assert.Equal(t, []int{1<<20 - 1 - 1000}, big.RemainingAt(500), "the binary search over costs")
	assert.Equal(t, 1<<20-1-500, big.TokensAt(1500), "1000*(1000-500) + n*1000 <= limit*1000")
}

// TestTwoCounterIdleAfterAdvance: after an Advance into an empty window, the
// model keeps that window's grid, so it is not idle (a new model anchors at
// its first admission) until two windows have passed since that window's
// start; from then on it decides as a new model.
func TestTwoCounterIdleAfterAdvance(t *testing.T) {
	r := Rule{Limit: 2, Window: 1000}
	m := NewTwoCounter(StaleToStart, AnchorIdle, r)
	m.Advance(0)
	for _, at := range []int64{0, 999, 1999} {
		if m.IdleAt(at) {
			t.Errorf("IdleAt(%d) = true within two windows of the advanced window's start", at)
		}
	}
	if !m.IdleAt(2000) {
		t.Error("IdleAt(2000) = false, two windows after the advanced window's start")
	}
	// Where IdleAt(0) said true before the fix, the advanced model and a new
	// one decide differently.
	fresh := NewTwoCounter(StaleToStart, AnchorIdle, r)
	diff := false
	for _, c := range []struct {
		at int64
		n  int
	}{{999, 2}, {1500, 1}} {
		if m.AllowN(c.at, c.n) != fresh.AllowN(c.at, c.n) {
			diff = true
		}
	}
	if !diff {
		t.Error("the advanced model and a new one decided alike: the case no longer shows why IdleAt must be false")
	}
}
