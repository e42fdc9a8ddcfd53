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
	s := slidelimit.Status{Admitted: admitted, Remaining: int(st.Remaining)}
	s.RetryAt, _ = b.Ready(now, off, st.Retry, st.RetryOK)
	s.ResetAt, _ = b.Ready(now, off, st.Reset, st.ResetOK)
	return s
}

// Public is rs as the module states one rule's part of a decision's status
// (see Status.Public).
func (rs RuleStatus) Public(admitted bool, b clock.Base, now time.Time, off int64) slidelimit.Status {
	return Status{Remaining: rs.Remaining, Retry: rs.Retry, RetryOK: rs.RetryOK, Reset: rs.Reset, ResetOK: rs.ResetOK}.Public(admitted, b, now, off)
}
