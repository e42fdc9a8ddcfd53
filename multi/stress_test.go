package multi_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/multi"
)

// TestStressEqualInstants runs goroutines that all present the same instant
// in each phase, phase after phase. Within a phase the admitted cost must be
// exactly what the reference admits at that instant (every caller keeps
// asking until nothing fits), whatever the interleaving. Run it with -race.
func TestStressEqualInstants(t *testing.T) {
	ms := time.Millisecond
	configs := []struct {
		rules    []multi.Rule
		attempts int // per goroutine and phase
		phases   int
	}{
		{[]multi.Rule{{5, 10 * ms}, {12, 50 * ms}, {40, time.Second}}, 6, 300},
		{[]multi.Rule{{300, 10 * ms}, {1000, 50 * ms}}, 150, 60},
		{[]multi.Rule{{5, ms}, {6, 2 * ms}, {7, 3 * ms}, {8, 4 * ms}, {9, 5 * ms}, {10, 6 * ms}, {11, 7 * ms}, {12, 8 * ms}, {30, 50 * ms}}, 6, 200},
	}
	for _, cfg := range configs {
		for _, impl := range impls {
			stressPhases(t, impl.name, impl.new, impl.oracle(cfg.rules), cfg.rules, 8, cfg.attempts, cfg.phases)
		}
	}
}

func stressPhases(t *testing.T, name string, newf func(...multi.Rule) (lim, error), o oracle,
	rules []multi.Rule, goroutines, attempts, phases int) {
	t.Helper()
	l := mustNew(t, newf, rules...)
	rng := rand.New(rand.NewPCG(42, 42))
	t0 := time.Now()
	var now int64
	for ph := range phases {
		now += rng.Int64N(int64(6 * time.Millisecond))
		at := t0.Add(time.Duration(now))
		want := o.TokensAt(now)
		var got atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range goroutines {
			wg.Go(func() {
				<-start
				// Costs 2 first, then 1: the last attempts are all 1,
				// so nothing that fits is left behind.
				for k := range attempts {
					n := 1
					if k < attempts/3 && g%2 == 0 {
						n = 2
					}
					if l.AllowN(at, n) {
						got.Add(int64(n))
					}
				}
			})
		}
		close(start)
		wg.Wait()
		if got.Load() != int64(want) {
			t.Fatalf("%s: phase %d at t0+%v: admitted %d, reference admits %d", name, ph, time.Duration(now), got.Load(), want)
		}
		if want > 0 && !o.AllowN(now, want) {
			t.Fatalf("%s: phase %d: the reference refuses its own tokens", name, ph)
		}
		if g, ok := remainingAt(l, at); ok && fmt.Sprint(g) != fmt.Sprint(o.RemainingAt(now)) {
			t.Fatalf("%s: phase %d: RemainingAt = %v, reference %v", name, ph, g, o.RemainingAt(now))
		}
	}
	if a, ok := l.(*multi.Approx); ok {
		t.Logf("approx %v: %d slots after the stress", rules, multi.Slots(a))
	}
}

// TestStressRefusedLoserFreesSlot: Approx calls that lose the head's
// compare-and-swap to another admission and then retry (re-tagging their
// scratch slot) or are refused (giving it back). An untagged slot makes every
// later call spin in its load; a leaked slot per such call grows the table to
// its 4094 slots, after which every admission spins in acquire (TestNoSlotLeak
// counts the slots exactly). Phases of 8 goroutines at one instant, limit 4,
// so that every phase has losers: each phase must end, within a watchdog's
// 30 s, with exactly the limit admitted.
func TestStressRefusedLoserFreesSlot(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	a, err := multi.NewApprox(multi.Rule{Limit: 4, Window: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := time.Now().Add(time.Second)
	for phase := 0; time.Now().Before(end); phase++ {
		at := t0.Add(time.Duration(phase) * 10 * time.Millisecond)
		var admitted atomic.Int64
		var wg, start sync.WaitGroup
		start.Add(1)
		for range 8 {
			wg.Go(func() {
				start.Wait()
				if a.AllowN(at, 1) {
					admitted.Add(1)
				}
			})
		}
		start.Done()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			// A call that spins (an untagged slot, a full table) never
			// returns: name it rather than wait for the package timeout.
			t.Fatalf("phase %d: 8 calls at one instant still running after 30 s", phase)
		}
		if got := admitted.Load(); got != 4 {
			t.Fatalf("phase %d: admitted %d of 8 calls at one instant, limit 4", phase, got)
		}
	}
}
