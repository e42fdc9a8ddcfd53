package multi_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/multi"
)

// TestDifferential replays random call sequences through both flavours and
// their naive references (newLogOracle, newApproxOracle), one call at a
// time, with 1, 3, 9 and 12 rules (Approx keeps up to 8 rules' views on the
// stack, so 9 and 12 take its other path). Limits go up to 100 and costs
// from -1 to the smallest limit plus one, mostly batches (n >= 2); instants
// step by fractions and multiples of random rules' windows, land on the edges
// of windows after admissions, go stale (before the state's latest instant)
// and jump over idle gaps. Before every decision it compares TokensAt,
// RemainingAt, ResetsAt, ReadyAt and IdleAt; every decision is made by
// AllowN, DecideStatus or DecideRules, at random, and its whole answer
// compared. Each rule's answers (ResetsAt, and each rule's Remaining,
// RetryAt and ResetAt in DecideRules) are compared with a reference of that
// rule alone given the same decisions: "as if it were the only rule" on the
// same state. Seeds are fixed and named in failures.
func TestDifferential(t *testing.T) {
	flavours := []struct {
		name string
		ref  func([]multi.Rule) oracle
	}{
		{"exact", newLogOracle},
		{"approx", newApproxOracle},
	}
	for _, fl := range flavours {
		for _, nr := range []int{1, 3, 9, 12} {
			for seed := uint64(1); seed <= 2; seed++ {
				rules := diffRules(rand.New(rand.NewPCG(seed, uint64(nr))), nr)
				t.Run(fmt.Sprintf("%s/%d-rules/seed-%d", fl.name, nr, seed), func(t *testing.T) {
					runDifferential(t, fl.name, fl.ref, rules, seed)
				})
			}
		}
	}
}

// diffWindows are the windows diffRules picks from (nanoseconds): tiny and
// coprime ones, so that windows of several rules interleave, up to a few
// seconds (a stamp moved by a second matters to every one of them).
var diffWindows = []time.Duration{7, 10, 64, 100, 333, 1000, 4096, 10_000, 1_000_000, time.Second, 3 * time.Second}

// diffRules returns nr rules with limits in [2, 100] (the first one at most
// 20, so batches fill it) and windows from diffWindows; with 9 rules or
// more, one rule is repeated.
func diffRules(r *rand.Rand, nr int) []multi.Rule {
	rules := make([]multi.Rule, nr)
	for i := range rules {
		rules[i] = multi.Rule{Limit: 2 + r.IntN(99), Window: diffWindows[r.IntN(len(diffWindows))]}
	}
	rules[0].Limit = 2 + r.IntN(19)
	if nr >= 9 {
		rules[nr-1] = rules[r.IntN(nr-1)]
	}
	return rules
}

// diffSteps is the number of decisions per sequence: the references are
// quadratic and the Approx's ReadyAt is a binary search in math/big.
const diffSteps = 350

// differential is one sequence's state: the limiter under test, its
// reference, a reference of each rule alone, and what the checks reuse.
type differential struct {
	t         *testing.T
	name      string
	l         ruleStatuser
	ref       oracle
	alone     []oracle
	rules     []multi.Rule
	base      time.Time // the limiter's base: instants are offsets from it
	minLimit  int
	call      int
	ints      []int
	instants  []time.Time
	statuses  []slidelimit.Status
	batches   int // batches admitted
	decisions [3]int
}

func runDifferential(t *testing.T, flavour string, newRef func([]multi.Rule) oracle, rules []multi.Rule, seed uint64) {
	d := &differential{
		t:     t,
		name:  fmt.Sprintf("%s rules %v seed %d", flavour, rules, seed),
		l:     newStatuser(t, flavour, rules...),
		ref:   newRef(rules),
		rules: rules,
	}
	switch l := d.l.(type) {
	case *multi.Limiter:
		d.base = multi.BaseOf(l)
	case *multi.Approx:
		d.base = multi.BaseOf(l)
	}
	d.minLimit = d.l.MaxN()
	for i := range rules {
		d.alone = append(d.alone, newRef(rules[i:i+1]))
	}
	r := rand.New(rand.NewPCG(seed, 0xd1ff))
	var maxW int64
	for _, rl := range rules {
		maxW = max(maxW, int64(rl.Window))
	}
	var now, lastAdmit int64 = int64(time.Hour), int64(time.Hour) // room to go stale
	for d.call = range diffSteps {
		rl := rules[r.IntN(len(rules))]
		w, lim := int64(rl.Window), int64(rl.Limit)
		var back int64 // how far before the clock the instant presented is
		switch k := r.IntN(32); {
		case k < 6: // the same instant
		case k < 14: // about one unit's share of a window
			now += 1 + r.Int64N(w/lim+1)
		case k < 18: // into the window
			now += r.Int64N(w + 1)
		case k < 22: // on the edge of a window after the latest admission
			now = max(now, lastAdmit+w+r.Int64N(3)-1)
		case k < 24: // past two windows of a rule
			now += 2*w + r.Int64N(w)
		case k < 25: // idle: past two of the longest windows
			now += 2*maxW + r.Int64N(maxW)
		case k < 29: // a stale instant, the clock staying
			back = r.Int64N(2*w + 1)
		case k < 30: // the clock itself goes back
			now -= r.Int64N(w + 1)
		default: // a few nanoseconds
			now += r.Int64N(4)
		}
		at := now - back
		n := d.cost(r)
		retry := d.queries(at, n)
		if r.IntN(8) == 0 { // and at another instant, before or after
			d.queries(at+r.Int64N(4*w+1)-w, d.cost(r))
		}
		if d.decide(at, n, r.IntN(3), retry) && n > 0 {
			lastAdmit = max(lastAdmit, at)
			if n >= 2 {
				d.batches++
			}
		}
	}
	// The sequence must have done what it is for.
	if d.minLimit >= 2 && d.batches < 10 {
		t.Errorf("%s: only %d batches admitted in %d calls", d.name, d.batches, diffSteps)
	}
	for k, c := range d.decisions {
		if c < diffSteps/5 {
			t.Errorf("%s: only %d decisions of kind %d in %d calls", d.name, c, k, diffSteps)
		}
	}
}

// cost is a random cost: mostly batches within the smallest limit, some
// units, some zero, negative or above the smallest limit.
func (d *differential) cost(r *rand.Rand) int {
	switch k := r.IntN(20); {
	case k < 4:
		return 1
	case k < 14:
		return 2 + r.IntN(max(d.minLimit-1, 1)) // 2..minLimit
	case k < 15:
		return d.minLimit
	case k < 17:
		return d.minLimit + 1
	case k < 18:
		return 0
	case k < 19:
		return -1 - r.IntN(2)
	default: // up to the largest limit plus one
		maxL := 0
		for _, rl := range d.rules {
			maxL = max(maxL, rl.Limit)
		}
		return r.IntN(maxL + 2)
	}
}

// time is the instant at offset off from the limiter's base.
func (d *differential) time(off int64) time.Time { return d.base.Add(time.Duration(off)) }

// offset is an instant a method answered, as the references write it: its
// offset from the base, or never for the zero Time.
func (d *differential) offset(at time.Time) string {
	if at.IsZero() {
		return "never"
	}
	return fmt.Sprint(int64(at.Sub(d.base)))
}

// ready is a reference's ReadyAt answer as offset writes it.
func ready(at int64, ok bool) string {
	if !ok {
		return "never"
	}
	return fmt.Sprint(at)
}

// fatalf fails the test, naming the sequence and the call.
func (d *differential) fatalf(format string, args ...any) {
	d.t.Helper()
	d.t.Fatalf("%s call %d: %s", d.name, d.call, fmt.Sprintf(format, args...))
}

// queries compares every query at offset at (n for ReadyAt) with the
// references, and checks that each rule's reference agrees with the
// reference of all rules on that rule's remaining cost. It returns the
// reference's ReadyAt(at, n), as ready writes it.
func (d *differential) queries(at int64, n int) string {
	d.t.Helper()
	now := d.time(at)
	want := d.ref.RemainingAt(at)
	for k, a := range d.alone {
		if got := a.RemainingAt(at)[0]; got != want[k] {
			d.fatalf("the reference of rule %d alone has %d remaining at %d, the reference %v", k, got, at, want)
		}
	}
	if d.ints = d.l.RemainingAt(now, d.ints[:0]); fmt.Sprint(d.ints) != fmt.Sprint(want) {
		d.fatalf("RemainingAt(%d) = %v, reference %v", at, d.ints, want)
	}
	if got, w := d.l.TokensAt(now), slices.Min(want); got != w {
		d.fatalf("TokensAt(%d) = %d, reference %d", at, got, w)
	}
	d.instants = d.l.ResetsAt(now, d.instants[:0])
	if len(d.instants) != len(d.rules) {
		d.fatalf("ResetsAt(%d) gave %d instants for %d rules", at, len(d.instants), len(d.rules))
	}
	for k, a := range d.alone {
		if got, w := d.offset(d.instants[k]), ready(a.ReadyAt(at, d.rules[k].Limit)); got != w {
			d.fatalf("ResetsAt(%d): rule %d's %s, its reference alone %s", at, k, got, w)
		}
	}
	got, ok := d.l.ReadyAt(now, n)
	if ok == got.IsZero() {
		d.fatalf("ReadyAt(%d, %d) = %v, %v", at, n, got, ok)
	}
	retry := ready(d.ref.ReadyAt(at, n))
	if g := d.offset(got); g != retry {
		d.fatalf("ReadyAt(%d, %d) = %s, reference %s", at, n, g, retry)
	}
	if got, w := d.l.IdleAt(now), d.ref.IdleAt(at); got != w {
		d.fatalf("IdleAt(%d) = %v, reference %v", at, got, w)
	}
	return retry
}

// decide makes the decision on n at offset at with AllowN (kind 0),
// DecideStatus (1) or DecideRules (2), compares its answer with the
// references' and gives it to them, and returns it. retry is the
// reference's ReadyAt(at, n) before the decision.
func (d *differential) decide(at int64, n, kind int, retry string) bool {
	d.t.Helper()
	d.decisions[kind]++
	now := d.time(at)
	inRange := n >= 1 && n <= d.minLimit
	// Before the decision: when n would fit, for all rules (retry) and
	// each alone (a refusal changes no reference, so these are the RetryAt
	// answers).
	retryEach := make([]string, len(d.rules))
	if kind == 2 && inRange {
		for k, a := range d.alone {
			retryEach[k] = ready(a.ReadyAt(at, n))
		}
	}
	admitted := d.ref.AllowN(at, n)
	for _, a := range d.alone {
		a.Record(at, n, admitted)
	}
	var whole slidelimit.Status
	switch kind {
	case 0:
		if got := d.l.AllowN(now, n); got != admitted {
			d.fatalf("AllowN(%d, %d) = %v, reference %v", at, n, got, admitted)
		}
		return admitted
	case 1:
		whole = d.l.DecideStatus(now, n)
	case 2:
		whole, d.statuses = d.l.DecideRules(now, n, d.statuses[:0])
	}
	call := fmt.Sprintf([]string{"", "DecideStatus", "DecideRules"}[kind]+"(%d, %d)", at, n)
	wantRetry := "never"
	if !admitted && inRange {
		wantRetry = retry
	}
	after := d.ref.RemainingAt(at)
	wantReset := ready(d.ref.ReadyAt(at, d.minLimit))
	if whole.Admitted != admitted || whole.Remaining != slices.Min(after) ||
		d.offset(whole.RetryAt) != wantRetry || d.offset(whole.ResetAt) != wantReset {
		d.fatalf("%s = %+v (RetryAt %s, ResetAt %s); reference admitted %v, remaining %d, RetryAt %s, ResetAt %s",
			call, whole, d.offset(whole.RetryAt), d.offset(whole.ResetAt),
			admitted, slices.Min(after), wantRetry, wantReset)
	}
	if kind == 1 {
		return admitted
	}
	if len(d.statuses) != len(d.rules) {
		d.fatalf("%s gave %d rules' statuses for %d rules", call, len(d.statuses), len(d.rules))
	}
	for k, s := range d.statuses {
		a := d.alone[k]
		wantRetry := "never"
		if !admitted && inRange {
			wantRetry = retryEach[k]
		}
		wantReset := ready(a.ReadyAt(at, d.rules[k].Limit))
		if s.Admitted != admitted || s.Remaining != after[k] || d.offset(s.RetryAt) != wantRetry || d.offset(s.ResetAt) != wantReset {
			d.fatalf("%s: rule %d's status %+v (RetryAt %s, ResetAt %s); reference admitted %v, remaining %d; rule %d alone: RetryAt %s, ResetAt %s",
				call, k, s, d.offset(s.RetryAt), d.offset(s.ResetAt), admitted, after[k], k, wantRetry, wantReset)
		}
	}
	return admitted
}
