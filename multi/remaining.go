package multi

import "time"

// RemainingAt appends to dst, for each rule in the order given to New, the
// largest cost that rule alone would admit at now (its limit minus the cost
// admitted in its window ending at now), and returns the extended slice:
// what an HTTP 429 reports per policy. All values come from one snapshot of
// the log. With room in dst it allocates nothing.
func (l *Limiter) RemainingAt(now time.Time, dst []int) []int {
	return l.log.RemainingAt(l.base.Offset(now), dst)
}
