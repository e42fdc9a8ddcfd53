package httplimit

import (
	"context"
	"net/http"
	"time"
)

// MaxRules is the largest number of rules a Limiter's policy may have: the
// size of the fixed array a Decision carries, so that a decision allocates
// nothing. New rejects a limiter with more.
const MaxRules = 8

// Rule is one (limit, window) pair of a limiter's policy: at most Limit units
// of cost in any window of length Window (or, for the approximate limiters,
// the two-counter estimate of it). It is what the RateLimit-Policy field
// announces.
type Rule struct {
	Limit  int
	Window time.Duration
}

// Reason says why a Decision was made.
type Reason uint8

const (
	// Admitted: the cost was admitted and recorded.
	Admitted Reason = iota
	// OverLimit: the cost does not fit now; Decision.RetryAt says when it
	// would fit if nothing else were admitted meanwhile.
	OverLimit
	// Never: the cost can never be admitted (it exceeds a rule's limit, it
	// is negative, or it does not fit even at the last instant the limiter
	// tells apart, decades away). Nothing was recorded and RetryAt is zero.
	Never
	// Full: the limiter has no room for a new key (a keyed store holding
	// its maximum number of keys, none of them idle). Nothing was recorded
	// and RetryAt is zero: when room will appear is not known.
	Full
)

// String returns the reason's name.
func (r Reason) String() string {
	switch r {
	case Admitted:
		return "admitted"
	case OverLimit:
		return "over limit"
	case Never:
		return "never"
	case Full:
		return "full"
	}
	return "unknown"
}

// Quota is the state of one rule of the policy after a decision: what the
// RateLimit field reports for that rule.
type Quota struct {
	// Remaining is the cost the rule alone would still admit at the
	// decision's instant (after the decision's own admission), never
	// negative. For a limiter that can only report the whole policy's
	// remaining cost, it is that value for every rule: a lower bound.
	Remaining int
	// Reset is how long after the decision's instant the rule's whole limit
	// is available again if nothing else is admitted meanwhile: 0 when
	// nothing counts against it, and also when the limiter cannot tell
	// (an instant past the last one it can tell apart: Status.ResetAt).
	// Limiters that cannot tell exactly report an upper bound (each adapter
	// documents its own).
	Reset time.Duration
}

// Decision is the whole answer for one request, from one call: whether it
// was admitted, why not, when its cost would fit, and the state of every
// rule. It is a plain value with a fixed-size array, so returning one
// allocates nothing.
type Decision struct {
	// Allowed reports whether the cost was admitted (Reason == Admitted).
	Allowed bool
	// Reason says why the decision was made.
	Reason Reason
	// RetryAt, when Reason is OverLimit, is the earliest instant at which
	// the cost would be admitted if nothing else were admitted meanwhile:
	// for the exact limiters, a request presented then is admitted. It is
	// the zero Time for every other reason. Retry-After is computed from it.
	RetryAt time.Time
	// NumQuota is the number of entries of Quota in use: one per rule of
	// the limiter's policy, in the order of Rules().
	NumQuota int
	// Quota holds one entry per rule, in the order of Rules().
	Quota [MaxRules]Quota
}

// Limiter is what the middleware needs from a rate limiter: one decision per
// request, from one call (one round trip for a limiter on a remote store),
// and the policy it enforces. The adapters of this package wrap every limiter
// of this module ([Ring], [Window], [Multi], [Approx], [Keyed],
// [KeyedWindow]); a limiter on
// a remote store implements it directly.
//
// Implementations must be safe for concurrent use by multiple goroutines.
type Limiter interface {
	// Decide decides whether cost units may pass for key at now, records
	// them if so, and reports the decision. A limiter shared by all keys
	// ignores key. The edges follow the module's limiter contract: cost 0
	// is admitted and records nothing; a negative cost, or one larger than
	// a rule's limit, is refused with Reason Never.
	//
	// A non-nil error means the limiter failed (a store unreachable, a
	// per-key factory that failed) and the Decision is meaningless; the
	// middleware then applies its failure policy. Refusals are never
	// errors. The middleware uses at most one Quota entry per rule: a
	// NumQuota above the number of rules counts as that number, a negative
	// one as 0.
	Decide(ctx context.Context, key string, now time.Time, cost int) (Decision, error)
	// Rules returns the policy: at most MaxRules rules, in a fixed order,
	// the same on every call. The middleware calls it once, in New.
	Rules() []Rule
}

// Checker is implemented by limiters that can answer what Decide would
// decide without recording anything. [All] uses it so that a request refused
// by one limiter consumes nothing from the others. Every adapter of this
// package implements it.
type Checker interface {
	// Check returns the Decision that Decide(ctx, key, now, cost) would
	// return if nothing else happened meanwhile, and records nothing. The
	// Decision's Quota reports the state before any admission. Where only a
	// decision can tell (the per-key adapters, for a key absent from a full
	// store or after a failed creation: see Keyed), Check answers as for a
	// new key.
	Check(ctx context.Context, key string, now time.Time, cost int) (Decision, error)
}

// lazy is implemented by the adapters of this package. serve decides r, with
// the per-rule quota computed only when the response can use it (see
// Middleware.quotaOnAdmit), and answers it with m.respond. Deciding and
// answering in one call keeps the Decision (about 170 bytes) in one stack
// frame instead of copying it back through an interface call. Only this
// package's types can implement lazy.
type lazy interface {
	serve(m *Middleware, w http.ResponseWriter, r *http.Request, next http.Handler, key string, now time.Time, cost int)
}
