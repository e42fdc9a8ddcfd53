package keyed_test

import (
	"errors"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/window"
)

// hookedApprox runs *hook, once, right after each DecideRules decision: a
// seam to make a sweep land between a decision and its check of the key.
type hookedApprox struct {
	*multi.Approx
	hook *func()
}

func (h hookedApprox) DecideRules(now time.Time, n int, rules []slidelimit.Status) (slidelimit.Status, []slidelimit.Status) {
	s, rules := h.Approx.DecideRules(now, n, rules)
	if f := *h.hook; f != nil {
		*h.hook = nil
		f()
	}
	return s, rules
}

// TestDecideRulesVoidRoundAppendsNothing: a decision made on a limiter that a
// sweep evicted meanwhile is void and made again; when the new round then
// fails (here with ErrFull: the sweep made room and another key took it),
// DecideRules returns the slice as it was given, not with the void round's
// per-rule statuses, which said admitted for a call that was not.
func TestDecideRulesVoidRoundAppendsNothing(t *testing.T) {
	var hook func()
	k, err := keyed.New[string](func() (hookedApprox, error) {
		a, err := multi.NewApprox(multi.Rule{Limit: 5, Window: time.Second}, multi.Rule{Limit: 50, Window: time.Minute})
		return hookedApprox{a, &hook}, err
	}, keyed.MaxKeys(1))
	if err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Hour)
	k.AllowN("a", t0, 1)
	hook = func() {
		if n := k.Sweep(later); n != 1 {
			t.Errorf("the sweep removed %d keys, want 1", n)
		}
		if !k.AllowN("b", later, 1) {
			t.Error("b refused")
		}
	}
	given := []keyed.Status{{Remaining: 7}}
	s, rules, err := k.DecideRules("a", t0, 1, given)
	if !errors.Is(err, keyed.ErrFull) {
		t.Fatalf("err = %v, want ErrFull", err)
	}
	if s.Admitted || len(rules) != 1 || rules[0].Remaining != 7 {
		t.Errorf("refused with ErrFull: Status %+v and rules %+v, want not admitted and the slice as given", s, rules)
	}
}

// TestDecideRulesAtFloor: a call before the latest sweep's instant (the floor)
// is decided at the floor, as AllowN decides it; what fits at the floor fits
// at the caller's now, so DecideRules says now for it, as ReadyAt and
// DecideStatus do, both in its Status and in each rule's.
func TestDecideRulesAtFloor(t *testing.T) {
	rules := []multi.Rule{{Limit: 1, Window: time.Hour}, {Limit: 5, Window: time.Second}}
	for _, name := range []string{"approx", "exact"} {
		k, err := keyed.New[string](func() (keyed.PerKey, error) {
			if name == "approx" {
				return multi.NewApprox(rules...)
			}
			return multi.New(rules...)
		})
		if err != nil {
			t.Fatal(err)
		}
		k.AllowN("present", t0, 1)
		floor := t0.Add(10 * time.Second)
		k.Sweep(floor) // "present" stays: its hour rule still counts
		now := t0.Add(5 * time.Second)

		st, _ := k.DecideStatus("absent", now, 0)
		sr, rs, _ := k.DecideRules("absent", now, 0, nil)
		if !st.ResetAt.Equal(now) || !sr.ResetAt.Equal(now) || len(rs) != 2 || !rs[0].ResetAt.Equal(now) || !rs[1].ResetAt.Equal(now) {
			t.Errorf("%s, absent key, n = 0: ResetAt: DecideStatus now%+v, DecideRules now%+v, rules %v; want now everywhere",
				name, st.ResetAt.Sub(now), sr.ResetAt.Sub(now), rs)
		}
		if at, ok := k.ReadyAt("absent", now, 1); !ok || !at.Equal(now) {
			t.Fatalf("%s: ReadyAt(absent) = now%+v, %v", name, at.Sub(now), ok)
		}

		s, rs, err := k.DecideRules("present", now, 1, nil)
		if err != nil || s.Admitted || len(rs) != 2 {
			t.Fatalf("%s, present key: %+v, %v, %v; want refused by the hour rule", name, s, rs, err)
		}
		if rs[1].Remaining != 5 || !rs[1].RetryAt.Equal(now) || !rs[1].ResetAt.Equal(now) {
			t.Errorf("%s, present key: the 5/s rule alone says %d remaining, 1 fits at now%+v, the whole limit at now%+v; want 5, now, now",
				name, rs[1].Remaining, rs[1].RetryAt.Sub(now), rs[1].ResetAt.Sub(now))
		}
		if !s.RetryAt.After(now) || !rs[0].RetryAt.Equal(s.RetryAt) {
			t.Errorf("%s, present key: RetryAt now%+v, the hour rule's now%+v; want the same instant, after now",
				name, s.RetryAt.Sub(now), rs[0].RetryAt.Sub(now))
		}
	}
}

// labelled is a PerKey type of a user's own that is a value of two words
// (a limiter and a label): converting it to an interface would copy it to
// the heap.
type labelled struct {
	*window.Limiter
	label *string
}

// rulesValue is the same for a limiter with DecideRules.
type rulesValue struct {
	*multi.Approx
	label *string
}

// TestValuePerKeyZeroAllocs: a decision and its status on a present key
// allocate nothing when the PerKey type is a value, not a pointer.
func TestValuePerKeyZeroAllocs(t *testing.T) {
	label := "x"
	w, err := keyed.New[string](func() (labelled, error) {
		l, err := window.New(1_000_000, time.Second)
		return labelled{l, &label}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := keyed.New[string](func() (rulesValue, error) {
		a, err := multi.NewApprox(multi.Rule{Limit: 1_000_000, Window: time.Second})
		return rulesValue{a, &label}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	w.AllowN("a", now, 1)
	m.AllowN("a", now, 1)
	rules := make([]keyed.Status, 0, 4)
	for name, f := range map[string]func(){
		"window AllowN":       func() { w.AllowN("a", now, 1) },
		"window DecideStatus": func() { _, _ = w.DecideStatus("a", now, 1) },
		"window DecideRules":  func() { _, _, _ = w.DecideRules("a", now, 1, rules[:0]) },
		"approx DecideStatus": func() { _, _ = m.DecideStatus("a", now, 1) },
		"approx DecideRules":  func() { _, _, _ = m.DecideRules("a", now, 1, rules[:0]) },
	} {
		if a := testing.AllocsPerRun(100, func() { now = now.Add(time.Millisecond); f() }); a != 0 {
			t.Errorf("%s on a present key: %v allocations per call, want 0", name, a)
		}
	}
	// And the value's own DecideStatus and DecideRules are the ones used.
	if s, _ := w.DecideStatus("a", now, 1); !s.Admitted || s.Remaining != w.TokensAt("a", now) {
		t.Errorf("window DecideStatus: %+v", s)
	}
	if _, rs, _ := m.DecideRules("a", now, 1, nil); len(rs) != 1 {
		t.Errorf("approx DecideRules appended %d rule statuses, want 1", len(rs))
	}
}

// TestBadKeyAllocs: refusing a key that holds a value of an uncomparable type
// (ErrBadKey) allocates nothing, in both stores. (A comparable type holding
// one deeper inside, such as a struct with an interface field holding a
// slice, is found by comparing, and refusing it allocates the runtime
// panic's message.)
func TestBadKeyAllocs(t *testing.T) {
	k, err := keyed.New[any](func() (*window.Limiter, error) { return window.New(10, time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	w, err := keyed.NewWindow[any](10, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []any{[]int{1}, map[string]int{}, func() {}, [1][]byte{}} {
		if _, err := k.Decide(bad, t0, 1); !errors.Is(err, keyed.ErrBadKey) {
			t.Fatalf("Limiter.Decide(%T) = %v, want ErrBadKey", bad, err)
		}
		if _, err := w.Decide(bad, t0, 1); !errors.Is(err, keyed.ErrBadKey) {
			t.Fatalf("Window.Decide(%T) = %v, want ErrBadKey", bad, err)
		}
		a := testing.AllocsPerRun(100, func() { _, _ = k.Decide(bad, t0, 1) })
		b := testing.AllocsPerRun(100, func() { _, _ = w.Decide(bad, t0, 1) })
		if a != 0 || b != 0 {
			t.Errorf("refusing a %T key: Limiter.Decide %v, Window.Decide %v allocations per call, want 0", bad, a, b)
		}
	}
	type holder struct{ v any }
	if _, err := k.Decide(holder{[]int{1}}, t0, 1); !errors.Is(err, keyed.ErrBadKey) {
		t.Fatalf("Limiter.Decide(a struct holding a slice) = %v, want ErrBadKey", err)
	}
	if _, err := k.Decide(holder{1}, t0, 1); err != nil {
		t.Fatalf("Limiter.Decide(a struct holding an int) = %v", err)
	}
}
