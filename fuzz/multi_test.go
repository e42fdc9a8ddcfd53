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
// Before each call they compare TokensAt, RemainingAt (per rule), ReadyAt and
// IdleAt; every other call decides with DecideRules, whose answer is checked
// too (checkDecideRules); at the end they check every rule's bound over
// windows of every alignment.

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

// replayMulti replays the calls data decodes to through l and ref, and
// fails at the first answer where they differ.
func replayMulti(t *testing.T, rules []multi.Rule, data []byte, l multiUnderTest, ref oracle.Model) {
	t.Helper()
	maxLimit := 0
	for _, r := range rules {
		maxLimit = max(maxLimit, r.Limit)
	}
	t0 := time.Now()
	var now int64
	var buf []int
	var whole slidelimit.Status
	var each []slidelimit.Status
	for i, o := range decodeOps(data, rules[0].Window, maxLimit) {
		now += int64(o.dt)
		at := t0.Add(time.Duration(now))
		want := ref.RemainingAt(now)
		if r, ok := l.(multiRemaining); ok {
			buf = r.RemainingAt(at, buf[:0])
			if fmt.Sprint(buf) != fmt.Sprint(want) {
				t.Fatalf("rules %v call %d: RemainingAt(%d) = %v, reference %v", rules, i, now, buf, want)
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
			checkDecideRules(t, rules, i, t0, now, o.n, whole, each, ref, wa, wok)
			continue
		}
		if got, w := l.AllowN(at, o.n), ref.AllowN(now, o.n); got != w {
			t.Fatalf("rules %v call %d: AllowN(%d, %d) = %v, reference %v", rules, i, now, o.n, got, w)
		}
	}
}

// multiDecider is the decision with its status, which both flavours have:
// replayMulti decides every other call with it.
type multiDecider interface {
	DecideRules(now time.Time, n int, rules []slidelimit.Status) (slidelimit.Status, []slidelimit.Status)
}

// checkDecideRules checks one answer of DecideRules at now (t0+now) for n
// against the reference, which it makes decide the same call: the decision,
// the whole Remaining and each rule's (the reference's RemainingAt after the
// decision), RetryAt (the reference's ReadyAt before it, retry and retryOK,
// for a refused n in range) and ResetAt (the reference's ReadyAt of the
// smallest limit after it). Each rule's own RetryAt and ResetAt are not
// compared: the reference has no per-rule ReadyAt.
func checkDecideRules(t *testing.T, rules []multi.Rule, i int, t0 time.Time, now int64, n int, whole slidelimit.Status, each []slidelimit.Status, ref oracle.Model, retry int64, retryOK bool) {
	t.Helper()
	minLimit := rules[0].Limit
	for _, r := range rules {
		minLimit = min(minLimit, r.Limit)
	}
	offset := func(at time.Time) string { // a reported instant, as the reference writes it
		if at.IsZero() {
			return "never"
		}
		return fmt.Sprint(int64(at.Sub(t0)))
	}
	ready := func(at int64, ok bool) string {
		if !ok {
			return "never"
		}
		return fmt.Sprint(at)
	}
	admitted := ref.AllowN(now, n)
	after := ref.RemainingAt(now)
	wantRetry := "never"
	if !admitted && n >= 1 && n <= minLimit {
		wantRetry = ready(retry, retryOK)
	}
	wantReset := ready(ref.ReadyAt(now, minLimit))
	switch {
	case whole.Admitted != admitted:
		t.Fatalf("rules %v call %d: DecideRules(%d, %d) admitted %v, reference %v", rules, i, now, n, whole.Admitted, admitted)
	case whole.Remaining != slices.Min(after) || len(each) != len(after):
		t.Fatalf("rules %v call %d: DecideRules(%d, %d) = %+v, %+v; the reference has %v remaining", rules, i, now, n, whole, each, after)
	case offset(whole.RetryAt) != wantRetry || offset(whole.ResetAt) != wantReset:
		t.Fatalf("rules %v call %d: DecideRules(%d, %d): RetryAt %s, ResetAt %s; reference %s, %s", rules, i, now, n, offset(whole.RetryAt), offset(whole.ResetAt), wantRetry, wantReset)
	}
	for k, s := range each {
		if s.Remaining != after[k] || s.Admitted != admitted {
			t.Fatalf("rules %v call %d: DecideRules(%d, %d): rule %d's status %+v; reference %v remaining", rules, i, now, n, k, s, after)
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
		for _, r := range rules {
			if m := oracle.MaxInWindow(ref.Stamps(), int64(r.Window)); m > int64(r.Limit) {
				t.Fatalf("rules %v: %d admitted in some window of %v, limit %d", rules, m, r.Window, r.Limit)
			}
		}
	})
}
