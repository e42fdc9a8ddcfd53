package multi

import (
	"slices"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/internal/slidelog"
	"github.com/slidelimit/slidelimit/internal/twocount"
)

// One decision, one answer: DecideStatus and DecideRules decide as AllowN
// does and report, beside the decision, what an HTTP 429 and the RateLimit
// fields need, read from the state the decision itself was made on.

// DecideStatus is AllowN, and also returns what remains and when n and the
// largest admissible cost, MaxN(), would fit, read at the log's state right
// after the decision (its head and instant): the answers TokensAt and
// ReadyAt give, minus the admissions of other goroutines that a second call
// could see land in between. When such admissions have already overwritten
// the oldest instants that state needs, it reads the live state at the
// decision's instant instead, whose answers can only be more cautious (less
// remaining, a later RetryAt and ResetAt) and still agree with the decision.
// Its edges are AllowN's: n == 0 is admitted and records nothing; n < 0 and
// n > MaxN() are refused with a zero RetryAt (as ReadyAt's false), and then
// Remaining and ResetAt describe the limiter at now. ResetAt is when MaxN()
// fits, not when every rule is back to its whole limit: DecideRules gives
// each rule's. It is lock-free and allocates nothing.
func (l *Limiter) DecideStatus(now time.Time, n int) slidelimit.Status {
	off := l.base.Offset(now)
	ok, st := l.log.DecideStatus(off, int64(n))
	return st.Public(ok, l.base, now, off)
}

// DecideRules is DecideStatus, and also appends to rules, for each rule in
// the order given to New, that rule's own status on the same state, as if it
// were the only rule: Remaining is what it alone would admit (RemainingAt's
// answer), RetryAt when it alone would admit a refused n, ResetAt when it
// alone would admit its whole limit (ResetsAt's answer); Admitted is the
// decision's. It returns the extended slice: what a 429 and the RateLimit
// fields report per policy, from the one decision. With room in rules it
// allocates nothing.
func (l *Limiter) DecideRules(now time.Time, n int, rules []slidelimit.Status) (slidelimit.Status, []slidelimit.Status) {
	off := l.base.Offset(now)
	n0 := len(rules)
	rules = slices.Grow(rules, len(l.rules))[:n0+len(l.rules)]
	ok, st := l.log.DecideRules(off, int64(n), func(i int, rs slidelog.RuleStatus) {
		rs.Into(&rules[n0+i], l.base, now, off)
	})
	for i := n0; i < len(rules); i++ {
		rules[i].Admitted = ok
	}
	return st.Public(ok, l.base, now, off), rules
}

// ruleView is one rule's view of an Approx snapshot at a decision's instant:
// the instant t it decides at (the call's, raised to the window start), the
// window start ws in effect then and the counters p and c.
type ruleView struct{ t, ws, p, c int64 }

// DecideStatus is AllowN, and also returns what remains and when n and the
// largest admissible cost, MaxN(), would fit, computed on the counters the
// decision itself read (for a refusal) or wrote (for an admission), so no
// other goroutine's admission lands in between: Remaining is TokensAt's
// answer on that state, RetryAt ReadyAt's for a refused n and ResetAt
// ReadyAt's for MaxN(), each by the rules' estimates. Its edges are AllowN's:
// n == 0 is admitted and records nothing; n < 0 and n > MaxN() are refused
// with a zero RetryAt, and then Remaining and ResetAt describe the limiter at
// now, from one snapshot. It is lock-free, and with at most 8 rules it
// allocates nothing.
func (a *Approx) DecideStatus(now time.Time, n int) slidelimit.Status {
	st, _ := a.decideRules(now, n, nil, false)
	return st
}

// DecideRules is DecideStatus, and also appends to rules, for each rule in
// the order given to NewApprox, that rule's own status on the same counters,
// as if it were the only rule: Remaining is what its estimate alone would
// admit (RemainingAt's answer), RetryAt when it alone would admit a refused
// n, ResetAt when it alone would admit its whole limit, if nothing else were
// admitted; Admitted is the decision's. It returns the extended slice. With
// room in rules and at most 8 rules it allocates nothing.
func (a *Approx) DecideRules(now time.Time, n int, rules []slidelimit.Status) (slidelimit.Status, []slidelimit.Status) {
	return a.decideRules(now, n, rules, true)
}

// decideRules is DecideRules, appending each rule's status only if each.
func (a *Approx) decideRules(now time.Time, n int, rules []slidelimit.Status, each bool) (slidelimit.Status, []slidelimit.Status) {
	if a.minLimit == 0 { // the zero Approx: no rule, nothing ever fits
		return slidelimit.Status{Admitted: n == 0, ResetAt: now}, rules
	}
	var buf [stackRules]ruleView
	seen := a.views(&buf)
	off := a.base.Offset(now)
	var ok bool
	if n >= 1 && n <= a.minLimit {
		ok = a.allowN(off, int64(n), seen)
	} else {
		ok = n == 0
		a.viewAll(twocount.Clamp(off), seen)
	}
	st := slidelimit.Status{Admitted: ok, Remaining: a.minLimit}
	retry := !ok && n >= 1 && n <= a.minLimit
	var retryAt, resetAt int64 = twocount.OffMin, twocount.OffMin
	retryFits, resetFits := true, true
	for i := range seen {
		r, v := &a.rules[i], &seen[i]
		tokens := r.Tokens(v.p, v.c, v.t-v.ws)
		rs := slidelimit.Status{Admitted: ok, Remaining: int(tokens)}
		st.Remaining = min(st.Remaining, rs.Remaining)
		at, fits := readyOf(r, v, r.Limit, tokens)
		rs.ResetAt = a.instant(now, off, at, fits)
		if at, fits = readyOf(r, v, int64(a.minLimit), tokens); !fits {
			resetFits, resetAt = false, max(resetAt, at)
		}
		if retry {
			at, fits = readyOf(r, v, int64(n), tokens)
			rs.RetryAt = a.instant(now, off, at, fits)
			if !fits {
				retryFits, retryAt = false, max(retryAt, at)
			}
		}
		if each {
			rules = append(rules, rs)
		}
	}
	st.ResetAt = a.instant(now, off, resetAt, resetFits)
	if retry {
		st.RetryAt = a.instant(now, off, retryAt, retryFits)
	}
	return st, rules
}

// viewAll fills seen with every rule's view of the current snapshot at the
// clamped offset t0.
func (a *Approx) viewAll(t0 int64, seen []ruleView) {
	for {
		h, s := a.load()
		for i := range seen {
			v := &seen[i]
			v.t, v.ws, v.p, v.c = a.view(s, i, t0)
		}
		if valid(h, s) {
			return
		}
	}
}

// readyOf is the offset at which rule r's estimate on the view v would admit
// n if nothing else were admitted, and whether that is v.t itself (n fits
// at the decision's instant, as it does when n is within tokens, the
// estimate's room on v).
func readyOf(r *twocount.Rule, v *ruleView, n, tokens int64) (at int64, fits bool) {
	if n <= tokens {
		return v.t, true
	}
	at = r.ReadyAt(v.ws, v.p, v.c, v.t, n)
	return at, at == v.t
}

// instant is the answer of ReadyAt for a call at now (whose offset is off),
// from the offset at at which the cost fits (fits: at the call's own
// instant): now itself, the instant at, or the zero Time past the last
// instant the limiter tells apart.
func (a *Approx) instant(now time.Time, off, at int64, fits bool) time.Time {
	switch {
	case fits:
		return now
	case at > twocount.OffMax:
		return time.Time{}
	}
	return a.base.At(now, off, at)
}

// views is buf, or a new slice when the rules do not fit in it, cut to one
// view per rule.
func (a *Approx) views(buf *[stackRules]ruleView) []ruleView {
	if len(a.rules) > stackRules {
		return make([]ruleView, len(a.rules))
	}
	return buf[:len(a.rules)]
}
