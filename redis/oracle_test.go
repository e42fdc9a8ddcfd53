package redis_test

import (
	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/redis"
)

// The Redis limiters are replayed against the module's one naive model,
// internal/oracle, in microseconds: the exact sliding log (stale instants
// decided at the latest admission) and package window's two-counter formula
// (stale instants decided at the rule's window start, windows anchored at an
// admission into an idle rule). These adapters give its answers the shape of
// a Redis decision: admitted, the instant decided at, the earliest instant the
// cost fits (-1: never; the decided instant when admitted), and the remaining
// cost per rule after the call.

func oracleRules(rules []redis.Rule) []oracle.Rule {
	out := make([]oracle.Rule, len(rules))
	for i, r := range rules {
		out[i] = oracle.Rule{Limit: int64(r.Limit), Window: r.Window.Microseconds()}
	}
	return out
}

// readyOf turns a model's ReadyAt into the reply's ready: at when admitted,
// -1 when the cost can never fit.
func readyOf(ok bool, at int64, ready int64, readyOK bool) int64 {
	switch {
	case ok:
		return at
	case !readyOK:
		return -1
	}
	return ready
}

// logOracle is the exact sliding log with several rules, all or nothing.
type logOracle struct {
	rules []redis.Rule
	m     *oracle.Log
}

// allowN returns the decision, the instant decided at, the earliest instant
// the cost fits (-1: never) and the remaining cost per rule after it.
func (o *logOracle) allowN(t int64, n int) (ok bool, at, ready int64, rem []int) {
	if o.m == nil {
		o.m = oracle.NewLog(oracleRules(o.rules)...)
	}
	at = o.m.Clamp(t)
	r, rok := o.m.ReadyAt(t, n)
	ok = o.m.AllowN(t, n)
	return ok, at, readyOf(ok, at, r, rok), o.m.RemainingAt(t)
}

// windowOracle is package window's two-counter limiter per rule, all or
// nothing.
type windowOracle struct {
	rules []redis.Rule
	m     *oracle.TwoCounter
}

// allowN returns the decision, the earliest instant the cost fits (-1: never;
// t itself when admitted) and the remaining cost per rule after it.
func (o *windowOracle) allowN(t int64, n int) (ok bool, ready int64, rem []int) {
	if o.m == nil {
		o.m = oracle.NewTwoCounter(oracle.StaleToStart, oracle.AnchorIdle, oracleRules(o.rules)...)
	}
	r, rok := o.m.ReadyAt(t, n)
	ok = o.m.AllowN(t, n)
	return ok, readyOf(ok, t, r, rok), o.m.RemainingAt(t)
}
