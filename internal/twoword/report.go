package twoword

import (
	"time"

	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/internal/twocount"
)

// What a decision reports beside itself, computed from the state it was made
// on, so that window.Limiter and keyed.Window answer from one snapshot alike.

// Remaining is the largest cost rule r admits on the state s at its instant.
func (s Seen) Remaining(r *twocount.Rule) int64 {
	return r.Tokens(s.Prev, s.Curr, s.T-s.Start)
}

// ReadyAt is the instant, not before now, at which n fits on the state s under
// rule r if nothing else is admitted, and true; or false if n does not fit
// even at the last instant a window tells apart. b is the base the state's
// offsets are taken from, now the instant the call that read s was given and
// off its offset from b.
func (s Seen) ReadyAt(r *twocount.Rule, b clock.Base, now time.Time, off, n int64) (time.Time, bool) {
	at := r.ReadyAt(s.Start, s.Prev, s.Curr, s.T, n)
	return b.ReadyFrom(now, off, s.T, at, at <= twocount.OffMax)
}

// Quota is Remaining, and the instant, not before now, at which the whole
// limit fits on s if nothing else is admitted: now when it fits now, the zero
// Time when it never does (see ReadyAt).
func (s Seen) Quota(r *twocount.Rule, b clock.Base, now time.Time, off int64) (rem int64, reset time.Time) {
	rem = s.Remaining(r)
	if rem >= r.Limit {
		return rem, now
	}
	reset, _ = s.ReadyAt(r, b, now, off, r.Limit)
	return rem, reset
}
