package keyed_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/keyed"
)

// TestConcurrentPhases: goroutines hammer overlapping key sets, one phase
// at a time, every call of a phase at the same instant, while a sweeper
// sweeps at that instant. Within a phase the calls on a key can come in any
// order, but since they share one instant the outcome is checkable: the cost
// admitted on the key equals the fall in its TokensAt (no admission lost or
// counted twice), and every refused call asked for more than what was left
// at the end (decisions are maximal). TokensAt at the start of each phase
// must also equal the oracle's, which never evicts (the naive log for the
// exact limiters, a limiter of the same type for the others).
func TestConcurrentPhases(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			seed := phasesSeed(t)
			t.Logf("seed %d", seed)
			r := rand.New(rand.NewPCG(seed, 2))
			const (
				goroutines  = 8
				keys        = 32
				keysPerG    = 12 // goroutine g uses keys 4g .. 4g+11 (mod 32): overlapping sets
				callsPerG   = 40
				phases      = 150
				limit       = 5
				w           = time.Second
				sweepersMax = 2
			)
			k := newKeyed(t, im, limit, w)
			o := newOracle(t, im, limit, w)
			name := func(i int) string { return fmt.Sprint("k", i%keys) }
			h := im.idle(w)
			steps := []time.Duration{0, 1, w / 3, w / 2, w - 1, w, w + 1, h, h + w/2}
			now := t0
			var evicted atomic.Int64
			for p := range phases {
				now = now.Add(steps[r.IntN(len(steps))])
				start := make([]int, keys)
				for i := range keys {
					start[i] = k.TokensAt(name(i), now)
					{
						if want := o.key(name(i)).TokensAt(o.clamp(now)); start[i] != want {
							t.Fatalf("phase %d: TokensAt(%s) = %d, oracle %d", p, name(i), start[i], want)
						}
					}
				}
				type call struct {
					key, n  int
					allowed bool
				}
				results := make([][]call, goroutines)
				seeds := make([]uint64, goroutines)
				for g := range seeds {
					seeds[g] = r.Uint64()
				}
				var wg sync.WaitGroup
				stop := make(chan struct{})
				var sweepers sync.WaitGroup
				for range r.IntN(sweepersMax + 1) {
					sweepers.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
								evicted.Add(int64(k.Sweep(now)))
							}
						}
					})
				}
				for g := range goroutines {
					wg.Go(func() {
						gr := rand.New(rand.NewPCG(seeds[g], 3))
						for range callsPerG {
							key := (4*g + gr.IntN(keysPerG)) % keys
							n := []int{1, 1, 2, 3}[gr.IntN(4)]
							results[g] = append(results[g], call{key, n, k.AllowN(name(key), now, n)})
						}
					})
				}
				wg.Wait()
				close(stop)
				sweepers.Wait()
				if now.After(o.floor) {
					o.floor = now // a sweep at now may have run
				}
				admitted := make([]int, keys)
				for _, rs := range results {
					for _, c := range rs {
						if c.allowed {
							admitted[c.key] += c.n
							if !o.key(name(c.key)).AllowN(now, c.n) {
								t.Fatalf("phase %d: the oracle refuses an admission of %d on %s", p, c.n, name(c.key))
							}
						}
					}
				}
				for i := range keys {
					end := k.TokensAt(name(i), now)
					if start[i]-end != admitted[i] {
						t.Fatalf("phase %d: key %s: %d admitted, but TokensAt fell from %d to %d", p, name(i), admitted[i], start[i], end)
					}
				}
				for _, rs := range results {
					for _, c := range rs {
						if end := k.TokensAt(name(c.key), now); !c.allowed && c.n <= end {
							t.Fatalf("phase %d: key %s: refused %d while %d were left at the end", p, name(c.key), c.n, end)
						}
					}
				}
			}
			if evicted.Load() == 0 {
				t.Log("no eviction raced with the calls this time")
			}
			t.Logf("%d evictions", evicted.Load())
		})
	}
}

// phasesSeed returns the seed of TestConcurrentPhases: KEYED_PHASES_SEED if
// set (to replay the calls of a logged failure; the interleaving itself is
// not replayed), else a random one.
func phasesSeed(t *testing.T) uint64 {
	v := os.Getenv("KEYED_PHASES_SEED")
	if v == "" {
		return rand.Uint64()
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("KEYED_PHASES_SEED=%q: %v", v, err)
	}
	return seed
}

// hooked returns a Limiter over naive limiters of limit 2 and window w whose
// hooks are set by setup, and a counter of the limiters made after New.
func hooked(t *testing.T, w time.Duration, setup func(*naive)) (*keyed.Limiter[string, *naive], *atomic.Int64) {
	t.Helper()
	var made atomic.Int64
	made.Store(-2) // New's own two calls
	k, err := keyed.New[string](func() (*naive, error) {
		made.Add(1)
		l := newNaive(2, w)
		setup(l)
		return l, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return k, &made
}

// TestEvictionRaces forces, with hooks in the limiter, each interleaving of
// a sweep that finds a key idle with an admission on that key. In all of
// them the admission must end up counted once, in the limiter left in the
// map.
func TestEvictionRaces(t *testing.T) {
	const w = time.Second

	// The call has looked the key up, then the sweep evicts it before the
	// call decides: the call decides on a removed limiter, sees it dead, and
	// decides again on a new one.
	t.Run("decide-after-eviction", func(t *testing.T) {
		var armed atomic.Bool
		entered, release := make(chan struct{}), make(chan struct{})
		k, made := hooked(t, w, func(l *naive) {
			l.beforeAllow = func(time.Time, int, bool) {
				if armed.CompareAndSwap(true, false) {
					close(entered)
					<-release
				}
			}
		})
		k.AllowN("a", at(0), 1)
		armed.Store(true)
		done := make(chan bool)
		go func() { done <- k.AllowN("a", at(w), 1) }()
		<-entered
		if got := k.Sweep(at(w)); got != 1 {
			t.Fatalf("Sweep removed %d, want 1", got)
		}
		close(release)
		if !<-done {
			t.Fatal("the racing call was refused")
		}
		if got := k.TokensAt("a", at(w)); got != 1 {
			t.Errorf("TokensAt = %d, want 1: the admission must be in the new limiter", got)
		}
		if got := made.Load(); got != 2 {
			t.Errorf("%d limiters made, want 2 (the first, and the one after eviction)", got)
		}
	})

	// admitDuringSweep makes a call admit on key "a" while a sweep at at(w)
	// is between its steps: during its second IdleAt (under the key's lock)
	// when afterVerdict is false, or once that IdleAt has answered when it
	// is true. It checks how many keys the sweep removed and how many
	// limiters were made; either way the call is admitted and counted once.
	admitDuringSweep := func(t *testing.T, afterVerdict bool, wantRemoved int, wantMade int64) {
		t.Helper()
		for range 50 {
			var idleCalls atomic.Int64
			var k *keyed.Limiter[string, *naive]
			var made *atomic.Int64
			done := make(chan bool, 1)
			race := func(l *naive) {
				if idleCalls.Add(1) == 2 {
					written := make(chan struct{})
					l.afterAllow = func(time.Time, int, bool) { close(written) }
					go func() { done <- k.AllowN("a", at(w), 1) }()
					<-written
				}
			}
			k, made = hooked(t, w, func(l *naive) {
				if afterVerdict {
					l.afterIdle = func(time.Time, bool) { race(l) }
				} else {
					l.inIdle = func(time.Time) { race(l) }
				}
			})
			k.AllowN("a", at(0), 1)
			if got := k.Sweep(at(w)); got != wantRemoved {
				t.Fatalf("Sweep removed %d, want %d", got, wantRemoved)
			}
			if idleCalls.Load() < 2 {
				t.Fatal("the sweep removed the key without asking IdleAt again under the key's lock")
			}
			if !<-done {
				t.Fatal("the racing call was refused")
			}
			if got := k.TokensAt("a", at(w)); got != 1 {
				t.Fatalf("TokensAt = %d, want 1: the admission is counted once, on the limiter in the map", got)
			}
			if got := made.Load(); got != wantMade {
				t.Fatalf("%d limiters made, want %d", got, wantMade)
			}
		}
	}

	// The sweep finds the key idle without a lock, then takes the key's lock
	// and asks again; in between, the call admits. The second IdleAt sees the
	// admission and the key stays. The call may see the sweeping state and
	// wait, or see live; either way it is counted once.
	t.Run("admit-between-checks", func(t *testing.T) { admitDuringSweep(t, false, 0, 1) })

	// The sweep's second IdleAt has read the state (idle) when the call
	// admits on the limiter: the sweep removes it, and the call, which sees
	// sweeping or dead, decides again on a new limiter.
	t.Run("admit-after-verdict", func(t *testing.T) { admitDuringSweep(t, true, 1, 2) })
}
