package keyed

import "time"

// FreezeSweepClock makes every automatic sweep take no time as its pacing
// measures it, so that two stores given the same calls sweep on their own at
// the same calls, and returns the function that restores the real clock.
// Tests that use it must not run in parallel with others.
func FreezeSweepClock() (restore func()) {
	t := time.Unix(0, 0)
	sweepClock = func() time.Time { return t }
	return func() { sweepClock = time.Now }
}
