package keyed_test

// Regression tests for keyed under faults and hostile input. Each
// test feeds what a buggy caller or an attacker can feed (a panicking or
// failing factory, keys not equal to themselves, callbacks that call back
// into the Limiter) and requires a clear error or a documented refusal, no
// hang, no spin, no leaked key, and nothing admitted beyond the limit.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/ring"
)

// returns runs f on another goroutine and fails the test if f does not
// return within a generous bound (a deadlock or a spin), or panics. It is a
// guard against a hang, not a measurement: a correct f returns at once.
func returns(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("%s panicked: %v", what, p)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return: deadlock or spin", what)
	}
}

// panics runs f and returns the value it panicked with, or nil.
func panics(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// switchable is a factory of naive limiters (limit 5 per second) whose next
// calls can be made to panic, fail or return nil.
type switchable struct {
	mode  atomic.Int32 // one of the constants below
	calls atomic.Int64
}

const (
	factoryOK int32 = iota
	factoryPanic
	factoryFail
	factoryNil
)

var errBoom = errors.New("boom")

func (s *switchable) make() (*naive, error) {
	s.calls.Add(1)
	switch s.mode.Load() {
	case factoryPanic:
		panic("factory boom")
	case factoryFail:
		return nil, errBoom
	case factoryNil:
		return nil, nil
	}
	return newNaive(5, time.Second), nil
}

func newSwitchable(t *testing.T, opts ...keyed.Option) (*keyed.Limiter[string, *naive], *switchable) {
	t.Helper()
	s := &switchable{}
	k, err := keyed.New[string](s.make, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return k, s
}

// TestPanickingFactory: a factory that panics for a key must leave no
// state behind (no entry, no reservation, no lock held): the panic reaches
// the caller, and afterwards every call on that key returns.
func TestPanickingFactory(t *testing.T) {
	k, s := newSwitchable(t, keyed.MaxKeys(2))
	s.mode.Store(factoryPanic)
	if p := panics(func() { k.AllowN("x", at(0), 1) }); p != "factory boom" {
		t.Fatalf("the factory's panic did not reach the caller: recovered %v", p)
	}
	s.mode.Store(factoryOK)
	if got := k.Len(); got != 0 {
		t.Errorf("Len after a panicking factory = %d, want 0 (the reservation must be released)", got)
	}
	returns(t, "AllowN on the key whose factory panicked", func() {
		if !k.AllowN("x", at(0), 1) {
			t.Error("AllowN(x) refused after the factory recovered")
		}
	})
	returns(t, "AllowN on another key", func() {
		if !k.AllowN("y", at(0), 1) {
			t.Error("AllowN(y) refused: the panic leaked a MaxKeys slot")
		}
	})
	returns(t, "Sweep", func() { k.Sweep(at(time.Hour)) })
	returns(t, "Delete", func() { k.Delete("x") })
	if got := k.Len(); got != 0 {
		t.Errorf("Len after sweeping and deleting = %d, want 0", got)
	}
}

// TestFactoryRunsWithoutLocks: the factory is user code, so it runs
// with no lock of the Limiter held: it may call any method, on any key,
// including the key being created.
func TestFactoryRunsWithoutLocks(t *testing.T) {
	var k *keyed.Limiter[string, *naive]
	var inside atomic.Bool
	k, err := keyed.New[string](func() (*naive, error) {
		if k != nil && inside.CompareAndSwap(false, true) {
			k.Delete("x")
			k.Sweep(at(0))
			k.Range(func(string) bool { return true })
			k.TokensAt("x", at(0))
			k.AllowN("other", at(0), 1)
			k.Delete("other")
		}
		return newNaive(5, time.Second), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	returns(t, "AllowN whose factory calls back into the Limiter", func() {
		if !k.AllowN("x", at(0), 1) {
			t.Error("AllowN(x) refused")
		}
	})
	if got := k.TokensAt("x", at(0)); got != 4 {
		t.Errorf("TokensAt(x) = %d, want 4", got)
	}
}

// TestNilLimiter: a factory that returns a nil limiter and no error
// (a nil pointer, also inside an interface) is an error, not a later nil
// dereference.
func TestNilLimiter(t *testing.T) {
	k, s := newSwitchable(t)
	s.mode.Store(factoryNil)
	ok, err := k.Decide("x", at(0), 1)
	if ok || err == nil || !strings.Contains(err.Error(), "nil limiter") {
		t.Errorf("Decide with a factory returning nil = %v, %v; want false and an error saying so", ok, err)
	}
	if got := k.Len(); got != 0 {
		t.Errorf("Len = %d, want 0", got)
	}

	var nilInside atomic.Bool
	ki, err := keyed.New[string](func() (keyed.PerKey, error) {
		if nilInside.Load() {
			return (*naive)(nil), nil
		}
		return newNaive(5, time.Second), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	nilInside.Store(true)
	returns(t, "AllowN with a nil pointer in the interface", func() {
		ok, err := ki.Decide("x", at(0), 1)
		if ok || err == nil {
			t.Errorf("Decide = %v, %v; want false and an error", ok, err)
		}
	})
	if _, err := keyed.New[string](func() (keyed.PerKey, error) { return (*naive)(nil), nil }); err == nil {
		t.Error("New accepted a factory returning a nil pointer in the interface")
	}
}

// TestFactoryErrorAgrees: after the factory fails for a key, every
// answer about that key agrees with the refusal: no tokens, no ready instant
// (so no Retry-After: 0 loop), and WaitN and Decide carry the factory's error.
func TestFactoryErrorAgrees(t *testing.T) {
	k, s := newSwitchable(t)
	s.mode.Store(factoryFail)
	ok, err := k.Decide("x", at(0), 1)
	if ok || !errors.Is(err, errBoom) {
		t.Errorf("Decide = %v, %v; want false and an error wrapping the factory's", ok, err)
	}
	if k.AllowN("x", at(0), 1) {
		t.Error("AllowN admitted with a failing factory")
	}
	if got := k.TokensAt("x", at(0)); got != 0 {
		t.Errorf("TokensAt after a factory failure = %d, want 0", got)
	}
	if _, ok := k.ReadyAt("x", at(0), 1); ok {
		t.Error("ReadyAt after a factory failure = ok, want false")
	}
	err = k.Wait(context.Background(), "x")
	if !errors.Is(err, errBoom) || !strings.HasPrefix(err.Error(), "keyed: WaitN(n=1)") {
		t.Errorf("Wait error = %v; want a keyed: WaitN(n=1) error wrapping the factory's", err)
	}
	if strings.Count(err.Error(), "keyed:") != 1 {
		t.Errorf("Wait error %q repeats the package prefix", err)
	}
	// Once the factory works again, the answers come back.
	s.mode.Store(factoryOK)
	if !k.AllowN("x", at(0), 1) {
		t.Error("AllowN refused after the factory recovered")
	}
	if got := k.TokensAt("y", at(0)); got != 5 {
		t.Errorf("TokensAt(absent key) after the factory recovered = %d, want 5", got)
	}
}

// TestBadKeys: a key not equal to itself (a NaN anywhere in it) can
// never be found again, so it must never enter the map; nor may a key whose
// dynamic type is not comparable panic.
func TestBadKeys(t *testing.T) {
	nan := math.NaN()
	check := func(t *testing.T, name string, decide func() (bool, error), tokens func() int, ready func() bool, wait func() error, del func(), length func() int, good func() bool) {
		t.Helper()
		for range 10 {
			ok, err := decide()
			if ok || !errors.Is(err, keyed.ErrBadKey) {
				t.Fatalf("%s: Decide = %v, %v; want false and ErrBadKey", name, ok, err)
			}
		}
		if got := tokens(); got != 0 {
			t.Errorf("%s: TokensAt = %d, want 0", name, got)
		}
		if ready() {
			t.Errorf("%s: ReadyAt ok, want false", name)
		}
		if err := wait(); !errors.Is(err, keyed.ErrBadKey) {
			t.Errorf("%s: Wait = %v, want ErrBadKey", name, err)
		}
		del()
		if got := length(); got != 0 {
			t.Errorf("%s: Len = %d after bad keys, want 0", name, got)
		}
		if !good() {
			t.Errorf("%s: a good key was refused after bad ones (MaxKeys filled?)", name)
		}
	}
	ctx := context.Background()
	factory := func() (*naive, error) { return newNaive(5, time.Second), nil }

	t.Run("float", func(t *testing.T) {
		k, _ := keyed.New[float64](factory, keyed.MaxKeys(3))
		check(t, "NaN", func() (bool, error) { return k.Decide(nan, at(0), 1) },
			func() int { return k.TokensAt(nan, at(0)) },
			func() bool { _, ok := k.ReadyAt(nan, at(0), 1); return ok },
			func() error { return k.Wait(ctx, nan) }, func() { k.Delete(nan) }, k.Len,
			func() bool { return k.AllowN(1.5, at(0), 1) })
	})
	t.Run("complex", func(t *testing.T) {
		k, _ := keyed.New[complex64](factory, keyed.MaxKeys(3))
		c := complex(float32(nan), 1)
		check(t, "complex NaN", func() (bool, error) { return k.Decide(c, at(0), 1) },
			func() int { return k.TokensAt(c, at(0)) },
			func() bool { _, ok := k.ReadyAt(c, at(0), 1); return ok },
			func() error { return k.Wait(ctx, c) }, func() { k.Delete(c) }, k.Len,
			func() bool { return k.AllowN(1, at(0), 1) })
	})
	type pair struct {
		Name  string
		Score float32
	}
	t.Run("struct", func(t *testing.T) {
		k, _ := keyed.New[pair](factory, keyed.MaxKeys(3))
		p := pair{"a", float32(nan)}
		check(t, "struct with NaN", func() (bool, error) { return k.Decide(p, at(0), 1) },
			func() int { return k.TokensAt(p, at(0)) },
			func() bool { _, ok := k.ReadyAt(p, at(0), 1); return ok },
			func() error { return k.Wait(ctx, p) }, func() { k.Delete(p) }, k.Len,
			func() bool { return k.AllowN(pair{"a", 1}, at(0), 1) })
	})
	t.Run("array", func(t *testing.T) {
		k, _ := keyed.New[[2]float64](factory, keyed.MaxKeys(3))
		a := [2]float64{1, nan}
		check(t, "array with NaN", func() (bool, error) { return k.Decide(a, at(0), 1) },
			func() int { return k.TokensAt(a, at(0)) },
			func() bool { _, ok := k.ReadyAt(a, at(0), 1); return ok },
			func() error { return k.Wait(ctx, a) }, func() { k.Delete(a) }, k.Len,
			func() bool { return k.AllowN([2]float64{1, 2}, at(0), 1) })
	})
	for _, bad := range []struct {
		name string
		key  any
	}{
		{"interface holding NaN", nan},
		{"interface holding a struct with NaN", pair{"a", float32(nan)}},
		{"interface holding an interface array with NaN", [1]any{nan}},
		{"interface holding a slice (not comparable)", []int{1}},
		{"interface holding a struct with a map", struct{ M map[int]int }{}},
	} {
		t.Run(bad.name, func(t *testing.T) {
			k, _ := keyed.New[any](factory, keyed.MaxKeys(3))
			check(t, bad.name, func() (bool, error) { return k.Decide(bad.key, at(0), 1) },
				func() int { return k.TokensAt(bad.key, at(0)) },
				func() bool { _, ok := k.ReadyAt(bad.key, at(0), 1); return ok },
				func() error { return k.Wait(ctx, bad.key) }, func() { k.Delete(bad.key) }, k.Len,
				func() bool { return k.AllowN("fine", at(0), 1) && k.AllowN(2.5, at(0), 1) })
		})
	}
}

// TestNAboveLimitCreatesNothing: a call that can never be admitted
// creates no key (it would only take a MaxKeys slot).
func TestNAboveLimitCreatesNothing(t *testing.T) {
	k, s := newSwitchable(t, keyed.MaxKeys(1))
	before := s.calls.Load()
	for _, n := range []int{6, math.MaxInt, -1, math.MinInt} {
		ok, err := k.Decide("x", at(0), n)
		if ok || !errors.Is(err, keyed.ErrNeverReady) {
			t.Errorf("Decide(n=%d) = %v, %v; want false and ErrNeverReady", n, ok, err)
		}
		if k.AllowN("x", at(0), n) {
			t.Errorf("AllowN(n=%d) admitted", n)
		}
	}
	if got := k.Len(); got != 0 {
		t.Errorf("Len = %d after calls with n out of range, want 0", got)
	}
	if got := s.calls.Load() - before; got != 0 {
		t.Errorf("the factory ran %d times for calls with n out of range, want 0", got)
	}
	if !k.AllowN("y", at(0), 5) {
		t.Error("AllowN(y, 5) refused")
	}
	// A present key: n above the limit is refused with the same error.
	if ok, err := k.Decide("y", at(time.Hour), 6); ok || !errors.Is(err, keyed.ErrNeverReady) {
		t.Errorf("Decide(present key, n=6) = %v, %v; want false and ErrNeverReady", ok, err)
	}
}

// TestNewChecks: two MaxKeys options are an error naming the option;
// a factory that returns one shared limiter for every key is an error.
func TestNewChecks(t *testing.T) {
	f := func() (*naive, error) { return newNaive(1, time.Second), nil }
	_, err := keyed.New[string](f, keyed.MaxKeys(10), keyed.MaxKeys(20))
	if err == nil || !strings.Contains(err.Error(), "MaxKeys") {
		t.Errorf("New with two MaxKeys options: error %v, want one naming MaxKeys", err)
	}
	shared := newNaive(1, time.Second)
	_, err = keyed.New[string](func() (*naive, error) { return shared, nil })
	if err == nil || !strings.Contains(err.Error(), "same limiter") {
		t.Errorf("New with a factory returning one shared limiter: error %v, want one saying so", err)
	}
	sharedRing, _ := ring.New(1, time.Second)
	_, err = keyed.New[string](func() (keyed.PerKey, error) { return sharedRing, nil })
	if err == nil {
		t.Error("New accepted a factory returning one shared limiter through an interface")
	}
}

// TestZeroLimiter: the zero Limiter and a nil *Limiter panic with a
// message that says what is wrong, not a nil dereference.
func TestZeroLimiter(t *testing.T) {
	var zero keyed.Limiter[string, *ring.Limiter]
	var nilPtr *keyed.Limiter[string, *ring.Limiter]
	for name, k := range map[string]*keyed.Limiter[string, *ring.Limiter]{"zero": &zero, "nil": nilPtr} {
		calls := map[string]func(){
			"Allow":    func() { k.Allow("x") },
			"AllowN":   func() { k.AllowN("x", at(0), 1) },
			"Decide":   func() { _, _ = k.Decide("x", at(0), 1) },
			"TokensAt": func() { k.TokensAt("x", at(0)) },
			"ReadyAt":  func() { k.ReadyAt("x", at(0), 1) },
			"Wait":     func() { _ = k.Wait(context.Background(), "x") },
			"Sweep":    func() { k.Sweep(at(0)) },
			"Delete":   func() { k.Delete("x") },
			"Len":      func() { k.Len() },
			"Range":    func() { k.Range(func(string) bool { return true }) },
		}
		for m, call := range calls {
			p := panics(call)
			s, _ := p.(string)
			if !strings.HasPrefix(s, "keyed: ") || !strings.Contains(s, "New") {
				t.Errorf("%s Limiter: %s panicked with %v, want a keyed: message pointing to New", name, m, p)
			}
		}
	}
}

// TestRangeCallbacks: Range's callback may panic, or call any method
// of the same Limiter, on the key being visited or others.
func TestRangeCallbacks(t *testing.T) {
	k, _ := newSwitchable(t)
	for _, key := range []string{"a", "b", "c", "d"} {
		k.AllowN(key, at(0), 1)
	}
	if p := panics(func() { k.Range(func(string) bool { panic("range boom") }) }); p != "range boom" {
		t.Fatalf("Range's callback panic was not propagated: %v", p)
	}
	returns(t, "AllowN after Range's callback panicked", func() { k.AllowN("a", at(0), 1) })
	returns(t, "Range whose callback calls back into the Limiter", func() {
		k.Range(func(key string) bool {
			k.AllowN(key, at(0), 1)
			k.TokensAt(key, at(0))
			k.Sweep(at(time.Hour))
			k.AllowN(key+"-new", at(time.Hour), 1)
			k.Delete(key)
			return true
		})
	})
	seen := 0
	k.Range(func(string) bool { seen++; return true })
	if got := k.Len(); got != seen {
		t.Errorf("Len = %d but Range visits %d keys", got, seen)
	}
}

// panicky is a naive limiter whose IdleAt panics when its countdown reaches
// zero: a PerKey implemented by the user is user code too.
type panicky struct {
	*naive
	countdown *atomic.Int32
}

func (p panicky) IdleAt(now time.Time) bool {
	if p.countdown.Load() > 0 && p.countdown.Add(-1) == 0 {
		panic("idle boom")
	}
	return p.naive.IdleAt(now)
}

// TestPanickingIdleAt: a limiter whose IdleAt panics during a sweep,
// at its first look or at its second (when the key is marked as being
// inspected), leaves the key usable and later sweeps working.
func TestPanickingIdleAt(t *testing.T) {
	for _, which := range []int32{1, 2} {
		var countdown atomic.Int32
		k, err := keyed.New[string](func() (panicky, error) {
			return panicky{newNaive(2, time.Second), &countdown}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		k.AllowN("a", at(0), 1)
		countdown.Store(which)
		if p := panics(func() { k.Sweep(at(time.Hour)) }); p != "idle boom" {
			t.Fatalf("IdleAt call %d: Sweep did not propagate IdleAt's panic: %v", which, p)
		}
		checkUsableAfterIdlePanic(t, k)
	}
}

func checkUsableAfterIdlePanic(t *testing.T, k *keyed.Limiter[string, panicky]) {
	t.Helper()
	returns(t, "AllowN after IdleAt panicked in a sweep", func() { k.AllowN("a", at(time.Hour), 1) })
	returns(t, "Delete after IdleAt panicked in a sweep", func() { k.Delete("b") })
	returns(t, "Sweep after IdleAt panicked in a sweep", func() { k.Sweep(at(2 * time.Hour)) })
	if got := k.Len(); got != 0 {
		t.Errorf("Len = %d after the last sweep, want 0", got)
	}
}

// TestDoneContext: WaitN with a context already done admits nothing
// and creates no key, even when n would be admitted at once.
func TestDoneContext(t *testing.T) {
	k, s := newSwitchable(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := s.calls.Load()
	if err := k.WaitN(ctx, "x", 1); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitN(done ctx) = %v, want context.Canceled", err)
	}
	if k.Len() != 0 || s.calls.Load() != before {
		t.Error("WaitN with a done context created a key")
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	if err := k.WaitN(ctx, "x", 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitN(expired ctx) = %v, want context.DeadlineExceeded", err)
	}
}

// TestChurnKeepsCount: creation racing with failing and panicking
// factories, sweeps, deletes and ranges never leaks a MaxKeys slot: once
// every key is deleted, Len is 0 and MaxKeys new keys fit again.
func TestChurnKeepsCount(t *testing.T) {
	const maxKeys = 8
	var calls atomic.Int64
	k, err := keyed.New[int](func() (*naive, error) {
		switch c := calls.Add(1); {
		case c > 2 && c%7 == 0:
			panic("churn boom")
		case c > 2 && c%5 == 0:
			return nil, errBoom
		}
		return newNaive(1, time.Second), nil
	}, keyed.MaxKeys(maxKeys))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				key := (i*7 + g) % 16
				now := at(time.Duration(i) * time.Millisecond)
				switch i % 10 {
				case 0:
					k.Sweep(now)
				case 1:
					k.Delete(key)
				case 2:
					k.Range(func(int) bool { return true })
				default:
					_ = panics(func() { k.AllowN(key, now, 1) })
				}
				if n := k.Len(); n > maxKeys {
					t.Errorf("Len = %d > MaxKeys", n)
					return
				}
			}
		}()
	}
	wg.Wait()
	for key := range 16 {
		k.Delete(key)
	}
	if got := k.Len(); got != 0 {
		t.Fatalf("Len = %d after deleting every key, want 0: a slot leaked", got)
	}
	calls.Store(-1000) // no more failures
	for key := range maxKeys {
		if !k.AllowN(key, at(time.Hour), 1) {
			t.Errorf("key %d refused in an empty Limiter", key)
		}
	}
}

// TestExtremeInstants: calls at the zero time.Time and at far-future
// instants neither panic nor disagree: when ReadyAt says n fits at now,
// AllowN at now admits it, and TokensAt is within [0, limit].
func TestExtremeInstants(t *testing.T) {
	instants := []time.Time{
		{},
		time.Unix(0, 0),
		time.Now().Add(-200 * 365 * 24 * time.Hour),
		time.Now(),
		time.Now().Add(100 * 365 * 24 * time.Hour),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	}
	for i, now := range instants {
		k, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(3, time.Second) })
		if err != nil {
			t.Fatal(err)
		}
		returns(t, fmt.Sprintf("calls at instant %d (%v)", i, now), func() {
			for range 5 {
				tokens := k.TokensAt("x", now)
				if tokens < 0 || tokens > 3 {
					t.Errorf("instant %d: TokensAt = %d, want within [0, 3]", i, tokens)
				}
				at, ok := k.ReadyAt("x", now, 1)
				admitted := k.AllowN("x", now, 1)
				if ok && at.Equal(now) && !admitted {
					t.Errorf("instant %d: ReadyAt said 1 fits now, AllowN refused", i)
				}
				if admitted && tokens < 1 {
					t.Errorf("instant %d: AllowN admitted with TokensAt 0", i)
				}
			}
			k.Sweep(now)
			k.Delete("x")
		})
	}
}

// liar is a PerKey whose ReadyAt always says "now" while its AllowN refuses:
// WaitN on it must poll, not spin.
type liar struct {
	*naive
	allows *atomic.Int64
}

func (l liar) AllowN(now time.Time, n int) bool {
	return l.allows.Add(1) > 10_000 // a spinning WaitN gets through after 10,000 tries
}

func (l liar) ReadyAt(now time.Time, n int) (time.Time, bool) { return now, true }

// TestWaitNeverSpins: a WaitN whose limiter contradicts itself pauses
// between tries (on the fake clock of a synctest bubble) until its context
// ends, instead of spinning.
func TestWaitNeverSpins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var allows atomic.Int64
		k, err := keyed.New[string](func() (liar, error) { return liar{newNaive(1, time.Second), &allows}, nil })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err = k.Wait(ctx, "x")
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, keyed.ErrDeadline) {
			t.Errorf("Wait = %v, want the context's deadline", err)
		}
		if got := allows.Load(); got >= 1000 {
			t.Errorf("Wait tried AllowN %d times in 50 ms of fake time: it spins", got)
		}
	})
}

// TestDeleteDuringSweep: while a sweep asks a key's limiter whether it
// is idle (user code, for a PerKey of the user's own), Delete on that key and
// calls on other keys return at once: the sweep holds no lock. The key's slot
// is released exactly once, whoever removes it.
func TestDeleteDuringSweep(t *testing.T) {
	var idleCalls atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	k, err := keyed.New[string](func() (*naive, error) {
		l := newNaive(2, time.Second)
		l.inIdle = func(time.Time) {
			if idleCalls.Add(1) == 2 { // the sweep's second look at "a"
				close(entered)
				<-release
			}
		}
		return l, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	k.AllowN("a", at(0), 1)
	k.AllowN("b", at(time.Second), 1) // not idle at the sweep's instant: one look only
	swept := make(chan int, 1)
	go func() { swept <- k.Sweep(at(time.Second)) }()
	<-entered
	returns(t, "Delete while the sweep inspects the key", func() { k.Delete("a") })
	returns(t, "AllowN on another key while the sweep inspects a key", func() { k.AllowN("c", at(time.Second), 1) })
	close(release)
	if got := <-swept; got != 0 {
		t.Errorf("Sweep removed %d keys, want 0: Delete removed a first", got)
	}
	if got := k.Len(); got != 2 {
		t.Errorf("Len = %d after Delete raced with a sweep, want 2 (b and c)", got)
	}
	// Every key's slot comes back exactly once.
	for _, key := range []string{"a", "b", "c"} {
		k.Delete(key)
	}
	if got := k.Len(); got != 0 {
		t.Errorf("Len = %d after deleting every key, want 0: a slot was released twice or never", got)
	}
}

// userLimiter is a PerKey of the user's own whose methods panic on demand.
type userLimiter struct {
	*naive
	boom *atomic.Bool
}

func (u userLimiter) AllowN(now time.Time, n int) bool {
	if u.boom.Load() {
		panic("allow boom")
	}
	return u.naive.AllowN(now, n)
}

func (u userLimiter) TokensAt(now time.Time) int {
	if u.boom.Load() {
		panic("tokens boom")
	}
	return u.naive.TokensAt(now)
}

// TestPanickingLimiterMethods: a PerKey whose AllowN or TokensAt
// panics leaves the Limiter usable once it stops: nothing is held.
func TestPanickingLimiterMethods(t *testing.T) {
	var boom atomic.Bool
	k, err := keyed.New[string](func() (userLimiter, error) {
		return userLimiter{newNaive(2, time.Second), &boom}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	k.AllowN("a", at(0), 1)
	boom.Store(true)
	if p := panics(func() { k.AllowN("a", at(0), 1) }); p != "allow boom" {
		t.Errorf("AllowN's panic = %v", p)
	}
	if p := panics(func() { k.AllowN("new", at(0), 1) }); p != "allow boom" {
		t.Errorf("AllowN's panic on a new key = %v", p)
	}
	if p := panics(func() { k.TokensAt("a", at(0)) }); p != "tokens boom" {
		t.Errorf("TokensAt's panic = %v", p)
	}
	boom.Store(false)
	returns(t, "calls after the limiter's panics", func() {
		if !k.AllowN("a", at(0), 1) {
			t.Error("AllowN(a) refused: the panicking call counted")
		}
		if k.AllowN("a", at(0), 1) {
			t.Error("AllowN(a) admitted a third call with limit 2")
		}
		k.Sweep(at(time.Hour))
		k.Delete("new")
	})
	if got := k.Len(); got != 0 {
		t.Errorf("Len = %d, want 0", got)
	}
}
