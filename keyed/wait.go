package keyed

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/slidelimit/slidelimit/internal/clock"
)

// Wait is shorthand for WaitN(ctx, key, 1).
func (k *Limiter[K, L]) Wait(ctx context.Context, key K) error {
	return k.WaitN(ctx, key, 1)
}

// WaitN blocks until AllowN(key, time.Now(), n) admits n, and returns nil;
// or returns ctx's error if ctx ends first (at once, admitting nothing and
// creating no key, if ctx is already done). It fails at once, admitting
// nothing, with an error that wraps ErrDeadline if ctx's deadline falls
// before the instant n could be admitted, or what Decide would report
// (ErrBadKey, ErrNeverReady, ErrFull, or the error of the function given to
// New). If the key's limiter says n fits now but refuses it again and again
// (another caller takes the room each time, or a limiter whose ReadyAt
// contradicts its AllowN), WaitN retries with a growing pause rather than
// spinning.
func (k *Limiter[K, L]) WaitN(ctx context.Context, key K, n int) error {
	k.mustBeMade()
	if !k.validKey(key) {
		return &waitError{n: n, err: ErrBadKey}
	}
	return waitFor(ctx, k, key, n)
}

// waitFor is WaitN on one key of d.
func waitFor[K comparable](ctx context.Context, d decider[K], key K, n int) error {
	w := waiter[K]{d: d, key: key}
	err := clock.Wait(ctx, "keyed", &w, n)
	if w.err != nil && errors.Is(err, ErrNeverReady) {
		return &waitError{n: n, err: w.err}
	}
	return err
}

// waitError is the error WaitN returns when Decide refused with an error:
// "keyed: WaitN(n=...): " and Decide's error, which it wraps.
type waitError struct {
	n   int
	err error
}

func (e *waitError) Error() string {
	return "keyed: WaitN(n=" + strconv.Itoa(e.n) + "): " + strings.TrimPrefix(e.err.Error(), "keyed: ")
}

func (e *waitError) Unwrap() error { return e.err }

// decider is what WaitN needs of a Limiter or a Window (with a valid key).
type decider[K comparable] interface {
	allowN(key K, now time.Time, n int) (bool, error)
	readyAt(key K, now time.Time, n int) (at time.Time, ok, absent bool)
}

// waiter adapts one key of a Limiter or a Window to clock.Wait. When Decide
// refuses with an error it remembers it and reports the key as never ready,
// so that Wait stops instead of spinning.
type waiter[K comparable] struct {
	d   decider[K]
	key K
	err error
}

func (w *waiter[K]) AllowN(now time.Time, n int) bool {
	ok, err := w.d.allowN(w.key, now, n)
	if err != nil {
		w.err = err
	}
	return ok
}

func (w *waiter[K]) ReadyAt(now time.Time, n int) (time.Time, bool) {
	if w.err != nil {
		return time.Time{}, false
	}
	at, ok, absent := w.d.readyAt(w.key, now, n)
	if absent {
		// The key was removed since AllowN refused it, and the store had
		// no room (or no limiter) to answer for it anew: not "never".
		// Decide again at once (clock.Wait backs off if this repeats),
		// and AllowN says why: it admits, or reports ErrFull.
		return now, true
	}
	return at, ok
}
