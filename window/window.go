// Package window is an approximate sliding-window rate limiter built from two
// counters: the cost admitted in the current window and in the one before it.
//
// Time is cut into consecutive windows of length W. A call of cost n at
// instant t, elapsed = t - (start of t's window) into its window, is admitted
// iff
//
//	prev*(W-elapsed) + (curr+n)*W <= limit*W
//
// where prev and curr are the cost admitted in the previous and the current
// window: the previous window is assumed to have been spread evenly, and the
// part of it still inside (t-W, t] is counted. The comparison is computed
// exactly, in 128-bit integers; nothing is rounded, so the limiter never
// admits a call the formula refuses.
//
// The estimate is approximate: it can let through up to 2*limit-1 in some
// window of length W (and, for calls made one at a time, at most
// max(limit, 2*limit-2)); on ordinary traffic it stays close to limit.
// The repository's documentation of window (linked from its README) gives the
// proof, the construction that reaches the bound and measured errors against
// the exact sliding log of package ring. Use ring when the limit must hold in
// every window; use window when a limiter must cost a few words of memory
// whatever the limit.
//
// Windows are aligned to the limiter itself, not to the wall clock: the first
// admission into an idle limiter (one with nothing admitted in its current or
// previous window) starts a window at its own instant. Many limiters created
// together therefore do not all reset at the same instant, and an idle
// limiter decides exactly as a new one would (see IdleAt).
//
// Every method takes the instant it decides at (AllowN, TokensAt, ReadyAt,
// IdleAt); Allow and Wait read the clock themselves. Instants are compared
// with time.Time.Sub against an instant taken in New, so readings from
// time.Now are compared on the monotonic clock; the instants it answers
// (ReadyAt, a Status's RetryAt and ResetAt) are on the caller's clock: in
// now's location, with a monotonic reading only when now has one. The
// limiter records the start of its current window; an instant before it is
// treated as that start, so a stale clock reading never moves the limiter
// backwards. (A stale instant
// inside the current window is decided as given: a smaller elapsed only gives
// the previous window more weight, so it is never more permissive than the
// latest instant.) Instants more than about 63 years before or after New are
// treated as that bound; past the later bound time stops for the limiter,
// and ReadyAt reports never for a cost that does not fit there. A one-rule
// multi.Approx decides every call exactly as a Limiter does.
package window

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/internal/twocount"
	"github.com/slidelimit/slidelimit/internal/twoword"
)

// MaxLimit is the largest limit New accepts (each counter is 20 bits wide).
// multi.MaxApproxLimit is the same.
const MaxLimit = 1<<20 - 1 // 1,048,575

// MaxWindow is the longest window New accepts, 2^57 ns (about 4.6 years).
// multi.MaxApproxWindow is the same.
const MaxWindow time.Duration = 1 << 57 // 144,115,188,075,855,872ns

// ErrNeverReady is wrapped by the error WaitN returns for an n that can never
// be admitted: negative, above the limit, or not fitting at the last instant
// the limiter can tell apart. It is the module's [slidelimit.ErrNeverReady],
// so errors.Is matches either.
var ErrNeverReady = slidelimit.ErrNeverReady

// ErrDeadline is wrapped by the error WaitN returns, without waiting, when the
// context's deadline falls before the instant n could be admitted. It is the
// module's [slidelimit.ErrDeadline].
var ErrDeadline = slidelimit.ErrDeadline

// cacheLine is the false-sharing unit we pad to. 64 bytes covers amd64 and
// most arm64 cores; the adjacent-line prefetcher of some x86 parts pairs
// lines, but 128 bytes per limiter would be wasted on a limiter that is one of
// many (package keyed keeps its per-key states unpadded instead).
const cacheLine = 64

// The limits are twocount's (array lengths must be non-negative).
var (
	_ [twocount.MaxLimit - MaxLimit]struct{}
	_ [MaxLimit - twocount.MaxLimit]struct{}
	_ [twocount.MaxWindow - MaxWindow]struct{}
	_ [MaxWindow - twocount.MaxWindow]struct{}
)

// header holds what every call reads: the configuration and the window word.
type header struct {
	rule twocount.Rule // Limit 0 in the zero Limiter
	base clock.Base

	// at is the window word: the start of the current window, as an offset
	// from base. Its bits and the protocol on at and cnt are package
	// twoword's; this limiter never retires its state.
	at atomic.Uint64
}

// Limiter is an approximate sliding-window limiter with two counters. It is
// safe for concurrent use by multiple goroutines; decisions are lock-free and
// allocation-free. A refused call writes nothing with one exception: a call
// whose cost fits may move the window start to its own instant's window and
// then find the room taken by a concurrent call. Such a move admits nothing;
// it is as if time had reached that call's instant before the others decided
// (the repository's documentation of window states this contract and proves
// it, under "Races").
//
// Its state is two words, each on its own cache line: the window word (the
// start of the current window) and the count word (the two counters). See
// the field comments for the protocol.
//
// The zero value refuses every call of cost 1 or more; use New. A Limiter must
// not be copied after first use.
type Limiter struct {
	header
	_ [(cacheLine - unsafe.Sizeof(header{})%cacheLine) % cacheLine]byte

	// cnt is the count word: the two counters and their generation
	// (package twoword).
	cnt atomic.Uint64
	_   [cacheLine - 8]byte
}

// New returns a limiter that admits a call of cost n at instant t iff
// prev*(window-elapsed) + (curr+n)*window <= limit*window (see the package
// documentation). limit must be in [1, MaxLimit] and window in
// [1ns, MaxWindow]. The limiter is two words; nothing is allocated after New.
func New(limit int, window time.Duration) (*Limiter, error) {
	if err := validate(limit, window); err != nil {
		return nil, err
	}
	l := &Limiter{header: header{rule: twocount.Rule{Limit: int64(limit), Window: int64(window)}, base: clock.NewBase()}}
	l.at.Store(twoword.New())
	return l, nil
}

// validate checks New's arguments; the mutex twin shares it.
func validate(limit int, window time.Duration) error {
	if limit < 1 || limit > MaxLimit {
		return fmt.Errorf("window: limit must be between 1 and %d, got %d", MaxLimit, limit)
	}
	if window < 1 || window > MaxWindow {
		return fmt.Errorf("window: window must be between 1ns and %v, got %v", MaxWindow, window)
	}
	return nil
}

// Limit returns the limit the limiter was created with.
func (l *Limiter) Limit() int { return int(l.rule.Limit) }

// Window returns the window the limiter was created with.
func (l *Limiter) Window() time.Duration { return time.Duration(l.rule.Window) }

// Allow is shorthand for AllowN(time.Now(), 1), reading only the monotonic
// clock.
func (l *Limiter) Allow() bool { return l.allow(l.base.Now(), 1) }

// AllowN reports whether n units of cost are admitted at instant now, and if
// so records them. It admits iff prev*(window-elapsed) + (curr+n)*window <=
// limit*window; a refused call records nothing (it may move the window start
// to its instant's window: see Limiter).
//
// n == 0 is always admitted and records nothing. n < 0 and n > Limit() are
// always refused.
func (l *Limiter) AllowN(now time.Time, n int) bool {
	return l.allow(l.base.Offset(now), n)
}

// TokensAt returns the largest cost AllowN(now, n) would admit at now. It is a
// snapshot: under concurrent admissions it may be stale by the time it
// returns.
func (l *Limiter) TokensAt(now time.Time) int {
	if l.rule.Limit == 0 {
		return 0
	}
	return int(l.seen(l.base.Offset(now)).Remaining(&l.rule))
}

// ReadyAt returns the earliest instant, not before now, at which AllowN would
// admit n if nothing else were admitted meanwhile: now itself when n fits
// now. It is what an HTTP 429's Retry-After needs. ok is false when n can
// never be admitted: n < 0 or n > Limit(), or n does not fit at the last
// instant the limiter can tell apart (about 63 years after New; see the
// package documentation), after which time no longer moves for it. n == 0
// is ready at now.
func (l *Limiter) ReadyAt(now time.Time, n int) (at time.Time, ok bool) {
	if n == 0 {
		return now, true
	}
	if n < 0 || int64(n) > l.rule.Limit {
		return time.Time{}, false
	}
	// now itself when n fits at the instant now is decided at; never past
	// the last instant the limiter tells apart.
	off := l.base.Offset(now)
	return l.seen(off).ReadyAt(&l.rule, l.base, now, off, int64(n))
}

// IdleAt reports whether the limiter carries no information at now: nothing
// was admitted in the window that contains now or in the one before it. An
// idle limiter decides every call at an instant at or after now exactly as a
// new limiter would, so it can be dropped and recreated (package keyed relies
// on this). IdleAt becomes true at most 2*window after the last admission.
func (l *Limiter) IdleAt(now time.Time) bool {
	if l.rule.Limit == 0 {
		return true
	}
	idle, _ := twoword.Idle(&l.at, &l.cnt, &l.rule, l.base.Offset(now))
	return idle
}

// Wait is shorthand for WaitN(ctx, 1).
func (l *Limiter) Wait(ctx context.Context) error { return l.WaitN(ctx, 1) }

// WaitN blocks until n units are admitted, and returns nil. It returns an
// error, having admitted nothing, when ctx ends first (ctx.Err()), at once
// when ctx's deadline falls before the instant n could be admitted (wrapping
// ErrDeadline), and at once when n can never be admitted (wrapping
// ErrNeverReady). A waiter does not queue: when room frees up, any caller may
// take it first, and the waiter waits again.
func (l *Limiter) WaitN(ctx context.Context, n int) error {
	return clock.Wait(ctx, "window", l, n)
}

// allow is AllowN on an offset from base (package twoword's protocol).
func (l *Limiter) allow(off int64, n int) bool {
	ok, _ := twoword.Allow(&l.at, &l.cnt, &l.rule, off, n)
	return ok
}

// seen returns the state a call at offset off decides on: the instant it is
// decided at, and the window start and counters in effect then.
func (l *Limiter) seen(off int64) twoword.Seen {
	t, ws, p, c, _ := twoword.View(&l.at, &l.cnt, &l.rule, off)
	return twoword.Seen{T: t, Start: ws, Prev: p, Curr: c}
}
