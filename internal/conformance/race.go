//go:build race

package conformance

// raceEnabled is true when the race detector is on: allocation counts are
// meaningless then.
const raceEnabled = true
