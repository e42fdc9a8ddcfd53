package multi

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
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

// TestOutsideResetsAt checks ResetsAt from the callers' side while other
// goroutines admit, on a shared increasing clock. A reader knows only lo, the
// latest instant of an admission that returned before it asked (the latest
// stamp is at least lo), and hi, the clock after its call returned (no stamp
// is later): for each rule, the answer must be the query's instant itself,
// which needs lo+W <= that instant, or after it and within [lo+W, hi+W].
func TestOutsideResetsAt(t *testing.T) {
	rules := []Rule{{Limit: 5, Window: 100}, {Limit: 50, Window: 10_000}}
	m, err := New(rules...)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock, lastDone atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for !stop.Load() {
				c := clock.Add(1 + r.Int64N(20))
				if m.AllowN(t0.Add(time.Duration(c)), 1+r.IntN(2)) {
					for {
						d := lastDone.Load()
						if c <= d || lastDone.CompareAndSwap(d, c) {
							break
						}
					}
				}
			}
		})
	}
	var bad atomic.Pointer[string]
	checked, now := atomic.Int64{}, atomic.Int64{}
	for g := range 2 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 2))
			var got []time.Time
			for range 20_000 {
				lo := lastDone.Load()
				q := clock.Load() + r.Int64N(2000) // sometimes past every window
				got = m.ResetsAt(t0.Add(time.Duration(q)), got[:0])
				hi := clock.Load()
				for i, rl := range rules {
					w := int64(rl.Window)
					at := int64(got[i].Sub(t0))
					switch {
					case at == q:
						if lo > 0 && lo+w > q {
							msg := fmt.Sprintf("rule %d: ResetsAt(%d) = now, but an admission at %d still counts", i, q, lo)
							bad.CompareAndSwap(nil, &msg)
						}
						now.Add(1)
					case at < q || at > hi+w || (lo > 0 && at < lo+w):
						msg := fmt.Sprintf("rule %d: ResetsAt(%d) = %d, outside [%d, %d] (latest admission in [%d, %d])", i, q, at, lo+w, hi+w, lo, hi)
						bad.CompareAndSwap(nil, &msg)
					}
				}
				checked.Add(1)
			}
		})
	}
	// The readers finish first; then the admitters stop.
	for checked.Load() < 40_000 && bad.Load() == nil {
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	if msg := bad.Load(); msg != nil {
		t.Fatal(*msg)
	}
	if now.Load() == 0 || now.Load() == 2*checked.Load() {
		t.Fatalf("%d of %d answers were the query's instant: the run did not exercise both cases", now.Load(), 2*checked.Load())
	}
}
