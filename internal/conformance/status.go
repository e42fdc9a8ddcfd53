package conformance

import "time"

// StatusProblem says what is wrong with one decision reported with its quota
// (slidelimit.Status) by a limiter of the given limit, judged only from what its
// caller knows: the instant now and cost n it passed, and the answer. An
// admission leaves at most limit-n and names no RetryAt; a refusal leaves less
// than n and names a RetryAt after now, or none (n never fits); ResetAt is now
// exactly when the whole limit remains, and later otherwise. (A window
// answers a zero ResetAt past the last instant it tells apart, decades away:
// the callers' instants stay far inside.) For n < 1 only Remaining's range is
// checked. It returns "" for a consistent answer.
func StatusProblem(limit, n int, now time.Time, admitted bool, remaining int, retryAt, resetAt time.Time) string {
	switch {
	case remaining < 0 || remaining > limit:
		return "Remaining out of [0, limit]"
	case n < 1:
	case admitted && (remaining > limit-n || !retryAt.IsZero()):
		return "admitted, but Remaining above limit-n or a RetryAt"
	case !admitted && (remaining >= n || (!retryAt.IsZero() && !retryAt.After(now))):
		return "refused, but Remaining at least n or RetryAt not after now"
	case (remaining == limit) != resetAt.Equal(now) || (remaining < limit && !resetAt.After(now)):
		return "ResetAt not now exactly when the whole limit remains"
	}
	return ""
}
