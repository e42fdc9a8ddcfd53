package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// allocs checks that AllowN allocates nothing, admitting and refusing.
func (s *suite) allocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	const limit = 1000 // more than the runs below, so every call is admitted
	l := s.newLimiter(t, limit, time.Hour)
	now := time.Now()
	admitted := 0
	a := testing.AllocsPerRun(100, func() {
		if l.AllowN(now, 1) {
			admitted++
		}
	})
	require.Equal(t, 101, admitted, "AllowN(now, 1) calls admitted on the admit path")
	require.Equal(t, 0.0, a, "allocations per AllowN(now, 1), admit path")
	for i := 0; i < limit && l.AllowN(now, 1); i++ {
	}
	a = testing.AllocsPerRun(100, func() {
		if l.AllowN(now, 1) {
			admitted++
		}
	})
	require.Equal(t, 0.0, a, "allocations per AllowN(now, 1), deny path")
	require.Equal(t, 0, l.TokensAt(now), "TokensAt(now) after the deny path")
}
