package window

import (
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/conformance"
	"github.com/slidelimit/slidelimit/internal/oracle"
)

// conformanceOptions describes window to the shared suite: the two-counter
// formula, windows anchored on an admission into an idle limiter, and a stale
// instant decided at the start of the current window.
func conformanceOptions(newLimiter func(limit int, window time.Duration) (conformance.Limiter, error), construct func(limit int, window time.Duration) (any, error)) conformance.Options {
	return conformance.Options{
		Pkg:       "window",
		New:       newLimiter,
		Kind:      conformance.Approx,
		Stale:     oracle.StaleToStart,
		MaxLimit:  MaxLimit,
		MaxWindow: MaxWindow,
		Construct: construct,
	}
}

func constructLockFree(limit int, window time.Duration) (any, error) { return New(limit, window) }
func constructMutex(limit int, window time.Duration) (any, error)    { return newMutex(limit, window) }

var (
	newLockFree  = conformance.Adapt(New)
	newMutexTwin = conformance.Adapt(newMutex)
)

// TestConformance runs the shared contract on the lock-free limiter and on
// its mutex twin.
func TestConformance(t *testing.T) {
	t.Run("lockfree", func(t *testing.T) { conformance.Run(t, conformanceOptions(newLockFree, constructLockFree)) })
	t.Run("mutex", func(t *testing.T) { conformance.Run(t, conformanceOptions(newMutexTwin, constructMutex)) })
}

// TestOutsideConformance runs the shared outside-view concurrency check.
func TestOutsideConformance(t *testing.T) {
	t.Run("lockfree", func(t *testing.T) { conformance.RunOutside(t, conformanceOptions(newLockFree, nil)) })
	t.Run("mutex", func(t *testing.T) { conformance.RunOutside(t, conformanceOptions(newMutexTwin, nil)) })
}
