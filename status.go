package slidelimit

import "time"

// Status is one decision with what a rate-limited service reports beside it
// (an HTTP 429's Retry-After, the RateLimit fields), read from the state the
// decision itself was made on, so that the answers do not disagree with the
// decision because of another goroutine's admission landing in between.
// ring.Limiter, window.Limiter, multi.Limiter, multi.Approx, keyed.Window and
// keyed.Limiter return it from DecideStatus (the multi limiters also one per
// rule from DecideRules); each says how exactly its answers follow that
// state.
type Status struct {
	// Admitted reports whether n was admitted (and recorded).
	Admitted bool
	// Remaining is the largest cost that would be admitted at the
	// decision's instant, after the decision: what TokensAt would have
	// answered on that state.
	Remaining int
	// RetryAt, when n was refused by the limit, is the earliest instant,
	// not before now, at which n would be admitted if nothing else were
	// admitted meanwhile (what ReadyAt would have answered), or the zero
	// Time if n can never be admitted (n < 0, n above the limit, or n not
	// fitting even at the last instant the limiter can tell apart). It is
	// the zero Time when n was admitted, and when n was refused for a
	// reason other than the limit (an error of a keyed store: no room for
	// a new key, a key not equal to itself).
	RetryAt time.Time
	// ResetAt is the earliest instant, not before now, at which the whole
	// limit would be admitted if nothing else were admitted: now when
	// Remaining is the limit, and the zero Time when that is not known (a
	// keyed store with no room for an absent key, or past the last instant
	// the limiter can tell apart). A caller that decides at the zero Time
	// itself gets now, the zero Time, when the whole limit is there: only
	// Remaining tells that apart from "not known".
	ResetAt time.Time
}
