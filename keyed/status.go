package keyed

import (
	"time"

	"github.com/slidelimit/slidelimit/internal/twoword"
	"github.com/slidelimit/slidelimit/window"
)

// Status is one decision for a key with what a rate-limited service reports
// beside it: the module's [slidelimit.Status] (window.Status), as
// Window.DecideStatus and Limiter.DecideStatus return it.
type Status = window.Status

// DecideStatus is Decide, and also returns what remains for the key and
// when the cost and the whole limit would fit, read from the snapshot the
// decision was made on, with no second lookup: the answers TokensAt and
// ReadyAt give, minus the admissions of other goroutines that a second call
// could see land in between. It has Decide's errors and edges (n == 0 is
// admitted without recording; n < 0 and n > Limit() are refused with
// ErrNeverReady; a full Window refuses a new key with ErrFull), and creates a
// key only when Decide would. When no decision reads the key's state (n
// outside [1, Limit()]), Remaining and ResetAt describe the key as TokensAt
// and ReadyAt(key, now, Limit()) would; after ErrBadKey and ErrFull they are
// zero. It allocates nothing for a key that is present.
func (w *Window[K]) DecideStatus(key K, now time.Time, n int) (Status, error) {
	w.mustBeMade()
	if !validKey(w.keyCheck, key) {
		return Status{}, ErrBadKey
	}
	off := w.base.Offset(now)
	h := w.keys.hash(key)
	if n <= 0 || int64(n) > w.rule.Limit {
		s := w.peek(h, key, now, off)
		if n == 0 {
			s.Admitted = true
			return s, nil
		}
		return s, errNeverReady
	}
	for {
		c := w.keys.find(h, key)
		if c == nil {
			var err error
			if c, err = w.create(h, key, off); err != nil {
				return Status{}, err
			}
		}
		ok, dead, seen := twoword.Decide(&c.at, &c.cnt, &w.rule, w.clampOff(off), n)
		if dead {
			continue
		}
		s := w.status(now, off, seen)
		s.Admitted = ok
		if !ok {
			s.RetryAt, _ = seen.ReadyAt(&w.rule, w.base, now, off, int64(n))
		}
		return s, nil
	}
}

// peek is the Status of key at offset off from base, recording nothing and
// creating nothing.
func (w *Window[K]) peek(h uint64, key K, now time.Time, off int64) Status {
	st, ok := w.view(h, key, off)
	if !ok {
		if w.full() {
			return Status{}
		}
		return Status{Remaining: int(w.rule.Limit), ResetAt: now}
	}
	return w.status(now, off, st)
}

// status is Remaining and ResetAt of the state s, read for a call at now,
// whose offset is off.
func (w *Window[K]) status(now time.Time, off int64, s twoword.Seen) Status {
	rem, reset := s.Quota(&w.rule, w.base, now, off)
	return Status{Remaining: int(rem), ResetAt: reset}
}
