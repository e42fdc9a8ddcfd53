// Package multi limits one consumer by several rules at once ("10 per second
// and 1000 per hour"), all-or-nothing: a call is admitted only if every rule
// admits it, and a refused call changes no rule's state, so a rule that would
// have admitted it does not count it.
//
// It comes in two flavours with the same methods:
//
//   - Limiter (New) is exact: every rule is a sliding log, as in package ring.
//     At most Limit units of cost are admitted in every window (t-Window, t] of
//     every rule, whatever its alignment, and for calls in time order no call
//     is refused that every rule's log would admit. Memory is one ring of 8
//     bytes per unit of the largest limit, shared by all rules.
//   - Approx (NewApprox) is approximate: every rule is a two-counter window, as
//     in package window. Memory is a few words per rule, independent of the
//     limits; a rule can let up to 2*Limit-1 through in a window of its length
//     that straddles two aligned windows.
//
// Each flavour takes one linearization point per decision: the exact one a
// compare-and-swap on the shared log (all rules read the same log), the
// approximate one a compare-and-swap on a head word that names an immutable
// snapshot of every rule's counters. The repository's documentation of multi
// (linked from its README) gives both protocols and the all-or-nothing
// argument.
//
// The order of the rules does not matter to any decision; per-rule answers
// (Rules, RemainingAt, ResetsAt, DecideRules) come back in the order given to
// the constructor. DecideStatus and DecideRules return, with a decision, what
// an HTTP 429 and the RateLimit fields need, from the state the decision was
// made on.
// Duplicate rules and redundant ones (10 per second beside 5 per second) are
// accepted: they cost a little time per decision and change nothing else.
//
// Every method takes the instant it decides at; Allow and Wait read the clock
// themselves. Instants are measured from an instant taken in the constructor,
// on the monotonic clock for readings from time.Now; the instants they answer
// are on the caller's clock: in now's location, with a monotonic reading only
// when now has one. A Limiter treats an
// instant earlier than the latest one it has admitted at as that latest
// instant; an Approx treats an instant before the start of a rule's current
// window as that start, as package window does. Either way state never moves
// backwards, and a stale instant never lets more through.
package multi

import (
	"context"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/internal/slidelog"
)

// ErrNeverReady is wrapped by the error WaitN returns for an n that can never
// be admitted: negative, above the smallest limit, or not fitting at the
// latest instant the limiter can represent. It is the module's
// [slidelimit.ErrNeverReady], so errors.Is matches either.
var ErrNeverReady = slidelimit.ErrNeverReady

// ErrDeadline is wrapped by the error WaitN returns, without waiting, when the
// context's deadline falls before the instant n could be admitted. It is the
// module's [slidelimit.ErrDeadline].
var ErrDeadline = slidelimit.ErrDeadline

// Limiter is the exact flavour: a sliding log for every rule, all read from
// one ring of the instants of the last L admitted units (L the largest limit).
// Rule i admits n iff the unit admitted Limit_i-n+1 units ago is at least
// Window_i old; a call is admitted iff every rule admits it, and then one
// compare-and-swap records it for all rules at once.
//
// A Limiter is safe for concurrent use by multiple goroutines; decisions are
// lock-free and allocation-free, and a refused call writes nothing. Under
// concurrency every admission takes effect at one instant, in one order, at
// its own caller's (clamped) instant, whatever other goroutines ask or are
// refused meanwhile. The zero value refuses every call of cost 1 or more; use
// New. A Limiter must not be copied after first use.
//
// Instants within about 73 years (2^61 ns) of New are represented exactly;
// earlier and later ones saturate to the ends of that range, so every
// time.Time gets a decision and AllowN, TokensAt and ReadyAt agree at it. A
// window full at the latest representable instant stays full: ReadyAt then
// reports ok false.
type Limiter struct {
	log       slidelog.Log
	base      clock.Base
	rules     []Rule
	minLimit  int
	maxWindow time.Duration
}

// New returns an exact limiter for the rules. It allocates one ring of 8
// bytes per unit of the largest limit; nothing is allocated after. It returns
// an error naming the rule when there is no rule or more than MaxRules, or
// when a rule's limit is outside [1, MaxLimit] or its window outside
// [1ns, MaxWindow].
func New(rules ...Rule) (*Limiter, error) {
	minLimit, maxWindow, err := validate(rules, MaxLimit, MaxWindow)
	if err != nil {
		return nil, err
	}
	l := &Limiter{
		base:      clock.NewBase(),
		rules:     append([]Rule(nil), rules...),
		minLimit:  minLimit,
		maxWindow: maxWindow,
	}
	sr := make([]slidelog.Rule, len(rules))
	for i, r := range rules {
		sr[i] = slidelog.Rule{Limit: int64(r.Limit), Window: int64(r.Window)}
	}
	l.log.Init(sr)
	return l, nil
}

// Rules returns a copy of the rules, in the order given to New.
func (l *Limiter) Rules() []Rule { return append([]Rule(nil), l.rules...) }

// MaxN returns the largest cost a single call can ever be admitted for: the
// smallest limit of the rules. AllowN refuses any n above it at once, and
// ReadyAt reports never for it. It is a bound, not a rule: use Rules for the
// rules themselves.
func (l *Limiter) MaxN() int { return l.minLimit }

// LongestWindow returns the longest window of the rules: once nothing has
// been admitted for that long, the limiter is idle (see IdleAt). It is a
// bound, not a rule: use Rules for the rules themselves.
func (l *Limiter) LongestWindow() time.Duration { return l.maxWindow }

// RemainingAt appends to dst, for each rule in the order given to New, the
// largest cost that rule alone would admit at now (its limit minus the cost
// admitted in its window ending at now), and returns the extended slice:
// what an HTTP 429 reports per policy. All values come from one snapshot of
// the log. With room in dst it allocates nothing.
func (l *Limiter) RemainingAt(now time.Time, dst []int) []int {
	return l.log.RemainingAt(l.base.Offset(now), dst)
}

// ResetsAt appends to dst, for each rule in the order given to New, the
// earliest instant, not before now, at which that rule alone would admit its
// whole limit if nothing else were admitted: now itself when nothing it
// counts is left at now, else its window after the latest admission; the
// zero Time past the last instant the limiter tells apart. It returns the
// extended slice: with RemainingAt, what the RateLimit field reports per
// policy. All values come from one snapshot of the log. With room in dst it
// allocates nothing.
func (l *Limiter) ResetsAt(now time.Time, dst []time.Time) []time.Time {
	off := l.base.Offset(now)
	l.log.ResetsAt(off, func(at int64, ok bool) {
		t, _ := l.base.Ready(now, off, at, ok)
		dst = append(dst, t)
	})
	return dst
}

// Allow is shorthand for AllowN(time.Now(), 1), reading only the monotonic
// clock.
func (l *Limiter) Allow() bool {
	return l.log.AllowN(l.base.Now(), 1)
}

// AllowN reports whether n units of cost are admitted at instant now, and if
// so records them for every rule. It admits iff, for every rule, the cost
// admitted in (now-Window, now] plus n is at most Limit. All-or-nothing: a
// refused call changes no rule's state.
//
// n == 0 is always admitted and records nothing. n < 0 and n > MaxN() (the
// smallest limit) are always refused.
func (l *Limiter) AllowN(now time.Time, n int) bool {
	return l.log.AllowN(l.base.Offset(now), int64(n))
}

// TokensAt returns the largest cost AllowN(now, n) would admit at now: the
// smallest, over the rules, of the limit minus the cost admitted in the
// rule's window ending at now. It is a snapshot: under concurrent admissions
// it may be stale by the time it returns.
func (l *Limiter) TokensAt(now time.Time) int {
	return int(l.log.TokensAt(l.base.Offset(now)))
}

// ReadyAt returns the earliest instant, not before now, at which AllowN would
// admit n if nothing else were admitted meanwhile: the latest of the instants
// at which each rule would admit it, and now itself when n fits now. It is
// what an HTTP 429's Retry-After needs. ok is false when n can never be
// admitted: n < 0, n > MaxN(), or n does not fit at the latest instant the
// limiter can represent. n == 0 is ready at now.
func (l *Limiter) ReadyAt(now time.Time, n int) (at time.Time, ok bool) {
	off := l.base.Offset(now)
	at0, ok := l.log.ReadyAt(off, int64(n))
	return l.base.Ready(now, off, at0, ok)
}

// IdleAt reports whether the limiter carries no information at now: nothing
// was admitted within the longest window before now. An idle limiter decides
// every call at an instant at or after now exactly as a new limiter would.
func (l *Limiter) IdleAt(now time.Time) bool {
	return l.log.IdleAt(l.base.Offset(now))
}

// Wait is shorthand for WaitN(ctx, 1).
func (l *Limiter) Wait(ctx context.Context) error { return l.WaitN(ctx, 1) }

// WaitN blocks until n units are admitted by every rule at once, and returns
// nil. It returns an error, having admitted nothing, when ctx ends first
// (ctx.Err()), at once when ctx's deadline falls before the instant n could
// be admitted (wrapping ErrDeadline), and at once when n can never be
// admitted (wrapping ErrNeverReady). A waiter does not queue: when room frees
// up, any caller may take it first, and the waiter waits again.
func (l *Limiter) WaitN(ctx context.Context, n int) error {
	return clock.Wait(ctx, "multi", l, n)
}
