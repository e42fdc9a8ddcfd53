package multi

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/ring"
)

// TestResetsAtMatchesRings feeds a multi Limiter random calls (weights, stale
// instants, idle gaps) and, for each rule, a ring with that rule alone the
// calls the multi admitted, at the same instants: each ring holds its rule's
// stamps. ResetsAt must answer, rule by rule, what the ring's ReadyAt of its
// whole limit answers, and every admission of the multi must be one of every
// ring.
func TestResetsAtMatchesRings(t *testing.T) {
	rules := []Rule{{Limit: 3, Window: 100 * time.Millisecond}, {Limit: 10, Window: time.Second}, {Limit: 25, Window: 10 * time.Second}}
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 7))
	m, err := New(rules...)
	if err != nil {
		t.Fatal(err)
	}
	rings := make([]*ring.Limiter, len(rules))
	for i, rl := range rules {
		rings[i], _ = ring.New(rl.Limit, rl.Window)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []time.Time
	for step := range 20_000 {
		switch {
		case r.IntN(300) == 0:
			now = now.Add(time.Duration(r.Int64N(int64(20 * time.Second))))
		default:
			now = now.Add(time.Duration(r.Int64N(int64(40 * time.Millisecond))))
		}
		at := now
		if r.IntN(10) == 0 {
			at = now.Add(-time.Duration(r.Int64N(int64(time.Second))))
		}
		n := 1 + r.IntN(3)
		if m.AllowN(at, n) {
			for i, rg := range rings {
				if !rg.AllowN(at, n) {
					t.Fatalf("seed %d step %d: the multi admitted %d at %v, rule %d's ring refuses", seed, step, n, at, i)
				}
			}
		}
		q := now
		if r.IntN(4) == 0 {
			q = at
		}
		got = m.ResetsAt(q, got[:0])
		if len(got) != len(rules) {
			t.Fatalf("ResetsAt gave %d instants for %d rules", len(got), len(rules))
		}
		for i, rg := range rings {
			want, ok := rg.ReadyAt(q, rules[i].Limit)
			if !ok {
				want = time.Time{}
			}
			if !got[i].Round(0).Equal(want.Round(0)) {
				t.Fatalf("seed %d step %d: ResetsAt(%v)[%d] = %v, the rule's ring says %v", seed, step, q, i, got[i], want)
			}
		}
	}
}

func TestResetsAtZeroAllocs(t *testing.T) {
	m, _ := New(Rule{Limit: 3, Window: time.Second}, Rule{Limit: 10, Window: time.Minute})
	now := time.Now()
	m.AllowN(now, 1)
	var buf [2]time.Time
	if a := testing.AllocsPerRun(1000, func() { _ = m.ResetsAt(now, buf[:0]) }); a != 0 {
		t.Errorf("%v allocs per ResetsAt, want 0", a)
	}
}
