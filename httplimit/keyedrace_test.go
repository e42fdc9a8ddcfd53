package httplimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
)

// gone is a keyed store whose key is removed, and its room taken, between
// a refusal and the ReadyAt that follows it: ReadyAt finds no limiter and the
// store no room (false), and a second decision fails with ErrFull.
type gone struct{ decisions int }

func (g *gone) Decide(string, time.Time, int) (bool, error) {
	if g.decisions++; g.decisions == 1 {
		return false, nil
	}
	return false, keyed.ErrFull
}
func (g *gone) TokensAt(string, time.Time) int                   { return 0 }
func (g *gone) ReadyAt(string, time.Time, int) (time.Time, bool) { return time.Time{}, false }

// TestKeyGoneWhileFull: that request is refused as Full (503), as a new key
// on a full store is, not as Never (429 without Retry-After, "the cost can
// never fit"), after deciding once more.
func TestKeyGoneWhileFull(t *testing.T) {
	g := &gone{}
	l := httplimit.PerKeyOf(g, httplimit.Rule{Limit: 5, Window: time.Minute})
	d, err := l.Decide(context.Background(), "k", time.Now(), 1)
	require.NoError(t, err)
	require.Equal(t, httplimit.Full, d.Reason)
	require.Equal(t, 2, g.decisions)
}
