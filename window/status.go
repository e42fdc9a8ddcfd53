package window

import (
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/internal/twoword"
)

// Status is the module's [slidelimit.Status]: one decision with what remains
// and when to retry, from the one snapshot of the window's state the
// decision was made on. Limiter and keyed.Window return it.
type Status = slidelimit.Status

// DecideStatus is AllowN, and also returns what remains and when n and the
// whole limit would fit, read from the snapshot the decision was made on: the
// answers TokensAt and ReadyAt give, minus the admissions of other goroutines
// that a second call could see land in between. Its edges are AllowN's: n ==
// 0 is admitted and records nothing; n < 0 and n > Limit() are refused (with
// a zero RetryAt, as ReadyAt's false), and then Remaining and ResetAt
// describe the limiter at now as TokensAt and ReadyAt(now, Limit()) would. It
// is lock-free and allocates nothing.
func (l *Limiter) DecideStatus(now time.Time, n int) Status {
	if l.rule.Limit == 0 {
		// The zero Limiter: its whole limit, 0, is there now; nothing
		// else ever fits.
		return Status{Admitted: n == 0, ResetAt: now}
	}
	off := l.base.Offset(now)
	if n <= 0 || int64(n) > l.rule.Limit {
		s := l.status(l.seen(off), now, off)
		s.Admitted = n == 0
		return s
	}
	ok, _, seen := twoword.Decide(&l.at, &l.cnt, &l.rule, off, n)
	s := l.status(seen, now, off)
	s.Admitted = ok
	if !ok {
		s.RetryAt, _ = seen.ReadyAt(&l.rule, l.base, now, off, int64(n))
	}
	return s
}

// status is Remaining and ResetAt of the state s, read for a call at now,
// whose offset is off.
func (l *Limiter) status(s twoword.Seen, now time.Time, off int64) Status {
	rem, reset := s.Quota(&l.rule, l.base, now, off)
	return Status{Remaining: int(rem), ResetAt: reset}
}
