package slidelog

import (
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/internal/clock"
)

// Public is st as the module states a decision's status
// (slidelimit.Status), for a call at now, the instant whose offset from b is
// off, that was (or was not) admitted.
func (st Status) Public(admitted bool, b clock.Base, now time.Time, off int64) slidelimit.Status {
	s := slidelimit.Status{Admitted: admitted}
	rs := RuleStatus(st)
	rs.Into(&s, b, now, off)
	return s
}

// Into sets dst's Remaining, RetryAt and ResetAt to rs's, as the module
// states one rule's part of a decision's status (see Status.Public), leaving
// Admitted to the caller. It writes in place: it runs once per rule.
func (rs *RuleStatus) Into(dst *slidelimit.Status, b clock.Base, now time.Time, off int64) {
	dst.Remaining = int(rs.Remaining)
	dst.RetryAt, _ = b.Ready(now, off, rs.Retry, rs.RetryOK)
	dst.ResetAt, _ = b.Ready(now, off, rs.Reset, rs.ResetOK)
}
