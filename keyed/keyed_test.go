package keyed_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// Compile-time checks that the limiters of this module fit keyed.
var (
	_ keyed.PerKey = (*ring.Limiter)(nil)
	_ keyed.PerKey = (*window.Limiter)(nil)
	_ keyed.PerKey = (*multi.Limiter)(nil)
	_ keyed.PerKey = (*multi.Approx)(nil)
)

// t0 is the simulated epoch of the tests; instants are t0 plus offsets.
var t0 = time.Unix(1_700_000_000, 0)

func at(d time.Duration) time.Time { return t0.Add(d) }

// impl is one limiter type the harness runs every test against.
type impl struct {
	name string
	// exact is true when the limiter's decisions equal the naive sliding
	// log's, so that the naive oracle can check every decision.
	exact bool
	// idle is how long after its last admission a limiter with window w
	// becomes idle (IdleAt true).
	idle func(w time.Duration) time.Duration
	new  func(limit int, window time.Duration) (keyed.PerKey, error)
}

func oneWindow(w time.Duration) time.Duration { return w }

var impls = []impl{
	{"naive", true, oneWindow, func(limit int, window time.Duration) (keyed.PerKey, error) {
		return newNaive(limit, window), nil
	}},
	{"ring", true, oneWindow, func(limit int, window time.Duration) (keyed.PerKey, error) {
		return ring.New(limit, window)
	}},
	{"window", false, func(w time.Duration) time.Duration { return 2 * w }, func(limit int, w time.Duration) (keyed.PerKey, error) {
		return window.New(limit, w)
	}},
	// Two rules: the one under test, and a looser one over a longer window
	// that still binds now and then.
	{"multi", false, func(w time.Duration) time.Duration { return 3 * w }, func(limit int, w time.Duration) (keyed.PerKey, error) {
		return multi.New(multi.Rule{Limit: limit, Window: w}, multi.Rule{Limit: 2 * limit, Window: 3 * w})
	}},
	{"multi.Approx", false, func(w time.Duration) time.Duration { return 6 * w }, func(limit int, w time.Duration) (keyed.PerKey, error) {
		return multi.NewApprox(multi.Rule{Limit: limit, Window: w}, multi.Rule{Limit: 2 * limit, Window: 3 * w})
	}},
}

// newKeyed returns a Limiter over impl with the given limit and window.
func newKeyed(t testing.TB, im impl, limit int, window time.Duration, opts ...keyed.Option) *keyed.Limiter[string, keyed.PerKey] {
	t.Helper()
	k, err := keyed.New[string](func() (keyed.PerKey, error) { return im.new(limit, window) }, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestNewRejectsBadConfiguration(t *testing.T) {
	ok := func() (*naive, error) { return newNaive(1, time.Second), nil }
	boom := errors.New("boom")
	tests := []struct {
		name    string
		factory func() (*naive, error)
		opts    []keyed.Option
		want    string
	}{
		{"nil factory", nil, nil, "keyed: newLimiter must not be nil"},
		{"factory error", func() (*naive, error) { return nil, boom }, nil, "keyed: newLimiter: boom"},
		{"nil limiter", func() (*naive, error) { return nil, nil }, nil, "keyed: newLimiter returned a nil limiter"},
		{"MaxKeys 0", ok, []keyed.Option{keyed.MaxKeys(0)}, "keyed: MaxKeys must be between 1 and 2147483647, got 0"},
		{"MaxKeys -1", ok, []keyed.Option{keyed.MaxKeys(-1)}, "keyed: MaxKeys must be between 1 and 2147483647, got -1"},
	}
	for _, tt := range tests {
		k, err := keyed.New[string](tt.factory, tt.opts...)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: New error = %v, want prefix %q", tt.name, err, tt.want)
		}
		if k != nil {
			t.Errorf("%s: New returned a non-nil Limiter with an error", tt.name)
		}
	}
	if _, err := keyed.New[string](func() (*naive, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("New does not wrap the factory's error: %v", err)
	}
	if _, err := keyed.New[string](ok, keyed.MaxKeys(keyed.MaxMaxKeys), nil); err != nil {
		t.Errorf("New(MaxKeys(MaxMaxKeys)) = %v", err)
	}
}

// step is one timed call of a table test.
type step struct {
	key  string
	t    time.Duration // instant, as an offset from t0
	n    int
	want bool
}

func runSteps(t *testing.T, k *keyed.Limiter[string, keyed.PerKey], steps []step) {
	t.Helper()
	for i, s := range steps {
		if got := k.AllowN(s.key, at(s.t), s.n); got != s.want {
			t.Errorf("step %d: AllowN(%q, t0+%v, %d) = %v, want %v", i, s.key, s.t, s.n, got, s.want)
		}
	}
}

func TestStepsPerKey(t *testing.T) {
	for _, im := range impls {
		if !im.exact {
			continue // the steps below are the sliding log's
		}
		t.Run(im.name, func(t *testing.T) {
			k := newKeyed(t, im, 2, time.Second)
			runSteps(t, k, []step{
				{"a", 0, 1, true},
				{"a", 0, 1, true},
				{"a", 0, 1, false},               // a is at its limit
				{"b", 0, 2, true},                // b has its own limiter
				{"b", 0, 1, false},               // and its own limit
				{"a", time.Second - 1, 1, false}, // the window is (t-1s, t]
				{"a", time.Second, 1, true},      // both of a's stamps left
				{"a", 0, 1, true},                // stale instant: clamped to t0+1s
				{"a", time.Second, 1, false},
				{"c", 0, 0, true},   // n == 0 is admitted and creates nothing
				{"c", 0, -1, false}, // n < 0 is refused
				{"c", 0, 3, false},  // n > limit is refused
				{"c", 0, 2, true},
			})
			if got := k.Len(); got != 3 {
				t.Errorf("Len() = %d, want 3 (a, b, c)", got)
			}
		})
	}
}

func TestEdgesCreateNoKey(t *testing.T) {
	k := newKeyed(t, impls[0], 2, time.Second)
	if !k.AllowN("x", t0, 0) || k.AllowN("x", t0, -1) {
		t.Fatal("n == 0 must be admitted and n < 0 refused")
	}
	if at, ok := k.ReadyAt("x", t0, 0); !ok || !at.Equal(t0) {
		t.Errorf("ReadyAt(n=0) = %v, %v; want t0, true", at, ok)
	}
	if _, ok := k.ReadyAt("x", t0, -1); ok {
		t.Error("ReadyAt(n=-1) is ready, want false")
	}
	if _, ok := k.ReadyAt("x", t0, 3); ok {
		t.Error("ReadyAt(n > limit) is ready, want false")
	}
	if got := k.TokensAt("x", t0); got != 2 {
		t.Errorf("TokensAt(absent) = %d, want the limit 2", got)
	}
	if got := k.Len(); got != 0 {
		t.Errorf("Len() = %d after calls that admit nothing, want 0", got)
	}
}

// TestNewKeyOneLimiterKept: many goroutines meet one new key at the same
// time; one limiter is kept for it, all of them decide on it, and the limit
// holds.
func TestNewKeyOneLimiterKept(t *testing.T) {
	const goroutines, rounds, limit = 32, 50, 5
	var made atomic.Int64
	k, err := keyed.New[string](func() (*naive, error) {
		made.Add(1)
		return newNaive(limit, time.Hour), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := range rounds {
		key := fmt.Sprint("key-", r)
		start := make(chan struct{})
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				<-start
				if k.AllowN(key, t0, 1) {
					admitted.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if got := admitted.Load(); got != limit {
			t.Fatalf("round %d: %d admitted on a new key by %d goroutines, want the limit %d", r, got, goroutines, limit)
		}
	}
	// The factory runs with no lock held, so goroutines meeting a new key
	// at once may each build a limiter; one is kept, and the admissions
	// above show that all of them decided on it.
	if got := made.Load(); got < rounds+2 || got > rounds*goroutines+2 {
		t.Fatalf("factory called %d times for %d keys, want between %d and %d", got, rounds, rounds+2, rounds*goroutines+2)
	}
	if got := k.Len(); got != rounds {
		t.Fatalf("Len() = %d, want %d: one key per round", got, rounds)
	}
}

func TestSweepBoundary(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			const w = time.Second
			h := im.idle(w)
			k := newKeyed(t, im, 1, w)
			k.AllowN("a", at(0), 1)
			k.AllowN("b", at(h/2), 1)
			if got := k.Sweep(at(h - 1)); got != 0 {
				t.Errorf("Sweep(t0+%v-1ns) removed %d keys, want 0: a's admission still counts", h, got)
			}
			if got := k.Sweep(at(h)); got != 1 {
				t.Errorf("Sweep(t0+%v) removed %d keys, want 1 (a)", h, got)
			}
			if got := k.Len(); got != 1 {
				t.Errorf("Len() = %d, want 1 (b)", got)
			}
			if !k.AllowN("a", at(h), 1) {
				t.Errorf("a was refused at t0+%v after its eviction", h)
			}
			if got := k.Sweep(at(10 * h)); got != 2 {
				t.Errorf("Sweep(t0+10*%v) removed %d keys, want 2", h, got)
			}
			if got := k.Len(); got != 0 {
				t.Errorf("Len() = %d after sweeping everything, want 0", got)
			}
		})
	}
}

// TestSweepFloor: after Sweep(T), a call presenting an earlier instant is
// decided at T. Without that, a key evicted at T and recreated could be
// decided at an instant where its old admissions still counted.
func TestSweepFloor(t *testing.T) {
	const w = time.Second
	k := newKeyed(t, impls[0], 1, w)
	k.AllowN("a", at(0), 1)
	if got := k.Sweep(at(w)); got != 1 {
		t.Fatalf("Sweep removed %d, want 1", got)
	}
	// At t0+w/2 the old limiter would refuse (its admission at t0 counts).
	// The call is decided at t0+w instead, where the old limiter admits: the
	// same decision as without the eviction, had the call been clamped.
	if !k.AllowN("a", at(w/2), 1) {
		t.Fatal("stale call after a sweep refused")
	}
	// Its admission was stamped at t0+w, not t0+w/2.
	if k.AllowN("a", at(2*w-1), 1) {
		t.Error("admitted at t0+2w-1ns: the stale call must have been stamped at the floor t0+w")
	}
	if !k.AllowN("a", at(2*w), 1) {
		t.Error("refused at t0+2w")
	}
	// A sweep at an earlier instant does not lower the floor.
	k.Sweep(at(0))
	if got := k.TokensAt("a", at(0)); got != 0 {
		t.Errorf("TokensAt(t0) = %d after Sweep(t0), want 0 (decided at t0+2w)", got)
	}
}

// TestEvictionChangesNoDecision runs random calls, with sweeps at random
// instants and stale instants, against the oracle that never evicts:
// every decision, TokensAt and ReadyAt must agree.
func TestEvictionChangesNoDecision(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			seed := rand.Uint64()
			t.Logf("seed %d", seed)
			r := rand.New(rand.NewPCG(seed, 1))
			const limit, w = 3, time.Second
			k := newKeyed(t, im, limit, w)
			o := newOracle(t, im, limit, w)
			steps := []time.Duration{0, 0, 1, w / 3, w / 2, w - 1, w, w + 1, 2 * w, 3 * w, -w / 2, -1}
			now := t0
			evicted := 0
			for i := range 20_000 {
				now = now.Add(steps[r.IntN(len(steps))])
				key := fmt.Sprint("k", r.IntN(8))
				switch p := r.IntN(100); {
				case p < 70:
					n := []int{1, 1, 1, 2, 3, 4, 0}[r.IntN(7)]
					got := k.AllowN(key, now, n)
					want := o.key(key).AllowN(o.clamp(now), n)
					if got != want {
						t.Fatalf("op %d: AllowN(%s, %v, %d) = %v, oracle %v", i, key, now.Sub(t0), n, got, want)
					}
				case p < 80:
					if got, want := k.TokensAt(key, now), o.key(key).TokensAt(o.clamp(now)); got != want {
						t.Fatalf("op %d: TokensAt(%s, %v) = %d, oracle %d", i, key, now.Sub(t0), got, want)
					}
				case p < 88:
					n := 1 + r.IntN(limit)
					got, gok := k.ReadyAt(key, now, n)
					want, wok := o.key(key).ReadyAt(o.clamp(now), n)
					if wok && !want.After(o.clamp(now)) {
						want = now // ready for AllowN(now, n), which is decided at the floor
					}
					// Compare on the wall clock: limiters return instants
					// built from their own monotonic base.
					if gok != wok || got.Sub(t0) != want.Sub(t0) {
						t.Fatalf("op %d: ReadyAt(%s, %v, %d) = %v, %v; oracle %v, %v", i, key, now.Sub(t0), n, got.Sub(t0), gok, want.Sub(t0), wok)
					}
				default:
					evicted += k.Sweep(now)
					if now.After(o.floor) {
						o.floor = now
					}
				}
			}
			if evicted == 0 {
				t.Fatal("no key was ever evicted: the test exercised nothing")
			}
			t.Logf("%d evictions", evicted)
		})
	}
}

func TestFullRefusesNewKeys(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			const w = time.Second
			h := im.idle(w)
			k := newKeyed(t, im, 2, w, keyed.MaxKeys(3))
			for _, key := range []string{"a", "b", "c"} {
				if !k.AllowN(key, at(0), 1) {
					t.Fatalf("key %s refused while there is room", key)
				}
			}
			if k.AllowN("d", at(0), 1) {
				t.Fatal("a fourth key was admitted with MaxKeys(3) and no idle key")
			}
			if got := k.TokensAt("d", at(0)); got != 0 {
				t.Errorf("TokensAt(new key, full) = %d, want 0", got)
			}
			if _, ok := k.ReadyAt("d", at(0), 1); ok {
				t.Error("ReadyAt(new key, full) is ready, want false")
			}
			if !k.AllowN("a", at(h/2), 1) {
				t.Error("a present key was refused because the Limiter is full")
			}
			if got := k.Len(); got != 3 {
				t.Errorf("Len() = %d, want 3", got)
			}
			// b and c become idle at t0+h (a was admitted at t0+h/2).
			// A new key then sweeps them out and is admitted.
			if !k.AllowN("d", at(h), 1) {
				t.Fatal("new key refused although idle keys could be swept")
			}
			if got := k.Len(); got != 2 {
				t.Errorf("Len() = %d after the automatic sweep, want 2 (a, d)", got)
			}
			if !k.AllowN("e", at(h), 1) || k.AllowN("f", at(h), 1) {
				t.Error("after the sweep: want e admitted (room for one), f refused (full, nothing idle)")
			}
		})
	}
}

// TestFullSweepsArePaced: a full Limiter does not sweep again at the same
// instant, however many new keys arrive.
func TestFullSweepsArePaced(t *testing.T) {
	var idleCalls atomic.Int64
	k, err := keyed.New[int](func() (*naive, error) {
		l := newNaive(1, time.Hour)
		l.inIdle = func(time.Time) { idleCalls.Add(1) }
		return l, nil
	}, keyed.MaxKeys(100))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		k.AllowN(i, t0, 1)
	}
	for i := 100; i < 10_000; i++ {
		if k.AllowN(i, t0, 1) {
			t.Fatalf("key %d admitted in a full Limiter", i)
		}
	}
	if got := idleCalls.Load(); got > 100 {
		t.Errorf("%d IdleAt calls for 9900 refused new keys at one instant, want at most one sweep (100)", got)
	}
}

func TestDelete(t *testing.T) {
	k := newKeyed(t, impls[1], 1, time.Hour)
	k.AllowN("a", t0, 1)
	k.AllowN("b", t0, 1)
	k.Delete("a")
	k.Delete("zz") // absent: nothing happens
	if got := k.Len(); got != 1 {
		t.Errorf("Len() = %d after Delete, want 1", got)
	}
	if !k.AllowN("a", t0, 1) {
		t.Error("a deleted key starts from a fresh limiter, but was refused")
	}
	if k.AllowN("b", t0, 1) {
		t.Error("b was not deleted but was admitted over its limit")
	}
}

func TestLenAndRange(t *testing.T) {
	k := newKeyed(t, impls[1], 1, time.Second)
	want := map[string]bool{}
	for i := range 1000 {
		key := fmt.Sprint("k", i)
		want[key] = true
		k.AllowN(key, at(time.Duration(i)*time.Millisecond), 1)
	}
	if got := k.Len(); got != 1000 {
		t.Fatalf("Len() = %d, want 1000", got)
	}
	seen := map[string]int{}
	k.Range(func(key string) bool { seen[key]++; return true })
	for key := range want {
		if seen[key] != 1 {
			t.Fatalf("Range visited %q %d times, want once", key, seen[key])
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("Range visited %d keys, want %d", len(seen), len(want))
	}
	// Early stop.
	visits := 0
	k.Range(func(string) bool { visits++; return visits < 10 })
	if visits != 10 {
		t.Errorf("Range went on after f returned false: %d visits", visits)
	}
	// f may call methods of k, including Delete and Sweep.
	k.Range(func(key string) bool {
		if strings.HasSuffix(key, "0") {
			k.Delete(key)
		}
		k.TokensAt(key, t0)
		return true
	})
	if got := k.Len(); got != 900 {
		t.Errorf("Len() = %d after deleting 100 keys from Range, want 900", got)
	}
	// The keys admitted at t0+i ms are idle from t0+1s+i ms.
	if got := k.Sweep(at(time.Second + 499*time.Millisecond)); got != 450 {
		t.Errorf("Sweep removed %d keys, want 450", got)
	}
	n := 0
	k.Range(func(string) bool { n++; return true })
	if n != 450 || k.Len() != 450 {
		t.Errorf("after Sweep: Range visited %d, Len() = %d; want 450 and 450", n, k.Len())
	}
}

func TestFactoryFailingLater(t *testing.T) {
	calls := 0
	k, err := keyed.New[string](func() (*naive, error) {
		calls++
		if calls > 2 { // New's own two calls succeed
			return nil, errors.New("out of quota")
		}
		return newNaive(1, time.Second), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if k.AllowN("a", t0, 1) {
		t.Error("AllowN admitted a key whose limiter could not be made")
	}
	if k.Len() != 0 {
		t.Errorf("Len() = %d, want 0", k.Len())
	}
	if err := k.WaitN(context.Background(), "a", 1); err == nil {
		t.Error("WaitN succeeded for a key whose limiter could not be made")
	}
}

func TestWaitN(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(1, time.Second) }, keyed.MaxKeys(1))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		start := time.Now()
		if err := k.Wait(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if err := k.Wait(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("second Wait returned after %v, want 1s", d)
		}
		if err := k.WaitN(ctx, "a", 2); !errors.Is(err, keyed.ErrNeverReady) {
			t.Errorf("WaitN(n > limit) = %v, want ErrNeverReady", err)
		}
		if err := k.WaitN(ctx, "b", 1); !errors.Is(err, keyed.ErrFull) {
			t.Errorf("WaitN(new key, full) = %v, want ErrFull", err)
		}
		dctx, cancel := context.WithTimeout(ctx, time.Second/2)
		defer cancel()
		if err := k.Wait(dctx, "a"); !errors.Is(err, keyed.ErrDeadline) {
			t.Errorf("Wait with a deadline before ReadyAt = %v, want ErrDeadline", err)
		}
		if err := k.WaitN(ctx, "a", 0); err != nil {
			t.Errorf("WaitN(0) = %v, want nil", err)
		}
	})
}

// TestZeroAllocs: a decision, TokensAt and ReadyAt on a present key allocate
// nothing.
func TestZeroAllocs(t *testing.T) {
	k, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(10, time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = fmt.Sprint("key-", i)
		k.AllowN(keys[i], t0, 1)
	}
	k.Sweep(t0) // set a floor, so that the clamp's path with a floor is measured
	i := 0
	now := t0
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		k.AllowN(keys[i%len(keys)], now, 1)
		k.TokensAt(keys[i%len(keys)], now)
		k.ReadyAt(keys[i%len(keys)], now, 2)
		i++
	})
	if allocs != 0 {
		t.Errorf("%v allocs per AllowN+TokensAt+ReadyAt on present keys, want 0", allocs)
	}
	allocs = testing.AllocsPerRun(1000, func() { k.Allow(keys[3]) })
	if allocs != 0 {
		t.Errorf("%v allocs per Allow on a present key, want 0", allocs)
	}
	allocs = testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		k.DecideStatus(keys[i%len(keys)], now, 1)
		k.DecideStatus(keys[i%len(keys)], now, 20) // refused: above the limit
		i++
	})
	if allocs != 0 {
		t.Errorf("%v allocs per DecideStatus on present keys, want 0", allocs)
	}

	// Refusing a new key because the Limiter is full allocates nothing either.
	full, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(10, time.Hour) }, keyed.MaxKeys(1))
	if err != nil {
		t.Fatal(err)
	}
	full.AllowN("a", t0, 1)
	full.AllowN("b", t0, 1) // the automatic sweep at t0 runs once, here
	allocs = testing.AllocsPerRun(1000, func() {
		if full.AllowN("b", t0, 1) {
			t.Fatal("a new key was admitted in a full Limiter")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocs per refused new key, want 0", allocs)
	}
	allocs = testing.AllocsPerRun(1000, func() {
		if _, err := full.Decide("b", t0, 1); !errors.Is(err, keyed.ErrFull) {
			t.Fatal(err)
		}
		if _, err := full.Decide("a", t0, 11); !errors.Is(err, keyed.ErrNeverReady) {
			t.Fatal(err)
		}
		if _, err := full.Decide("a", t0.Add(time.Hour), 1); err != nil {
			t.Fatal(err) // admitted or refused by the limit
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocs per Decide (full, n above the limit, present key), want 0", allocs)
	}

	// Keys of a type that may hold a NaN are checked on every call, without
	// allocating, and a bad key is refused without allocating.
	fk, err := keyed.New[float64](func() (*ring.Limiter, error) { return ring.New(10, time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	fk.AllowN(1.5, t0, 1)
	nan := math.NaN()
	allocs = testing.AllocsPerRun(1000, func() {
		fk.AllowN(1.5, t0, 1)
		if _, err := fk.Decide(nan, t0, 1); !errors.Is(err, keyed.ErrBadKey) {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocs per float-key call and NaN refusal, want 0", allocs)
	}
	ak, err := keyed.New[any](func() (*ring.Limiter, error) { return ring.New(10, time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	var present any = 7
	ak.AllowN(present, t0, 1)
	allocs = testing.AllocsPerRun(1000, func() { ak.AllowN(present, t0, 1) })
	if allocs != 0 {
		t.Errorf("%v allocs per interface-key call on a present key, want 0", allocs)
	}
}

// TestFutureSweepFloor: the documented cost of a call at an instant far ahead
// of the others (docs/keyed.md, "One clock for every key"). On a full store,
// a new key at ten years ahead sweeps there, and the floor moves every key to
// that instant: a key allowed 2 per second, called once an hour, is refused
// from its third call on, and ReadyAt says ten years, for both stores.
func TestFutureSweepFloor(t *testing.T) {
	const years = 10 * 365 * 24 * time.Hour
	type store struct {
		allow func(key string, now time.Time) bool
		ready func(key string, now time.Time) (time.Time, bool)
	}
	r := newKeyed(t, impls[1], 2, time.Second, keyed.MaxKeys(2))
	w, err := keyed.NewWindow[string](2, time.Second, keyed.MaxKeys(2))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]store{
		"Limiter": {func(k string, now time.Time) bool { return r.AllowN(k, now, 1) },
			func(k string, now time.Time) (time.Time, bool) { return r.ReadyAt(k, now, 1) }},
		"Window": {func(k string, now time.Time) bool { return w.AllowN(k, now, 1) },
			func(k string, now time.Time) (time.Time, bool) { return w.ReadyAt(k, now, 1) }},
	} {
		s.allow("alice", at(0))
		s.allow("bob", at(0))
		if !s.allow("mallory", at(years)) {
			t.Fatalf("%s: the new key at ten years ahead was refused", name)
		}
		// The sweep removed alice (idle ten years ahead): her first two
		// calls are a fresh limiter's two, both stamped at the floor.
		for i, want := range []bool{true, true, false, false} {
			if got := s.allow("alice", at(time.Duration(i+1)*time.Hour)); got != want {
				t.Errorf("%s: alice's call %d, one hour after the last: %v, want %v (decided at the floor)", name, i+1, got, want)
			}
		}
		if got, ok := s.ready("alice", at(5*time.Hour)); !ok || got.Before(at(years)) {
			t.Errorf("%s: ReadyAt for alice = %v, %v; want at or after the floor, ten years ahead", name, got.Sub(t0), ok)
		}
	}
}

// TestFloorAnswersOnCallersClock: after a sweep, a call before its instant is
// decided at that floor, and the limiter's answers for it (ReadyAt, and
// DecideStatus's RetryAt and ResetAt) come on the caller's clock all the
// same: for instants built by hand in the caller's location, that location
// and no monotonic reading, whether the floor is a reading of time.Now or an
// instant in another location. They were the floor's.
func TestFloorAnswersOnCallersClock(t *testing.T) {
	loc := time.FixedZone("UTC+5", 5*3600)
	for _, floor := range []string{"time.Now", "UTC"} {
		k, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(1, time.Hour) })
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Unix(time.Now().Unix()-60, 0).In(loc)
		if !k.AllowN("a", t0, 1) {
			t.Fatal("first call refused")
		}
		if floor == "time.Now" {
			k.Sweep(time.Now())
		} else {
			k.Sweep(t0.Add(time.Second).UTC())
		}
		at, ok := k.ReadyAt("a", t0, 1)
		// A floor read from time.Now mixes the monotonic clock into a
		// key decided on wall instants ("One clock for every key"):
		// its answer may be off by their drift since New, here 1 ns.
		if want := t0.Add(time.Hour); !ok || at.Sub(want).Abs() > time.Millisecond || floor == "UTC" && !at.Equal(want) {
			t.Errorf("floor %s: ReadyAt = %v, %v; want %v", floor, at, ok, want)
		}
		s, err := k.DecideStatus("a", t0, 1)
		if err != nil || s.Admitted {
			t.Fatalf("floor %s: DecideStatus = %+v, %v; want a refusal", floor, s, err)
		}
		for what, x := range map[string]time.Time{"ReadyAt": at, "RetryAt": s.RetryAt, "ResetAt": s.ResetAt} {
			if x != x.Round(0) || x.Location() != loc {
				t.Errorf("floor %s: %s = %v: monotonic reading %v, in %v; want none, in %v", floor, what, x, x != x.Round(0), x.Location(), loc)
			}
		}
	}
}
