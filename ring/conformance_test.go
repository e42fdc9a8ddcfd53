package ring

import (
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/conformance"
)

// conformanceOptions describes ring to the shared suite: an exact sliding
// log; newLimiter builds the implementation under test.
func conformanceOptions(newLimiter func(limit int, window time.Duration) (conformance.Limiter, error), construct bool) conformance.Options {
	opts := conformance.Options{
		Pkg:       "ring",
		New:       newLimiter,
		Kind:      conformance.Exact,
		MaxLimit:  MaxLimit,
		MaxWindow: MaxWindow,
	}
	if construct {
		opts.Construct = func(limit int, window time.Duration) (any, error) { return New(limit, window) }
	}
	return opts
}

var newLockFree = conformance.Adapt(New)

func newMutexTwin(limit int, window time.Duration) (conformance.Limiter, error) {
	return newMutex(limit, window), nil
}

// TestConformance runs the shared contract on the lock-free limiter and on
// its mutex twin.
func TestConformance(t *testing.T) {
	t.Run("lockfree", func(t *testing.T) { conformance.Run(t, conformanceOptions(newLockFree, true)) })
	t.Run("mutex", func(t *testing.T) { conformance.Run(t, conformanceOptions(newMutexTwin, false)) })
}

// TestOutsideConformance runs the shared outside-view concurrency check.
func TestOutsideConformance(t *testing.T) {
	t.Run("lockfree", func(t *testing.T) { conformance.RunOutside(t, conformanceOptions(newLockFree, false)) })
	t.Run("mutex", func(t *testing.T) { conformance.RunOutside(t, conformanceOptions(newMutexTwin, false)) })
}
