package window

import (
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
)

// newRef returns the naive reference the tests compare decisions with:
// internal/oracle's two-counter model in this package's layout. Windows are
// [anchor+k*W, anchor+(k+1)*W); an admission into an idle limiter (both
// counters zero, or nothing ever admitted) sets anchor to its instant; an
// instant earlier than the start of the current window is decided at that
// start. Instants are int64 nanoseconds from t0.
func newRef[L ~int | ~int64, D ~int64](limit L, window D) *oracle.TwoCounter {
	return oracle.NewTwoCounter(oracle.StaleToStart, oracle.AnchorIdle, oracle.R(int(limit), time.Duration(window)))
}
