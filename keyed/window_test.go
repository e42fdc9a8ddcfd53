package keyed_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/slidelimit/slidelimit/internal/conformance"
	shared "github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/window"
)

// This file tests keyed.Window: against a Limiter over window.Limiter fed the
// same calls (every answer must be the same), through the shared conformance
// suite for one key, from the outside under concurrency, and at its edges.

// windowKey is a Window seen through one key, for the conformance suite.
type windowKey struct {
	w   *keyed.Window[string]
	key string
}

func (f windowKey) AllowN(now time.Time, n int) bool { return f.w.AllowN(f.key, now, n) }
func (f windowKey) TokensAt(now time.Time) int       { return f.w.TokensAt(f.key, now) }
func (f windowKey) ReadyAt(now time.Time, n int) (time.Time, bool) {
	return f.w.ReadyAt(f.key, now, n)
}
func (f windowKey) WaitN(ctx context.Context, n int) error { return f.w.WaitN(ctx, f.key, n) }

var windowKeyOptions = conformance.Options{
	Pkg: "keyed",
	New: func(limit int, w time.Duration) (conformance.Limiter, error) {
		k, err := keyed.NewWindow[string](limit, w)
		if err != nil {
			return nil, err
		}
		return windowKey{w: k, key: "client-1"}, nil
	},
	Construct: func(limit int, w time.Duration) (any, error) { return keyed.NewWindow[string](limit, w) },
	Kind:      conformance.Approx,
	Stale:     shared.StaleToStart,
	MaxLimit:  window.MaxLimit,
	MaxWindow: window.MaxWindow,
}

// TestConformanceWindow runs the shared contract through a Window, for one
// key: it is window's contract.
func TestConformanceWindow(t *testing.T) { conformance.Run(t, windowKeyOptions) }

// TestOutsideWindowConformance runs the shared outside-view concurrency check
// through a Window, for one key.
func TestOutsideWindowConformance(t *testing.T) { conformance.RunOutside(t, windowKeyOptions) }

// newOutsideWindow makes the store of TestOutsideKeyedWindow.
func newOutsideWindow(limit int, w time.Duration, opts ...keyed.Option) (outsideStore, error) {
	return keyed.NewWindow[int](limit, w, opts...)
}

// TestOutsideKeyedWindow: per key, never more than window's bound (2*limit-1)
// in any window of the callers' own instants, with weighted calls, idle gaps,
// concurrent sweeps (and, with a small MaxKeys, automatic ones), and queries
// and refused calls at other instants.
func TestOutsideKeyedWindow(t *testing.T) {
	runOutsideConfigs(t, newOutsideWindow, func(limit int) int { return 2*limit - 1 })
}

// TestOutsideKeyedWindowStatus is TestOutsideKeyedWindow with every
// admission made by DecideStatus (statusChecked): the same bound, and every
// answer consistent with itself.
func TestOutsideKeyedWindowStatus(t *testing.T) {
	runOutsideStatus(t, func(limit int, win time.Duration, opts ...keyed.Option) (statusDecider, error) {
		return keyed.NewWindow[int](limit, win, opts...)
	}, func(limit int) int { return 2*limit - 1 })
}

// TestWindowMatchesLimiter feeds a Window and a Limiter over window.Limiter
// the same random calls, one at a time: admissions of every cost (zero,
// negative and above the limit included), queries, stale instants, idle gaps,
// sweeps and deletions, over more keys than fit a small table's first array.
// Every answer must be the same: the Window is that Limiter, laid out
// differently.
func TestWindowMatchesLimiter(t *testing.T) {
	for _, tc := range []struct {
		keys, limit int
		w           time.Duration
		maxKeys     int // 0 for the default
	}{
		{3, 1, time.Second, 0},
		{40, 5, time.Second, 0},
		{2000, 7, 10 * time.Millisecond, 0},
		{60, 4, time.Second, 20}, // often full
	} {
		t.Run(fmt.Sprintf("keys=%d,limit=%d,max=%d", tc.keys, tc.limit, tc.maxKeys), func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			r := rand.New(rand.NewPCG(seed, 7))
			var opts []keyed.Option
			if tc.maxKeys > 0 {
				opts = append(opts, keyed.MaxKeys(tc.maxKeys))
			}
			w, err := keyed.NewWindow[string](tc.limit, tc.w, opts...)
			if err != nil {
				t.Fatal(err)
			}
			l, err := keyed.New[string](func() (*window.Limiter, error) { return window.New(tc.limit, tc.w) }, opts...)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Unix(1_700_000_000, 0)
			key := func() string { return fmt.Sprintf("k%d", r.IntN(tc.keys)) }
			fullStatus := 0 // DecideStatus calls refused with ErrFull
			fail := func(i int, what string, got, want any) {
				t.Helper()
				t.Fatalf("seed %d, op %d: %s: Window says %v, Limiter says %v", seed, i, what, got, want)
			}
			for i := range 50_000 {
				switch r.IntN(100) {
				case 0:
					now = now.Add(time.Duration(r.Int64N(int64(3 * tc.w)))) // an idle gap, often
				default:
					now = now.Add(time.Duration(r.Int64N(int64(tc.w) / int64(4*tc.limit))))
				}
				if tc.maxKeys > 0 {
					// Automatic sweeps (when full) are spaced by the real
					// time a sweep took, which differs between the two
					// stores: sweeping both at every step leaves them
					// nothing to remove, so the stores stay equal.
					if got, want := w.Sweep(now), l.Sweep(now); got != want {
						fail(i, "Sweep", got, want)
					}
				}
				at := now
				if r.IntN(10) == 0 {
					at = now.Add(-time.Duration(r.Int64N(int64(2 * tc.w)))) // stale
				}
				k := key()
				switch op := r.IntN(40); {
				case op < 30:
					n := 1 + r.IntN(tc.limit)
					if r.IntN(20) == 0 {
						n = r.IntN(tc.limit+3) - 1 // -1 .. limit+1
					}
					if r.IntN(2) == 0 {
						got, gotErr := w.DecideStatus(k, at, n)
						want, wantErr := limiterStatus(l, tc.limit, k, at, n)
						if !sameStatus(got, want) || !errors.Is(gotErr, wantErr) || (gotErr == nil) != (wantErr == nil) {
							fail(i, fmt.Sprintf("DecideStatus(%s, %d)", k, n), fmt.Sprint(got, gotErr), fmt.Sprint(want, wantErr))
						}
						if errors.Is(gotErr, keyed.ErrFull) {
							fullStatus++
						}
						break
					}
					gotOK, gotErr := w.Decide(k, at, n)
					wantOK, wantErr := l.Decide(k, at, n)
					if gotOK != wantOK || (gotErr == nil) != (wantErr == nil) {
						fail(i, fmt.Sprintf("Decide(%s, %d)", k, n), fmt.Sprint(gotOK, gotErr), fmt.Sprint(wantOK, wantErr))
					}
				case op < 34:
					if got, want := w.TokensAt(k, at), l.TokensAt(k, at); got != want {
						fail(i, "TokensAt("+k+")", got, want)
					}
				case op < 38:
					n := r.IntN(tc.limit+2) - 0
					g, gok := w.ReadyAt(k, at, n)
					wnt, wok := l.ReadyAt(k, at, n)
					// Round(0): the two bases' monotonic readings differ.
					if gok != wok || !g.Round(0).Equal(wnt.Round(0)) {
						fail(i, fmt.Sprintf("ReadyAt(%s, %d)", k, n), fmt.Sprint(g, gok), fmt.Sprint(wnt, wok))
					}
				case op == 38:
					if got, want := w.Sweep(now), l.Sweep(now); got != want {
						fail(i, "Sweep", got, want)
					}
				default:
					if r.IntN(4) == 0 {
						w.Delete(k)
						l.Delete(k)
					}
				}
				if w.Len() != l.Len() {
					fail(i, "Len", w.Len(), l.Len())
				}
			}
			if w.Len() == 0 {
				t.Error("no key left at the end: the run exercised little")
			}
			if tc.maxKeys > 0 && fullStatus == 0 {
				t.Error("DecideStatus never found the Window full: the run did not exercise ErrFull")
			}
			seen := map[string]bool{}
			w.Range(func(k string) bool {
				if seen[k] {
					t.Errorf("Range visited %s twice", k)
				}
				seen[k] = true
				return true
			})
			if len(seen) != w.Len() {
				t.Errorf("Range visited %d keys, Len is %d", len(seen), w.Len())
			}
		})
	}
}

// TestWindowEdges: errors for arguments out of range, keys not equal to
// themselves, the zero value, n at and beyond its bounds.
// limiterStatus is the Status that Window.DecideStatus(key, now, n) must
// return for a Window with the given limit, assembled from l's Decide,
// TokensAt and ReadyAt called one after the other (which, with no other
// goroutine, see the state the decision left), and the sentinel error
// Decide's error wraps.
func limiterStatus(l *keyed.Limiter[string, *window.Limiter], limit int, key string, now time.Time, n int) (keyed.Status, error) {
	var s keyed.Status
	ok, err := l.Decide(key, now, n)
	for _, e := range []error{keyed.ErrFull, keyed.ErrBadKey} {
		if errors.Is(err, e) {
			return s, e
		}
	}
	if err != nil && !errors.Is(err, keyed.ErrNeverReady) {
		panic(err)
	}
	s.Admitted = ok
	if !ok && err == nil {
		s.RetryAt, _ = l.ReadyAt(key, now, n)
	}
	s.Remaining = l.TokensAt(key, now)
	s.ResetAt, _ = l.ReadyAt(key, now, limit)
	if err != nil {
		return s, keyed.ErrNeverReady
	}
	return s, nil
}

// sameStatus compares two Statuses, their instants by wall clock (the
// monotonic readings of two stores differ).
func sameStatus(a, b keyed.Status) bool {
	return a.Admitted == b.Admitted && a.Remaining == b.Remaining &&
		a.RetryAt.Round(0).Equal(b.RetryAt.Round(0)) && a.ResetAt.Round(0).Equal(b.ResetAt.Round(0))
}

func TestWindowEdges(t *testing.T) {
	for _, tc := range []struct {
		limit int
		w     time.Duration
		opts  []keyed.Option
		want  string
	}{
		{0, time.Second, nil, "keyed: window: limit must be between 1 and"},
		{window.MaxLimit + 1, time.Second, nil, "keyed: window: limit must be between 1 and"},
		{1, 0, nil, "keyed: window: window must be between 1ns and"},
		{1, window.MaxWindow + 1, nil, "keyed: window: window must be between 1ns and"},
		{1, time.Second, []keyed.Option{keyed.MaxKeys(0)}, "keyed: MaxKeys must be between 1 and"},
		{1, time.Second, []keyed.Option{keyed.MaxKeys(2), keyed.MaxKeys(3)}, "keyed: MaxKeys given 2 times"},
	} {
		w, err := keyed.NewWindow[string](tc.limit, tc.w, tc.opts...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || w != nil {
			t.Errorf("NewWindow(%d, %v) = %v, %v; want nil and an error starting %q", tc.limit, tc.w, w, err, tc.want)
		}
	}

	w, err := keyed.NewWindow[float64](2, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if w.Limit() != 2 || w.Window() != time.Second {
		t.Errorf("Limit, Window = %d, %v", w.Limit(), w.Window())
	}
	now := time.Unix(1_700_000_000, 0)
	nan := math.NaN()
	if ok, err := w.Decide(nan, now, 1); ok || !errors.Is(err, keyed.ErrBadKey) {
		t.Errorf("Decide(NaN) = %v, %v; want false, ErrBadKey", ok, err)
	}
	if w.TokensAt(nan, now) != 0 || w.Len() != 0 {
		t.Error("a NaN key has tokens, or was created")
	}
	if _, ok := w.ReadyAt(nan, now, 1); ok {
		t.Error("ReadyAt(NaN) is ready")
	}
	if err := w.WaitN(context.Background(), nan, 1); !errors.Is(err, keyed.ErrBadKey) {
		t.Errorf("WaitN(NaN) = %v, want ErrBadKey", err)
	}
	w.Delete(nan) // nothing to do, no panic
	for _, n := range []int{-1, 3, math.MaxInt} {
		if ok, err := w.Decide(1, now, n); ok || !errors.Is(err, keyed.ErrNeverReady) {
			t.Errorf("Decide(n=%d) = %v, %v; want false, ErrNeverReady", n, ok, err)
		}
		if _, ok := w.ReadyAt(1, now, n); ok {
			t.Errorf("ReadyAt(n=%d) is ready", n)
		}
	}
	if ok, err := w.Decide(1, now, 0); !ok || err != nil || w.Len() != 0 {
		t.Errorf("Decide(n=0) = %v, %v (Len %d); want true, nil, no key", ok, err, w.Len())
	}
	if at, ok := w.ReadyAt(1, now, 0); !ok || !at.Equal(now) {
		t.Errorf("ReadyAt(n=0) = %v, %v", at, ok)
	}
	// Far instants: decided, never a panic or a spin.
	for _, at := range []time.Time{{}, time.Unix(math.MinInt64, 0), time.Unix(math.MaxInt64, 999_999_999)} {
		w.AllowN(5, at, 1)
		w.TokensAt(5, at)
		w.ReadyAt(5, at, 2)
	}

	var zero keyed.Window[string]
	for name, f := range map[string]func(){
		"AllowN": func() { zero.AllowN("a", now, 1) },
		"Sweep":  func() { zero.Sweep(now) },
		"Len":    func() { zero.Len() },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "NewWindow") {
					t.Errorf("zero Window's %s: panic %v, want one naming NewWindow", name, r)
				}
			}()
			f()
		}()
	}
	defer func() {
		if recover() == nil {
			t.Error("Range(nil) did not panic")
		}
	}()
	w.Range(nil)
}

// TestWindowFull: a full Window refuses new keys (ErrFull) and answers for
// them as the refusal did, keeps serving the keys it holds, and makes room by
// sweeping idle keys on its own.
func TestWindowFull(t *testing.T) {
	const W = time.Second
	w, err := keyed.NewWindow[string](2, W, keyed.MaxKeys(2))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now() // WaitN reads the clock
	if !w.AllowN("a", t0, 1) || !w.AllowN("b", t0, 1) {
		t.Fatal("first keys refused")
	}
	if ok, err := w.Decide("c", t0, 1); ok || !errors.Is(err, keyed.ErrFull) {
		t.Fatalf("Decide(c) on a full Window = %v, %v; want false, ErrFull", ok, err)
	}
	if w.TokensAt("c", t0) != 0 {
		t.Error("TokensAt of a key a full Window refuses is not 0")
	}
	if _, ok := w.ReadyAt("c", t0, 1); ok {
		t.Error("ReadyAt of a key a full Window refuses is ready")
	}
	if err := w.WaitN(context.Background(), "c", 1); !errors.Is(err, keyed.ErrFull) {
		t.Errorf("WaitN(c) = %v, want ErrFull", err)
	}
	if !w.AllowN("a", t0, 1) || w.AllowN("a", t0, 1) {
		t.Error("key a does not keep its own limit while the Window is full")
	}
	// Two windows later a and b are idle: the full Window sweeps them away.
	if !w.AllowN("c", t0.Add(2*W), 1) {
		t.Fatal("new key refused after the others became idle")
	}
	if w.Len() != 1 {
		t.Errorf("Len = %d after the automatic sweep, want 1", w.Len())
	}
}

// TestWindowWait: WaitN waits on simulated time until the key's window has
// room, as window.Limiter's WaitN does.
func TestWindowWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := keyed.NewWindow[string](2, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for i := range 2 {
			if !w.Allow("a") {
				t.Fatalf("Allow %d refused", i)
			}
		}
		// The next window from start+1s holds prev=2: one fits from elapsed
		// 0.5s, so at start+1.5s.
		if err := w.Wait(context.Background(), "a"); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if got := time.Since(start); got != 1500*time.Millisecond {
			t.Errorf("Wait returned after %v, want 1.5s", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := w.WaitN(ctx, "a", 2); !errors.Is(err, keyed.ErrDeadline) {
			t.Errorf("WaitN with a deadline too near = %v, want ErrDeadline", err)
		}
		if err := w.WaitN(context.Background(), "a", 3); !errors.Is(err, keyed.ErrNeverReady) {
			t.Errorf("WaitN(3) = %v, want ErrNeverReady", err)
		}
	})
}

// TestWindowZeroAllocs: deciding and querying for a present key allocates
// nothing, nor do the refusals that need no new key.
func TestWindowZeroAllocs(t *testing.T) {
	w, err := keyed.NewWindow[string](1000, time.Second, keyed.MaxKeys(1))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	w.AllowN("present", now, 1)
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		w.AllowN("present", now, 1)
		_, _ = w.Decide("present", now, 1)
		_, _ = w.Decide("present", now, -1)
		w.TokensAt("present", now)
		w.ReadyAt("present", now, 1)
		_, _ = w.DecideStatus("present", now, 1)
		_, _ = w.DecideStatus("present", now, 1001)
	})
	if allocs != 0 {
		t.Errorf("%v allocs per run on a present key, want 0", allocs)
	}
	// Refusing a new key because the Window is full allocates nothing
	// either (at one instant: the automatic sweep a later instant may start
	// records its instants).
	allocs = testing.AllocsPerRun(1000, func() {
		_, _ = w.Decide("absent", now, 1)
		_, _ = w.DecideStatus("absent", now, 1)
	})
	if allocs != 0 {
		t.Errorf("%v allocs per refusal of a new key, want 0", allocs)
	}
}

// TestOutsideDeleteLosesNoCall: a keyed.Window call that races with the
// deletion of its key decides on the key's new state, never answers from the
// removed cell: with a limit no state can reach, every call is admitted,
// however often the key is deleted under it. (A decision that answered from
// a dead cell was refused in 8 of 8 runs of this size, alone at the default
// GOMAXPROCS; the CI runs it ten times more.) keyed.Limiter has no such test: an admission
// on a limiter just deleted cannot be told from outside from one ordered
// before the Delete; its eviction races are checked by TestOutsideKeyedRing's
// sweeps.
func TestOutsideDeleteLosesNoCall(t *testing.T) {
	const workers, calls = 4, 100_000
	w, err := keyed.NewWindow[string](window.MaxLimit, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var stop atomic.Bool
	var deleter, callers sync.WaitGroup
	deleter.Go(func() {
		for !stop.Load() {
			w.Delete("k")
		}
	})
	var refused atomic.Int64
	for range workers {
		callers.Go(func() {
			for range calls {
				if !w.AllowN("k", now, 1) {
					refused.Add(1)
				}
			}
		})
	}
	callers.Wait()
	stop.Store(true)
	deleter.Wait()
	if n := refused.Load(); n != 0 {
		t.Errorf("%d of %d calls refused, with a limit of %d no state can reach", n, workers*calls, window.MaxLimit)
	}
}

// TestOutsideWindowChurn: goroutines create keys, decide, delete and sweep at
// once, on a table that grows and shrinks under them. No call may panic or
// hang, Len never exceeds MaxKeys, and when the calls stop, Len, Range and
// the keys' answers agree: each key Range visits is present (a fresh key
// would have the full limit), once.
func TestOutsideWindowChurn(t *testing.T) {
	const (
		maxKeys = 3000
		limit   = 3
	)
	w, err := keyed.NewWindow[int](limit, time.Hour, keyed.MaxKeys(maxKeys))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	seed := uint64(time.Now().UnixNano())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for i := range 20_000 {
				k := r.IntN(5000)
				switch r.IntN(50) {
				case 0:
					w.Delete(k)
				case 1:
					if i%10 == 0 {
						w.Sweep(now)
					}
				default:
					_, _ = w.Decide(k, now, 1)
				}
				if n := w.Len(); n > maxKeys {
					t.Errorf("Len = %d > MaxKeys", n)
					return
				}
			}
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	w.Range(func(k int) bool {
		if seen[k] {
			t.Errorf("seed %d: key %d visited twice", seed, k)
		}
		seen[k] = true
		if got := w.TokensAt(k, now); got == limit {
			// A key whose calls were all refused as full cannot be here;
			// every key present admitted at least one call.
			t.Errorf("seed %d: key %d is in Range but has the full limit", seed, k)
		}
		return true
	})
	if len(seen) != w.Len() {
		t.Errorf("seed %d: Range visited %d keys, Len is %d", seed, len(seen), w.Len())
	}
	if len(seen) == 0 {
		t.Errorf("seed %d: no key left: the run exercised little", seed)
	}
	// Every key goes when its window is over: the table empties.
	if got := w.Sweep(now.Add(3 * time.Hour)); got != len(seen) || w.Len() != 0 {
		t.Errorf("seed %d: final sweep removed %d of %d, Len %d", seed, got, len(seen), w.Len())
	}
}

// TestOutsideWindowSweepRace: keys idle at instant T are swept at T while
// goroutines decide for them at T. At one instant a window admits at most its
// limit; an admission that landed on an evicted state and was lost with it
// would let the key's new state admit the limit again. Every round uses new
// keys and a later T.
func TestOutsideWindowSweepRace(t *testing.T) {
	const (
		limit      = 2
		W          = time.Second
		goroutines = 4
		keys       = 256
		rounds     = 60
	)
	w, err := keyed.NewWindow[int](limit, W)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1_700_000_000, 0)
	for r := range rounds {
		T := base.Add(time.Duration(r+1) * 10 * W)
		for k := range keys {
			if !w.AllowN(r*keys+k, T.Add(-3*W), 1) { // the key exists, idle at T
				t.Fatalf("round %d: setup refused", r)
			}
		}
		var (
			start    sync.WaitGroup
			wg       sync.WaitGroup
			admitted [keys]atomic.Int32
		)
		start.Add(1)
		for g := range goroutines {
			wg.Go(func() {
				start.Wait()
				for i := range keys * (limit + 1) {
					k := (i*(2*g+1) + g*keys/goroutines) % keys // each goroutine its own order
					if w.AllowN(r*keys+k, T, 1) {
						admitted[k].Add(1)
					}
				}
			})
		}
		wg.Go(func() {
			start.Wait()
			for range 4 {
				w.Sweep(T)
			}
		})
		start.Done()
		wg.Wait()
		for k := range keys {
			if got := admitted[k].Load(); got != limit {
				t.Fatalf("round %d, key %d (GOMAXPROCS %d): %d admitted at one instant, want exactly the limit %d", r, k, runtime.GOMAXPROCS(0), got, limit)
			}
		}
	}
}

// TestWindowStringKeys: a Window keeps its own copy of a string key's bytes.
// A key of any length is found again from another string with the same
// bytes, Range gives back equal keys (also for a named string type), and a
// key cut from a larger string does not keep that string alive (nor in a
// Limiter, which stores a copy of a new key).
func TestWindowStringKeys(t *testing.T) {
	type name string
	w, err := keyed.NewWindow[name](1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	lengths := []int{0, 1, 15, 16, 17, 32, 33, 48, 49, 96, 97, 1000}
	want := map[name]bool{}
	for _, n := range lengths {
		k := name(strings.Repeat("k", n))
		want[k] = true
		if !w.AllowN(k, now, 1) {
			t.Fatalf("length %d: first call refused", n)
		}
		// Another string with the same bytes is the same key: its limit of
		// 1 per hour is used up.
		again := name(strings.Clone(string(k)))
		if w.AllowN(again, now, 1) {
			t.Fatalf("length %d: a copy of the key was admitted: it was not found", n)
		}
		if got := w.TokensAt(again, now); got != 0 {
			t.Fatalf("length %d: TokensAt of a copy = %d, want 0", n, got)
		}
	}
	got := map[name]bool{}
	w.Range(func(k name) bool { got[k] = true; return true })
	if len(got) != len(want) {
		t.Fatalf("Range gave %d keys, want %d", len(got), len(want))
	}
	for k := range want {
		if !got[k] {
			t.Errorf("Range did not give the key of length %d", len(k))
		}
	}

	// A key cut from a larger string does not keep that string alive, in a
	// Window or in a Limiter.
	ws, err := keyed.NewWindow[string](1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	requireKeyNotPinned(t, func(key string) bool { return ws.AllowN(key, now, 1) })
	if ws.AllowN("client-42", now, 1) || ws.Len() != 1 {
		t.Fatal("Window: the key was lost once the string it was cut from was collected")
	}
	l, err := keyed.New[string](func() (*window.Limiter, error) { return window.New(1, time.Hour) })
	if err != nil {
		t.Fatal(err)
	}
	requireKeyNotPinned(t, func(key string) bool { return l.AllowN(key, now, 1) })
	if l.AllowN("client-42", now, 1) || l.Len() != 1 {
		t.Fatal("Limiter: the key was lost once the string it was cut from was collected")
	}
}

// requireKeyNotPinned creates the key "client-42" with allow, passing it cut
// from a 1 MB string, and requires that string to be collected once the
// caller drops it, although the key stays in the store.
func requireKeyNotPinned(t *testing.T, allow func(key string) bool) {
	t.Helper()
	freed := make(chan struct{})
	func() {
		s := "client-42" + strings.Repeat(" ", 1<<20) // a request, say
		runtime.AddCleanup(unsafe.StringData(s), func(struct{}) { close(freed) }, struct{}{})
		if !allow(s[:9]) {
			t.Fatal("first call refused")
		}
	}()
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-deadline:
			t.Fatal("the string a key was cut from was never collected: the store keeps it alive")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestWindowRangeOnce: a key that f removes and inserts again while Range
// runs is not visited twice. Its new cell may take a tombstone further along
// its probe sequence than its old slot (a sequence that wraps round the end
// of the array), which a walk over the live array would meet again.
func TestWindowRangeOnce(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for round := range 5 {
		w, err := keyed.NewWindow[int](10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		const n = 20_000
		for k := range n {
			if !w.AllowN(k, now, 1) {
				t.Fatalf("key %d refused", k)
			}
		}
		for k := 0; k < n; k += 3 { // tombstones along the probe sequences
			w.Delete(k)
		}
		seen := map[int]int{}
		w.Range(func(k int) bool {
			seen[k]++
			w.Delete(k)
			w.AllowN(k, now, 1)
			return true
		})
		for k, c := range seen {
			if c != 1 {
				t.Fatalf("round %d: key %d visited %d times", round, k, c)
			}
		}
		if want := n - (n+2)/3; len(seen) != want {
			t.Fatalf("round %d: %d keys visited, want every key present for the whole Range, %d", round, len(seen), want)
		}
	}
}
