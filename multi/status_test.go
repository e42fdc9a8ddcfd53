package multi_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/internal/conformance"
	"github.com/slidelimit/slidelimit/multi"
)

// ruleStatuser is what both flavours offer to report a decision's status.
type ruleStatuser interface {
	lim
	DecideStatus(now time.Time, n int) slidelimit.Status
	DecideRules(now time.Time, n int, rules []slidelimit.Status) (slidelimit.Status, []slidelimit.Status)
	RemainingAt(now time.Time, dst []int) []int
	ResetsAt(now time.Time, dst []time.Time) []time.Time
}

var (
	_ ruleStatuser = (*multi.Limiter)(nil)
	_ ruleStatuser = (*multi.Approx)(nil)
)

func newStatuser(t testing.TB, flavour string, rules ...multi.Rule) ruleStatuser {
	t.Helper()
	var l ruleStatuser
	var err error
	if flavour == "exact" {
		l, err = multi.New(rules...)
	} else {
		l, err = multi.NewApprox(rules...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// sameInstant compares two answers of limiters with different clock bases:
// the wall clock alone (each carries the monotonic reading of its own New).
func sameInstant(a, b time.Time) bool { return a.Round(0).Equal(b.Round(0)) }

func sameStatus(a, b slidelimit.Status) bool {
	return a.Admitted == b.Admitted && a.Remaining == b.Remaining && sameInstant(a.RetryAt, b.RetryAt) && sameInstant(a.ResetAt, b.ResetAt)
}

// readyOrZero is ReadyAt's instant, or the zero Time for never.
func readyOrZero(l lim, at time.Time, n int) time.Time {
	r, ok := l.ReadyAt(at, n)
	if !ok {
		return time.Time{}
	}
	return r
}

// TestDecideRulesMatchesQueries feeds, one call at a time, the same random
// calls (conformance.RandomCall: weights, zero, negative and too large costs,
// stale instants, idle gaps) to three limiters of the same rules: one decides with DecideRules,
// one with DecideStatus, one with AllowN and is then asked TokensAt and
// ReadyAt. Beside them, for each rule, a limiter of that rule alone is given
// the calls the others admitted, so it holds that rule's part of the state.
// With nothing in between, every answer must be what the queries say: the
// whole status what TokensAt and ReadyAt of n and of MaxN answer, each rule's
// what RemainingAt and ResetsAt answer and what its own limiter's TokensAt
// and ReadyAt of n and of its limit answer.
func TestDecideRulesMatchesQueries(t *testing.T) {
	ruleSets := [][]multi.Rule{
		{{Limit: 7, Window: 100 * time.Millisecond}},
		{{Limit: 3, Window: 100 * time.Millisecond}, {Limit: 10, Window: time.Second}, {Limit: 25, Window: 10 * time.Second}},
		{{Limit: 20, Window: time.Second}, {Limit: 5, Window: 50 * time.Millisecond}},
	}
	for _, flavour := range []string{"exact", "approx"} {
		for _, rules := range ruleSets {
			t.Run(fmt.Sprintf("%s/%v", flavour, rules), func(t *testing.T) {
				decideRulesMatchesQueries(t, flavour, rules)
			})
		}
	}
}

func decideRulesMatchesQueries(t *testing.T, flavour string, rules []multi.Rule) {
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 13))
	a := newStatuser(t, flavour, rules...) // DecideRules
	s := newStatuser(t, flavour, rules...) // DecideStatus
	q := newStatuser(t, flavour, rules...) // AllowN, then the queries
	alone := make([]ruleStatuser, len(rules))
	for i, rl := range rules {
		alone[i] = newStatuser(t, flavour, rl)
	}
	maxN := a.MaxN()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []slidelimit.Status
	var rems []int
	var resets []time.Time
	w := rules[0].Window // the shortest, for the steps
	for _, rl := range rules {
		w = min(w, rl.Window)
	}
	for step := range 20_000 {
		var at time.Time
		var n int
		now, at, n = conformance.RandomCall(r, now, w, maxN)
		retry, retryOK := q.ReadyAt(at, n) // a refusal records nothing
		want := slidelimit.Status{Admitted: q.AllowN(at, n), Remaining: q.TokensAt(at)}
		if !want.Admitted && n != 0 && retryOK {
			want.RetryAt = retry
		}
		want.ResetAt = readyOrZero(q, at, maxN)
		var whole slidelimit.Status
		whole, got = a.DecideRules(at, n, got[:0])
		if st := s.DecideStatus(at, n); !sameStatus(whole, want) || !sameStatus(st, want) {
			t.Fatalf("seed %d step %d: DecideRules(%v, %d) = %+v and DecideStatus = %+v; the queries say %+v", seed, step, at, n, whole, st, want)
		}
		if len(got) != len(rules) {
			t.Fatalf("DecideRules gave %d rules' statuses for %d rules", len(got), len(rules))
		}
		rems, resets = q.RemainingAt(at, rems[:0]), q.ResetsAt(at, resets[:0])
		for i := range rules {
			if got[i].Remaining != rems[i] || !sameInstant(got[i].ResetAt, resets[i]) {
				t.Fatalf("seed %d step %d: DecideRules(%v, %d): rule %d's status %+v; RemainingAt and ResetsAt say %d, %v", seed, step, at, n, i, got[i], rems[i], resets[i])
			}
		}
		for i, al := range alone {
			if want.Admitted && !al.AllowN(at, n) {
				t.Fatalf("seed %d step %d: %d admitted at %v; rule %d alone refuses it", seed, step, n, at, i)
			}
			w := slidelimit.Status{Admitted: want.Admitted, Remaining: al.TokensAt(at), ResetAt: readyOrZero(al, at, rules[i].Limit)}
			if !want.Admitted && n >= 1 && n <= maxN {
				w.RetryAt = readyOrZero(al, at, n)
			}
			if !sameStatus(got[i], w) {
				t.Fatalf("seed %d step %d: DecideRules(%v, %d): rule %d's status %+v; its limiter alone says %+v", seed, step, at, n, i, got[i], w)
			}
		}
	}
}

// TestOutsideDecideRules has goroutines decide with DecideRules on one shared
// limiter, on a shared increasing clock (weighted calls, some stale, some
// out of range), at GOMAXPROCS 2 and 8: every answer must agree with itself
// (conformance.RunOutsideRules and RulesProblem), although other goroutines
// admit at the same time. (The bound itself is the shared conformance
// suite's, TestOutsideConformance.)
func TestOutsideDecideRules(t *testing.T) {
	rules := []multi.Rule{{Limit: 5, Window: 200}, {Limit: 40, Window: 20_000}}
	for _, flavour := range []string{"exact", "approx"} {
		t.Run(flavour, func(t *testing.T) {
			conformance.RunOutsideRules(t, []int{5, 40}, 1, 20_000, func() conformance.RulesDecider {
				l := newStatuser(t, flavour, rules...)
				return func(_ int, at time.Time, n int, each []slidelimit.Status) (slidelimit.Status, []slidelimit.Status, error) {
					whole, each := l.DecideRules(at, n, each)
					return whole, each, nil
				}
			}, func(error) bool { return false })
		})
	}
}

// TestDecideRulesAllocs: with room in the caller's slice, DecideRules,
// DecideStatus and ResetsAt allocate nothing, admitting or refusing.
func TestDecideRulesAllocs(t *testing.T) {
	rules := []multi.Rule{{Limit: 10, Window: time.Millisecond}, {Limit: 100, Window: time.Second}}
	for _, flavour := range []string{"exact", "approx"} {
		l := newStatuser(t, flavour, rules...)
		now := time.Now()
		buf := make([]slidelimit.Status, 0, len(rules))
		resets := make([]time.Time, 0, len(rules))
		cases := map[string]func(){
			"rules/admit":  func() { now = now.Add(time.Second); _, buf = l.DecideRules(now, 1, buf[:0]) },
			"rules/refuse": func() { _, buf = l.DecideRules(now, 10, buf[:0]); _, buf = l.DecideRules(now, 10, buf[:0]) },
			"rules/never":  func() { _, buf = l.DecideRules(now, 11, buf[:0]) },
			"status":       func() { now = now.Add(30 * time.Microsecond); l.DecideStatus(now, 1) },
			"ResetsAt":     func() { resets = l.ResetsAt(now, resets[:0]) },
		}
		for name, f := range cases {
			if a := testing.AllocsPerRun(1000, f); a != 0 {
				t.Errorf("%s: %s: %v allocs per call, want 0", flavour, name, a)
			}
		}
	}
}

// TestDecideRulesZeroValue: the zero values answer without panicking; they
// admit only n == 0, report nothing remaining and have no rule to reset.
func TestDecideRulesZeroValue(t *testing.T) {
	now := time.Now()
	for name, l := range map[string]interface {
		DecideStatus(time.Time, int) slidelimit.Status
		DecideRules(time.Time, int, []slidelimit.Status) (slidelimit.Status, []slidelimit.Status)
		ResetsAt(time.Time, []time.Time) []time.Time
	}{"exact": new(multi.Limiter), "approx": new(multi.Approx)} {
		for _, n := range []int{-1, 0, 1, 5} {
			st, each := l.DecideRules(now, n, nil)
			if st.Admitted != (n == 0) || st.Remaining != 0 || !st.RetryAt.IsZero() || len(each) != 0 {
				t.Errorf("%s: zero value DecideRules(now, %d) = %+v, %v", name, n, st, each)
			}
			if s := l.DecideStatus(now, n); s != st {
				t.Errorf("%s: zero value DecideStatus(now, %d) = %+v, DecideRules says %+v", name, n, s, st)
			}
			if r := l.ResetsAt(now, nil); len(r) != 0 {
				t.Errorf("%s: zero value ResetsAt = %v, want nothing", name, r)
			}
		}
	}
}
