// Package ring is an exact sliding-log rate limiter: at most limit units of
// cost are admitted in every window (t-window, t], whatever its alignment.
//
// The limiter remembers the instant of each of the last limit units it
// admitted, in a ring of limit words allocated once by New. A call of cost n
// at instant t is admitted iff the unit admitted limit-n+1 units ago is at
// least window old, which is exactly the naive sliding log's rule ("the cost
// already admitted in (t-window, t], plus n, is at most limit"), decided in
// one comparison. Unlike a token bucket or a two-counter window, it never lets
// limit+1 through in any window of length window, and, for calls presented in
// time order, it never refuses a call the log would admit.
//
// Decisions are lock-free and allocate nothing: an admission of cost 1 is one
// compare-and-swap on a ring slot plus one on the head; a refused call only
// reads, unless it finds another caller's admission half done, which it
// completes first. Under concurrency every admission takes effect at one instant, in
// one order, at its own caller's instant (clamped as below): whatever other
// goroutines ask or are refused meanwhile changes no decision.
// The algorithm, the concurrency protocol and the proofs are in the
// repository's documentation of ring (linked from its README).
//
// Every method takes the instant it decides at (AllowN, TokensAt, ReadyAt,
// IdleAt); Allow and Wait read the clock themselves. Instants are compared
// with time.Time.Sub against an instant taken in New, so readings from
// time.Now are compared on the monotonic clock; the instants it answers
// (ReadyAt, a Status's RetryAt and ResetAt) are on the caller's clock: in
// now's location, with a monotonic reading only when now has one. An instant
// earlier than the latest one the limiter has admitted at is treated as that
// latest instant: a caller with a stale clock reading can never move the
// limiter backwards or get more through. The same rule means that one call at an instant far
// in the future holds the limiter there until the clock catches up.
//
// Instants within about 73 years (2^61 ns) of New are represented exactly;
// earlier ones are all treated as the earliest of that range, later ones as
// the latest, so every time.Time, including the zero Time, gets a decision,
// and AllowN, TokensAt and ReadyAt agree at it. Once a window is full at the
// latest representable instant, time cannot advance any further: the limiter
// refuses from then on, and ReadyAt reports that (ok false).
package ring

import (
	"context"
	"fmt"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/internal/slidelog"
)

// MaxLimit is the largest limit New accepts: 2^30 on 64-bit platforms, 2^26
// on 32-bit ones. Memory is 8 bytes per unit of limit, allocated in New.
const MaxLimit = 1 << (26 + 4*(^uint(0)>>63)) // 1,073,741,824 on 64-bit platforms, 67,108,864 on 32-bit ones

// MaxWindow is the longest window New accepts, 2^60 ns (about 36 years).
const MaxWindow time.Duration = 1 << 60 // 1,152,921,504,606,846,976ns

// ring's limits are the log's (array lengths must be non-negative).
var (
	_ [MaxLimit - slidelog.MaxLimit]struct{}
	_ [slidelog.MaxLimit - MaxLimit]struct{}
	_ [MaxWindow - slidelog.MaxWindow]struct{}
	_ [slidelog.MaxWindow - MaxWindow]struct{}
)

// ErrNeverReady is wrapped by the error WaitN returns for an n that can never
// be admitted: negative, above the limit, or not fitting in a window that
// stays full at the latest representable instant. It is the module's
// [slidelimit.ErrNeverReady], so errors.Is matches either.
var ErrNeverReady = slidelimit.ErrNeverReady

// ErrDeadline is wrapped by the error WaitN returns, without waiting, when the
// context's deadline falls before the instant n could be admitted. It is the
// module's [slidelimit.ErrDeadline].
var ErrDeadline = slidelimit.ErrDeadline

// Limiter is an exact sliding-log limiter. It is safe for concurrent use by
// multiple goroutines; decisions are lock-free and allocation-free.
//
// The zero value refuses every call of cost 1 or more; use New. A Limiter must
// not be copied after first use.
type Limiter struct {
	log    slidelog.Log
	base   clock.Base
	limit  int
	window time.Duration
}

// New returns a limiter that admits at most limit units of cost in every
// window of length window. It allocates limit 8-byte slots once; nothing is
// allocated after. limit must be in [1, MaxLimit] and window in
// [1ns, MaxWindow].
func New(limit int, window time.Duration) (*Limiter, error) {
	if limit < 1 || limit > MaxLimit {
		return nil, fmt.Errorf("ring: limit must be between 1 and %d, got %d", MaxLimit, limit)
	}
	if window < 1 || window > MaxWindow {
		return nil, fmt.Errorf("ring: window must be between 1ns and %v, got %v", MaxWindow, window)
	}
	l := &Limiter{base: clock.NewBase(), limit: limit, window: window}
	l.log.Init([]slidelog.Rule{{Limit: int64(limit), Window: int64(window)}})
	return l, nil
}

// Limit returns the limit the limiter was created with.
func (l *Limiter) Limit() int { return l.limit }

// Window returns the window the limiter was created with.
func (l *Limiter) Window() time.Duration { return l.window }

// Allow is shorthand for AllowN(time.Now(), 1), reading only the monotonic
// clock.
func (l *Limiter) Allow() bool {
	return l.log.AllowN(l.base.Now(), 1)
}

// AllowN reports whether n units of cost are admitted at instant now, and if
// so records them. It admits iff the cost admitted in (now-window, now] plus
// n is at most the limit, where now is first clamped (see the package doc:
// an instant before the latest admission counts as that admission's); a
// refused call changes nothing.
//
// n == 0 is always admitted and records nothing. n < 0 and n > Limit() are
// always refused.
func (l *Limiter) AllowN(now time.Time, n int) bool {
	return l.log.AllowN(l.base.Offset(now), int64(n))
}

// TokensAt returns the largest cost AllowN(now, n) would admit at now:
// the limit minus the cost admitted in (now-window, now], with now clamped as
// AllowN clamps it. It is a snapshot:
// under concurrent admissions it may be stale by the time it returns.
func (l *Limiter) TokensAt(now time.Time) int {
	return int(l.log.TokensAt(l.base.Offset(now)))
}

// ReadyAt returns the earliest instant, not before now, at which AllowN would
// admit n if nothing else were admitted meanwhile: now itself when n fits
// now. It is what an HTTP 429's Retry-After needs. ok is false when n can
// never be admitted: n < 0, n > Limit(), or n does not fit at the latest
// instant the limiter can represent (see the package doc). n == 0 is ready at
// now.
func (l *Limiter) ReadyAt(now time.Time, n int) (at time.Time, ok bool) {
	off := l.base.Offset(now)
	at0, ok := l.log.ReadyAt(off, int64(n))
	return l.base.Ready(now, off, at0, ok)
}

// DecideStatus is AllowN, and also returns what remains and when n and the
// whole limit would fit, read at the log's state right after the decision
// (its head and instant): the answers TokensAt and ReadyAt give, minus the
// admissions of other goroutines that a second call could see land in
// between. When such admissions have already overwritten the oldest stamps
// that state needs (the next admission replaces the oldest one), it reads
// the live state at the decision's instant instead, whose answers can only
// be more cautious (less remaining, a later RetryAt and ResetAt) and still
// agree with the decision. Its edges are AllowN's: n == 0 is admitted and
// records nothing; n < 0 and n > Limit() are refused with a zero RetryAt
// (as ReadyAt's false), and then Remaining and ResetAt describe the limiter
// at now as TokensAt and ReadyAt(now, Limit()) would. It is lock-free and
// allocates nothing.
func (l *Limiter) DecideStatus(now time.Time, n int) slidelimit.Status {
	off := l.base.Offset(now)
	ok, st := l.log.DecideStatus(off, int64(n))
	return st.Public(ok, l.base, now, off)
}

// IdleAt reports whether the limiter carries no information at now: nothing
// was admitted in the last window before now. An idle limiter decides every
// call at an instant at or after now exactly as a new limiter would, so it
// can be dropped and recreated (package keyed relies on this).
func (l *Limiter) IdleAt(now time.Time) bool {
	return l.log.IdleAt(l.base.Offset(now))
}

// Wait is shorthand for WaitN(ctx, 1).
func (l *Limiter) Wait(ctx context.Context) error { return l.WaitN(ctx, 1) }

// WaitN blocks until n units are admitted, and returns nil. It returns an
// error, having admitted nothing, when ctx ends first (ctx.Err()), at once
// when ctx's deadline falls before the instant n could be admitted (wrapping
// ErrDeadline), and at once when n can never be admitted (wrapping
// ErrNeverReady). A waiter does not queue: when room frees up, any caller may
// take it first, and the waiter waits again. It never spins: a retry that
// finds the room taken again backs off on a timer.
func (l *Limiter) WaitN(ctx context.Context, n int) error {
	return clock.Wait(ctx, "ring", l, n)
}
