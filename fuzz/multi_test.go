package fuzz

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/multi"
)

// The multi targets decode a rule set from the first bytes and a call
// sequence from the rest, and replay it through the limiter and through the
// model of internal/oracle it promises (the exact log for multi.New, the
// two-counter estimate for multi.NewApprox), all-or-nothing over the rules.
// Before each call they compare TokensAt, RemainingAt and ResetsAt (per
// rule; ResetsAt against a model of each rule alone, aloneModels), ReadyAt
// and IdleAt; every other call decides with DecideRules, whose answer is
// checked too, each rule's status against its model alone
// (checkDecideRules); at the end they check every rule's bound over windows
// of every alignment.

// multiWindows are the windows a decoded rule may get (nanoseconds): tiny,
// coprime and nested ones, so that windows of several rules interleave.
var multiWindows = [8]time.Duration{7, 10, 64, 100, 333, 1000, 10_000, 1_000_000}

// decodeRules reads the rule count and one byte per rule: limit 1..8 and a
// window from multiWindows. It returns the rules and the rest of data.
func decodeRules(data []byte) ([]multi.Rule, []byte) {
	if len(data) == 0 {
		return []multi.Rule{{Limit: 2, Window: 10}}, nil
	}
	nr := 1 + int(data[0])%4
	data = data[1:]
	rules := make([]multi.Rule, 0, nr)
	for i := 0; i < nr; i++ {
		var b byte
		if i < len(data) {
			b = data[i]
		}
		rules = append(rules, multi.Rule{Limit: 1 + int(b%8), Window: multiWindows[(b>>3)%8]})
	}
	return rules, data[min(nr, len(data)):]
}

// multiSeeds are the step tables of multi's tests and a few edges, as fuzz
// seeds: rule bytes first, then (step, n) pairs.
func multiSeeds(f *testing.F) {
	f.Add([]byte{1, 1 | 1<<3, 2 | 3<<3, 0, 0, 0, 0, 0, 0, 8, 0, 8, 0, 20, 0})
	f.Add([]byte{0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 200, 0, 245})
	f.Add([]byte{3, 7 | 7<<3, 0, 1<<3 | 1, 2<<3 | 4, 0, 0, 1, 0, 2, 0, 0x81, 0, 0x90, 150, 17, 0, 16, 238})
	f.Add([]byte{2, 2 | 4<<3, 2 | 4<<3, 5 | 2<<3, 0, 235, 19, 0, 18, 0, 9, 0, 10, 0, 0xc0, 0, 0xc0, 0})
	f.Add([]byte{1, 7 | 6<<3, 0 | 5<<3, 0, 239, 22, 0, 0, 0, 17, 0, 0, 250, 0, 247})
	// Batches (n >= 2) admitted and refused, in both flavours: one rule
	// (8 per 64ns) taking batches of 4, 3, 6, 8 and 3 across its window's
	// edges, with a stale instant after a batch and n out of range.
	f.Add([]byte{0, 7 | 2<<3, 0, 162, 3, 161, 0, 160, 9, 0, 3, 164, 8, 230, 3, 160, 16, 0, 0x80 | 64, 163, 10, 161, 0, 240, 0, 245, 0, 250, 19, 239, 17, 161, 4, 0})
	// Three rules (6/10ns, 8/64ns, 8/333ns): batches that one rule refuses
	// and the others would admit (each rule's RetryAt differs), an idle gap,
	// then batches again.
	f.Add([]byte{2, 5 | 1<<3, 7 | 2<<3, 7 | 4<<3, 0, 161, 0, 160, 3, 160, 8, 163, 10, 160, 0, 0, 20, 160, 20, 0, 21, 164, 8, 160, 19, 161, 20, 160, 17, 160, 18, 162, 0x80 | 100, 165, 8, 230, 0, 164, 21, 166, 0, 0})
	// Two rules (8/64ns, 6/333ns), batches at fine steps through the
	// windows (the Approx's estimate decays between them).
	f.Add([]byte{1, 7 | 2<<3, 5 | 4<<3, 0, 162, 0x80 | 32, 161, 0x80 | 32, 160, 0x80 | 32, 0, 0x80 | 32, 163, 0x80 | 16, 160, 16, 161, 19, 166, 0x80 | 64, 162, 0x80 | 64, 162, 0x80 | 127, 165, 10, 160, 20, 164, 0x80 | 100, 161, 18, 160, 0, 162})
	// Four rules, two of them equal (8/7ns twice, 4/10ns, 8/1ms): batches
	// at the edges of the short windows, one refused for the long rule
	// alone, a stale batch after an idle gap.
	f.Add([]byte{3, 7, 7, 3 | 1<<3, 7 | 7<<3, 0, 162, 8, 160, 3, 160, 5, 161, 9, 160, 10, 0, 20, 160, 21, 162, 16, 161, 10, 161, 8, 239, 17, 0})
}

// multiUnderTest is what both flavours provide.
type multiUnderTest interface {
	AllowN(now time.Time, n int) bool
	TokensAt(now time.Time) int
	ReadyAt(now time.Time, n int) (time.Time, bool)
	IdleAt(now time.Time) bool
}

// multiRemaining is the per-rule reader, checked when the flavour has it.
type multiRemaining interface {
	RemainingAt(now time.Time, dst []int) []int
}

// multiResets is the per-rule reset reader, checked when the flavour has it.
type multiResets interface {
	ResetsAt(now time.Time, dst []time.Time) []time.Time
}

// aloneModels returns, for each rule, a model of that rule alone of the same
// kind as ref (the exact log, or the two-counter estimate with the
// parameters the multi targets give it): fed the calls ref admits, model k
// holds rule k's part of ref's state, so its ReadyAt is what the per-rule
// answers (ResetsAt, each rule's RetryAt and ResetAt in DecideRules) must
// say. replayMulti checks, call by call, that each agrees with ref's
// RemainingAt for its rule.
func aloneModels(t *testing.T, rules []multi.Rule, ref oracle.Model) []oracle.Model {
	t.Helper()
	out := make([]oracle.Model, len(rules))
	for k, r := range oracleRules(rules) {
		switch m := ref.(type) {
		case *oracle.Log:
			a := oracle.NewLog(r)
			a.Bounds, a.ClampSeen = m.Bounds, m.ClampSeen
			out[k] = a
		case *oracle.TwoCounter:
			a := oracle.NewTwoCounter(oracle.StaleToStart, oracle.AnchorIdle, r)
			a.Bounds = m.Bounds
			out[k] = a
		default:
			t.Fatalf("no one-rule model for a reference of type %T", ref)
		}
	}
	return out
}

// replayMulti replays the calls data decodes to through l and ref, and
// fails at the first answer where they differ. Beside ref, a model of each
// rule alone (aloneModels) is given the same decisions.
func replayMulti(t *testing.T, rules []multi.Rule, data []byte, l multiUnderTest, ref oracle.Model) {
	t.Helper()
	maxLimit := 0
	for _, r := range rules {
		maxLimit = max(maxLimit, r.Limit)
	}
	alone := aloneModels(t, rules, ref)
	t0 := time.Now()
	var now int64
	var buf []int
	var resets []time.Time
	var whole slidelimit.Status
	var each []slidelimit.Status
	for i, o := range decodeOps(data, rules[0].Window, maxLimit) {
		now += int64(o.dt)
		at := t0.Add(time.Duration(now))
		want := ref.RemainingAt(now)
		for k, a := range alone {
			if got := a.RemainingAt(now)[0]; got != want[k] {
				t.Fatalf("rules %v call %d: the model of rule %d alone has %d remaining at %d, the reference %v", rules, i, k, got, now, want)
			}
		}
		if r, ok := l.(multiRemaining); ok {
			buf = r.RemainingAt(at, buf[:0])
			if fmt.Sprint(buf) != fmt.Sprint(want) {
				t.Fatalf("rules %v call %d: RemainingAt(%d) = %v, reference %v", rules, i, now, buf, want)
			}
		}
		if r, ok := l.(multiResets); ok {
			resets = r.ResetsAt(at, resets[:0])
			if len(resets) != len(rules) {
				t.Fatalf("rules %v call %d: ResetsAt(%d) gave %d instants", rules, i, now, len(resets))
			}
			for k, a := range alone {
				if got, w := offsetOf(t0, resets[k]), readyOf(a.ReadyAt(now, rules[k].Limit)); got != w {
					t.Fatalf("rules %v call %d: ResetsAt(%d): rule %d's %s, reference %s", rules, i, now, k, got, w)
				}
			}
		}
		if got, w := l.TokensAt(at), slices.Min(want); got != w {
			t.Fatalf("rules %v call %d: TokensAt(%d) = %d, reference %d", rules, i, now, got, w)
		}
		ga, gok := l.ReadyAt(at, o.n)
		wa, wok := ref.ReadyAt(now, o.n)
		if gok != wok || gok && ga.Sub(t0) != time.Duration(wa) {
			t.Fatalf("rules %v call %d: ReadyAt(%d, %d) = %d, %v; reference %d, %v", rules, i, now, o.n, ga.Sub(t0), gok, wa, wok)
		}
		if got, w := l.IdleAt(at), ref.IdleAt(now); got != w {
			t.Fatalf("rules %v call %d: IdleAt(%d) = %v, reference %v", rules, i, now, got, w)
		}
		if d, ok := l.(multiDecider); ok && i%2 == 1 {
			whole, each = d.DecideRules(at, o.n, each[:0])
			checkDecideRules(t, rules, i, t0, now, o.n, whole, each, ref, alone, wa, wok)
			continue
		}
		got, w := l.AllowN(at, o.n), ref.AllowN(now, o.n)
		if got != w {
			t.Fatalf("rules %v call %d: AllowN(%d, %d) = %v, reference %v", rules, i, now, o.n, got, w)
		}
		for _, a := range alone {
			a.Record(now, o.n, w)
		}
	}
}

// offsetOf is a reported instant as the reference writes it: its offset
// from t0, or never for the zero Time.
func offsetOf(t0, at time.Time) string {
	if at.IsZero() {
		return "never"
	}
	return fmt.Sprint(int64(at.Sub(t0)))
}

// readyOf is a reference's ReadyAt answer as offsetOf writes it.
func readyOf(at int64, ok bool) string {
	if !ok {
		return "never"
	}
	return fmt.Sprint(at)
}

// multiDecider is the decision with its status, which both flavours have:
// replayMulti decides every other call with it.
type multiDecider interface {
	DecideRules(now time.Time, n int, rules []slidelimit.Status) (slidelimit.Status, []slidelimit.Status)
}

// checkDecideRules checks one answer of DecideRules at now (t0+now) for n
// against the reference, which it makes decide the same call, and the
// models of each rule alone, which it gives the decision: the decision, the
// whole Remaining (the reference's TokensAt after the decision), RetryAt
// (the reference's ReadyAt before it, retry and retryOK, for a refused n in
// range) and ResetAt (the reference's ReadyAt of the smallest limit after
// it); and each rule's status as if it were the only rule: Remaining (the
// reference's RemainingAt for it after the decision, which its model alone
// must agree with), RetryAt (its model's ReadyAt of a refused n in range:
// a refusal changes no model) and ResetAt (its model's ReadyAt of its limit
// after the decision).
func checkDecideRules(t *testing.T, rules []multi.Rule, i int, t0 time.Time, now int64, n int, whole slidelimit.Status, each []slidelimit.Status, ref oracle.Model, alone []oracle.Model, retry int64, retryOK bool) {
	t.Helper()
	minLimit := rules[0].Limit
	for _, r := range rules {
		minLimit = min(minLimit, r.Limit)
	}
	admitted := ref.AllowN(now, n)
	for _, a := range alone {
		a.Record(now, n, admitted)
	}
	after := ref.RemainingAt(now)
	inRange := !admitted && n >= 1 && n <= minLimit
	wantRetry := "never"
	if inRange {
		wantRetry = readyOf(retry, retryOK)
	}
	wantReset := readyOf(ref.ReadyAt(now, minLimit))
	switch {
	case whole.Admitted != admitted:
		t.Fatalf("rules %v call %d: DecideRules(%d, %d) admitted %v, reference %v", rules, i, now, n, whole.Admitted, admitted)
	case whole.Remaining != slices.Min(after) || len(each) != len(after):
		t.Fatalf("rules %v call %d: DecideRules(%d, %d) = %+v, %+v; the reference has %v remaining", rules, i, now, n, whole, each, after)
	case offsetOf(t0, whole.RetryAt) != wantRetry || offsetOf(t0, whole.ResetAt) != wantReset:
		t.Fatalf("rules %v call %d: DecideRules(%d, %d): RetryAt %s, ResetAt %s; reference %s, %s", rules, i, now, n, offsetOf(t0, whole.RetryAt), offsetOf(t0, whole.ResetAt), wantRetry, wantReset)
	}
	for k, s := range each {
		a := alone[k]
		if rem := a.RemainingAt(now)[0]; rem != after[k] {
			t.Fatalf("rules %v call %d: the model of rule %d alone has %d remaining at %d, the reference %v", rules, i, k, rem, now, after)
		}
		wantRetry := "never"
		if inRange {
			wantRetry = readyOf(a.ReadyAt(now, n))
		}
		wantReset := readyOf(a.ReadyAt(now, rules[k].Limit))
		if s.Remaining != after[k] || s.Admitted != admitted || offsetOf(t0, s.RetryAt) != wantRetry || offsetOf(t0, s.ResetAt) != wantReset {
			t.Fatalf("rules %v call %d: DecideRules(%d, %d): rule %d's status %+v (RetryAt %s, ResetAt %s); reference %v remaining, rule alone: RetryAt %s, ResetAt %s", rules, i, now, n, k, s, offsetOf(t0, s.RetryAt), offsetOf(t0, s.ResetAt), after, wantRetry, wantReset)
		}
	}
}

// FuzzMulti checks the exact flavour decision by decision against the naive
// log (oracle.Log), and the bound of every rule over windows of every alignment.
func FuzzMulti(f *testing.F) {
	multiSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, ops := decodeRules(data)
		l, err := multi.New(rules...)
		if err != nil {
			t.Fatal(err)
		}
		ref := oracle.NewLog(oracleRules(rules)...)
		replayMulti(t, rules, ops, l, ref)
		// The bound on the model's stamps: replayMulti has checked every
		// decision of the limiter against the model's, so this checks the
		// model's arithmetic, and the limiter through it.
		for _, r := range rules {
			if m := oracle.MaxInWindow(ref.Stamps(), int64(r.Window)); m > int64(r.Limit) {
				t.Fatalf("rules %v: %d admitted in some window of %v, limit %d", rules, m, r.Window, r.Limit)
			}
		}
	})
}
