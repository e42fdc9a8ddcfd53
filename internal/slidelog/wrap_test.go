package slidelog

import (
	"math/rand/v2"
	"testing"
)

// TestHeadCycleWraps: the head's cycle counter is 32 bits and wraps to 0
// after 2^32 laps (about 4.3e9 admissions at limit 1). A log started three
// laps before the wrap, in the state it would have there (every slot holding
// stamp 0 of the previous lap), decides, answers and reports statuses
// exactly as the reference across the wrap: fresh measures the head's
// distance modulo the cycle counter, so the wrap is neither taken for a move
// of many laps (a query would retry for ever) nor hides one.
func TestHeadCycleWraps(t *testing.T) {
	for _, rules := range [][]Rule{{{1, 10}}, {{3, 10}}, {{2, 10}, {5, 100}}} {
		lf, rf := New(rules), NewReference(rules)
		start := uint64(1<<32-3) << 32
		lf.head.Store(start)
		for i := range lf.slots {
			lf.slots[i].Store(lapOf(start) ^ lapBit)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		now := int64(0)
		wrapped := false
		for step := range 2000 {
			now += int64(rng.IntN(12))
			n := int64(rng.IntN(int(lf.minLimit))) + 1
			if g, w := lf.TokensAt(now), rf.TokensAt(now); g != w {
				t.Fatalf("rules %v step %d: TokensAt = %d, want %d", rules, step, g, w)
			}
			ga, gok := lf.ReadyAt(now, n)
			if wa, wok := rf.ReadyAt(now, n); ga != wa || gok != wok {
				t.Fatalf("rules %v step %d: ReadyAt = %d %v, want %d %v", rules, step, ga, gok, wa, wok)
			}
			ok, st := lf.DecideStatus(now, n)
			if w := rf.AllowN(now, n); ok != w {
				t.Fatalf("rules %v step %d: AllowN = %v, want %v", rules, step, ok, w)
			}
			if w := rf.TokensAt(now); st.Remaining != w {
				t.Fatalf("rules %v step %d: Remaining = %d, want %d", rules, step, st.Remaining, w)
			}
			wrapped = wrapped || lf.head.Load()>>32 < 5
		}
		if !wrapped {
			t.Fatalf("rules %v: the head did not wrap (%#x)", rules, lf.head.Load())
		}
	}
}

// TestFresh: the head's distance from h, modulo the cycle counter.
func TestFresh(t *testing.T) {
	l := New([]Rule{{Limit: 5, Window: 10}})
	for _, c := range []struct {
		h, head uint64
		want    bool
	}{
		{0, 0, true},
		{0, 4, true},                                   // four places on
		{0, 1 << 32, false},                            // five: a lap (cycle 1, position 0)
		{3, 1<<32 | 2, true},                           // four, across a lap
		{3, 1<<32 | 3, false},                          // five, across a lap
		{0xffffffff<<32 | 4, 3, true},                  // four, across the wrap
		{0xffffffff<<32 | 4, 4, false},                 // five, across the wrap
		{0xffffffff<<32 | 4, 0xffffffff<<32 | 4, true}, // no move
	} {
		l.head.Store(c.head)
		if got := l.fresh(c.h); got != c.want {
			t.Errorf("fresh(%#x) with the head at %#x = %v, want %v", c.h, c.head, got, c.want)
		}
	}
}
