package window

import (
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/conformance"
)

// TestDecideStatusMatchesQueries: with one goroutine, every field of
// DecideStatus is what AllowN, TokensAt and ReadyAt answer around the same
// decision, for several configurations; the zero Limiter admits only n == 0;
// nothing is allocated (conformance.RunStatus).
func TestDecideStatusMatchesQueries(t *testing.T) {
	// Past the last instant a window tells apart.
	conformance.RunStatus(t, func(limit int, w time.Duration) (conformance.StatusLimiter, error) {
		return New(limit, w)
	}, new(Limiter), MaxLimit, 70*365*24*time.Hour)
}

// TestOutsideStatus runs the shared outside-view concurrency check with every
// admission made by DecideStatus: the window's bound holds, and every answer
// is consistent with itself although other goroutines admit at the same time.
func TestOutsideStatus(t *testing.T) {
	conformance.RunOutsideStatus(t, conformanceOptions(nil, nil), func(limit int, window time.Duration) (conformance.StatusLimiter, error) {
		return New(limit, window)
	})
}
