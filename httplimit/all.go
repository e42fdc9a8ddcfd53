package httplimit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// All combines several limiters into one that admits a request only if every
// one of them admits it (a limit per client and a global one, or per route
// and per client). Its policy is the members' rules, in order; together at
// most MaxRules.
//
// A request refused by one member consumes nothing from the others. All
// decides in two phases:
//
//  1. Every member that is a [Checker] is asked, without recording anything,
//     whether it would admit. If one would not, the request is refused and
//     nothing is recorded anywhere. Members that are not Checkers are not
//     consulted then; their entries in the Decision's Quota report their
//     full limits.
//  2. Otherwise the members decide for real: first those that are not
//     Checkers (a remote limiter deciding in one round trip), then the
//     Checkers, in the order given. The first refusal ends the request.
//
// When calls are not concurrent, a phase-2 refusal can only come from a
// member that is not a Checker (the Checkers just said they admit), so with
// at most one such member, a refused request never consumes anything: the
// decisions are those of one limiter holding all the rules, all-or-nothing.
// Under concurrency, another request may take the last capacity of a member
// between the two phases; the request is then refused, and the members that
// already decided for it in phase 2 keep its cost. Each such lost cost is
// matched by a request admitted by the refusing member in that gap, so it
// happens only when the refusing member is at its limit.
//
// The Decision's RetryAt is the latest RetryAt of the members that refused
// in phase 1: when every one of them would admit the cost if nothing else
// were admitted meanwhile. The error of a member is returned as is, ending
// the decision (members that decided before it keep their admissions).
func All(members ...Limiter) (Limiter, error) {
	if len(members) == 0 {
		return nil, errors.New("httplimit: All: at least one limiter is required")
	}
	a := &all{}
	for i, m := range members {
		if m == nil {
			return nil, fmt.Errorf("httplimit: All: limiter %d is nil", i)
		}
		rules := m.Rules()
		if len(rules) == 0 {
			return nil, fmt.Errorf("httplimit: All: limiter %d has no rules", i)
		}
		c, _ := m.(Checker)
		a.members = append(a.members, member{l: m, c: c, at: len(a.rules), n: len(rules)})
		a.rules = append(a.rules, rules...)
	}
	if len(a.rules) > MaxRules {
		return nil, fmt.Errorf("httplimit: All: the limiters have %d rules together, at most %d are supported", len(a.rules), MaxRules)
	}
	// Phase 2 order: members that cannot be checked first.
	for _, m := range a.members {
		if m.c == nil {
			a.order = append(a.order, m)
		}
	}
	for _, m := range a.members {
		if m.c != nil {
			a.order = append(a.order, m)
		}
	}
	return a, nil
}

type member struct {
	l  Limiter
	c  Checker // nil if l is not a Checker
	at int     // index of its first rule in the combined policy
	n  int     // its number of rules
}

type all struct {
	members []member // in the order given
	order   []member // phase 2 order
	rules   []Rule
}

func (a *all) Rules() []Rule { return a.rules }

// merge copies d's quota into out at m's rules and folds d's verdict in:
// Never and Full outrank OverLimit, and RetryAt is the latest.
func (a *all) merge(out *Decision, m member, d *Decision) {
	for i := range min(m.n, d.NumQuota) {
		out.Quota[m.at+i] = d.Quota[i]
	}
	if d.Allowed {
		return
	}
	out.Allowed = false
	switch {
	case d.Reason == Never || d.Reason == Full:
		if out.Reason != Never && out.Reason != Full {
			out.Reason = d.Reason
		}
		out.RetryAt = time.Time{}
	case out.Reason == OverLimit || out.Reason == Admitted:
		out.Reason = OverLimit
		if d.RetryAt.After(out.RetryAt) {
			out.RetryAt = d.RetryAt
		}
	}
}

func (a *all) start() Decision {
	d := Decision{Allowed: true, NumQuota: len(a.rules)}
	for i, r := range a.rules {
		d.Quota[i] = Quota{Remaining: r.Limit}
	}
	return d
}

func (a *all) Check(ctx context.Context, key string, now time.Time, cost int) (Decision, error) {
	out := a.start()
	for _, m := range a.members {
		if m.c == nil {
			continue
		}
		d, err := m.c.Check(ctx, key, now, cost)
		if err != nil {
			return Decision{}, err
		}
		a.merge(&out, m, &d)
	}
	return out, nil
}

func (a *all) Decide(ctx context.Context, key string, now time.Time, cost int) (Decision, error) {
	out, err := a.Check(ctx, key, now, cost)
	if err != nil || !out.Allowed {
		return out, err
	}
	for _, m := range a.order {
		d, err := m.l.Decide(ctx, key, now, cost)
		if err != nil {
			return Decision{}, err
		}
		a.merge(&out, m, &d)
		if !d.Allowed {
			return out, nil
		}
	}
	return out, nil
}
