package replay

import (
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
)

// A limiter of 2 per second that admits a third call in the window, then
// refuses one that fits, is caught on its own history: one admission over the
// log, one refusal under it, and the log deciding alone admits what it should.
func TestJudge(t *testing.T) {
	s := int64(time.Second)
	j := NewJudge(nil, oracle.R(2, time.Second))
	for _, d := range []struct {
		at int64
		ok bool
	}{{0, true}, {1, true}, {2, true}, {s + 3, false}, {s + 3, false}} {
		j.Decided(d.at, 1, d.ok, d.at)
	}
	// At s+3 the window (3, s+3] holds nothing the limiter admitted, so
	// both refusals were under the log; the log alone admits 0, 1, then
	// refuses 2 and admits two at s+3.
	want := Score{Admitted: 3, OracleAdmitted: 4, LogOver: 1, LogUnder: 2}
	if j.Score != want {
		t.Fatalf("score %+v, want %+v", j.Score, want)
	}
	if got := oracle.MaxInWindow(j.Stamps(), s); got != 3 {
		t.Fatalf("largest count in a window %d, want 3", got)
	}
}
