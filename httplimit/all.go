package httplimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slidelimit/slidelimit/internal/nilvalue"
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
//     Checkers whose answer was only a guess (a per-key adapter asked for a
//     key it does not hold while its store is full or its factory last
//     failed: only a decision, which sweeps or creates, can tell), then the
//     other Checkers, each group in the order given. The first refusal ends
//     the request.
//
// When calls are not concurrent, a phase-2 refusal can only come from a
// member that is not a Checker or whose check was a guess (the others just
// said they admit), so with at most one such member, a refused request never
// consumes anything: the decisions are those of one limiter holding all the
// rules, all-or-nothing.
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
		if nilvalue.Is(m) {
			return nil, fmt.Errorf("httplimit: All: limiter %d is nil", i)
		}
		rules := m.Rules()
		if len(rules) == 0 {
			return nil, fmt.Errorf("httplimit: All: limiter %d has no rules", i)
		}
		c, _ := m.(Checker)
		g, _ := m.(guessingChecker)
		a.members = append(a.members, member{l: m, c: c, g: g, at: len(a.rules), n: len(rules)})
		a.rules = append(a.rules, rules...)
	}
	a.checkers = true
	for _, m := range a.members {
		a.checkers = a.checkers && m.c != nil
	}
	if len(a.rules) > MaxRules {
		return nil, fmt.Errorf("httplimit: All: the limiters have %d rules together, at most %d are supported", len(a.rules), MaxRules)
	}
	return a, nil
}

// guessingChecker is a Checker that can say its answer was a guess: the
// per-key adapters, for a key they do not hold (perKey.Check).
type guessingChecker interface {
	check(ctx context.Context, key string, now time.Time, cost int) (d Decision, sure bool, err error)
}

type member struct {
	l  Limiter
	c  Checker         // nil if l is not a Checker
	g  guessingChecker // c, if it can say its answer was a guess
	at int             // index of its first rule in the combined policy
	n  int             // its number of rules
}

type all struct {
	members  []member // in the order given
	rules    []Rule
	checkers bool // every member is a Checker
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
	out, _, err := a.checkMembers(ctx, key, now, cost)
	return out, err
}

// check makes an All that is a member of another one a guessingChecker:
// its answer is a guess when one of its members' is, or when it has a
// member that is not a Checker, which its check does not ask.
func (a *all) check(ctx context.Context, key string, now time.Time, cost int) (Decision, bool, error) {
	out, guessed, err := a.checkMembers(ctx, key, now, cost)
	return out, guessed == 0 && a.checkers, err
}

// checkMembers is Check, and also returns the set of members (bit i for
// members[i]) whose answer was a guess.
func (a *all) checkMembers(ctx context.Context, key string, now time.Time, cost int) (Decision, uint32, error) {
	out := a.start()
	var guessed uint32
	for i, m := range a.members {
		var d Decision
		var err error
		switch {
		case m.g != nil:
			var sure bool
			d, sure, err = m.g.check(ctx, key, now, cost)
			if !sure {
				guessed |= 1 << i
			}
		case m.c != nil:
			d, err = m.c.Check(ctx, key, now, cost)
		default:
			continue
		}
		if err != nil {
			return Decision{}, 0, err
		}
		a.merge(&out, m, &d)
	}
	return out, guessed, nil
}

func (a *all) Decide(ctx context.Context, key string, now time.Time, cost int) (Decision, error) {
	out, guessed, err := a.checkMembers(ctx, key, now, cost)
	if err != nil || !out.Allowed {
		return out, err
	}
	// Phase 2: the members that are not Checkers (pass 0), the Checkers
	// that guessed (1), the other Checkers (2), each in the order given.
	for pass := range 3 {
		for i, m := range a.members {
			class := 2
			if m.c == nil {
				class = 0
			} else if guessed&(1<<i) != 0 {
				class = 1
			}
			if class != pass {
				continue
			}
			d, err := m.l.Decide(ctx, key, now, cost)
			if err != nil {
				return Decision{}, err
			}
			a.merge(&out, m, &d)
			if !d.Allowed {
				return out, nil
			}
		}
	}
	return out, nil
}
