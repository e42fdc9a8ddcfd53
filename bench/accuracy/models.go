package accuracy

import "github.com/slidelimit/slidelimit/internal/oracle"

// The replays judge every contender against the naive models of
// internal/oracle, the same ones the library's unit tests and fuzz targets
// use:
//
//   - the "oracle" and "log" columns use oracle.Log, the exact sliding log as
//     ring and multi.New promise it: the window ending at t is (t-W, t], and
//     an instant earlier than the latest admission is decided at that
//     admission's instant (a refused call's instant moves nothing);
//   - the "formula" column uses oracle.TwoCounter in the contender's window
//     layout (Model): Anchored is window's and multi.Approx's (windows start
//     at an admission into an idle limiter and follow back to back; a stale
//     instant is decided at the start of the current window; a refusal
//     changes nothing), Grid is RussellLuo/slidingwindow's and httprate's
//     (windows at multiples of W from the replay's epoch; every call moves
//     the window, and a stale instant is decided at the latest instant seen).

// twoCounter returns the two-counter model of layout for rule, or nil when
// the contender is compared with none.
func twoCounter(layout string, rule oracle.Rule) oracle.Model {
	switch layout {
	case Grid:
		return oracle.NewTwoCounter(oracle.StaleToSeen, oracle.AnchorGrid, rule)
	case Anchored:
		return oracle.NewTwoCounter(oracle.StaleToStart, oracle.AnchorIdle, rule)
	}
	return nil
}
