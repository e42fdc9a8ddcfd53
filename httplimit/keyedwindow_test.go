package httplimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/window"
)

func mustKeyedWindow(t *testing.T, limit int, w time.Duration) *keyed.Window[string] {
	t.Helper()
	k, err := keyed.NewWindow[string](limit, w)
	require.NoError(t, err)
	return k
}

// TestKeyedWindow: one two-counter window per client, through KeyedWindow:
// the policy is the Window's, a refusal carries the Retry-After and fields
// the window's own ReadyAt gives, and each client has its own limit.
func TestKeyedWindow(t *testing.T) {
	h, c := newMW(t, httplimit.KeyedWindow(mustKeyedWindow(t, 2, 10*time.Second)))
	require.Equal(t, 200, get(h, c, 0).Code)
	require.Equal(t, 200, get(h, c, time.Second).Code)
	w := get(h, c, 2*time.Second)
	require.Equal(t, 429, w.Code)
	assert.Equal(t, []sfItem{{"2-per-10s", map[string]int64{"q": 2, "w": 10}}}, parseList(t, w.Header().Values("RateLimit-Policy")))
	// The window started at t0 with 2 admitted: at t0+10s they weigh 2, and
	// one more fits once a half of that window has passed, at t0+15s: 13 s
	// from t0+2s. The whole limit is back at t0+20s: 18 s.
	assert.Equal(t, []string{"13"}, w.Header().Values("Retry-After"))
	assert.Equal(t, []sfItem{{"2-per-10s", map[string]int64{"r": 0, "t": 18}}}, parseList(t, w.Header().Values("RateLimit")))
	require.Equal(t, 429, get(h, c, 15*time.Second-time.Millisecond).Code)
	require.Equal(t, 200, get(h, c, 15*time.Second).Code)

	// Another client has its own window: refused now for the first one, the
	// same instant admits it.
	require.Equal(t, 429, get(h, c, 15*time.Second).Code)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, request("198.51.100.9:4000"))
	assert.Equal(t, 200, w.Code)
}

// TestKeyedWindowMatchesKeyed: KeyedWindow decides from one snapshot per
// request (keyed.Window.DecideStatus); Keyed over a keyed.Limiter of
// window.Limiters with the same rule decides through the key's
// window.Limiter.DecideStatus. With one goroutine the two must agree on
// every field of every decision: admitted or why not, RetryAt, Remaining
// and Reset, through idle gaps, stale instants (clamped by the sweeps'
// floor), costs out of range and a store that is often full.
func TestKeyedWindowMatchesKeyed(t *testing.T) {
	const limit, win, maxKeys = 4, time.Second, 20
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 3))
	kw, err := keyed.NewWindow[string](limit, win, keyed.MaxKeys(maxKeys))
	require.NoError(t, err)
	kl, err := keyed.New[string](func() (*window.Limiter, error) { return window.New(limit, win) }, keyed.MaxKeys(maxKeys))
	require.NoError(t, err)
	got, want := httplimit.KeyedWindow(kw), httplimit.Keyed(kl, httplimit.Rule{Limit: limit, Window: win})
	require.Equal(t, want.Rules(), got.Rules())
	reasons := map[httplimit.Reason]int{}
	now := time.Unix(1_700_000_000, 0)
	for i := range 30_000 {
		if r.IntN(200) == 0 {
			now = now.Add(time.Duration(r.Int64N(int64(3 * win))))
		} else {
			now = now.Add(time.Duration(r.Int64N(int64(win / (4 * limit)))))
		}
		at := now
		if r.IntN(10) == 0 {
			at = now.Add(-time.Duration(r.Int64N(int64(win))))
		}
		key := fmt.Sprintf("client-%d", r.IntN(3*maxKeys))
		cost := 1 + r.IntN(limit)
		if r.IntN(20) == 0 {
			cost = r.IntN(limit+3) - 1
		}
		// Automatic sweeps (when full) are spaced by the real time a sweep
		// took, which differs between the two stores: sweeping both at
		// every step leaves them nothing to remove, so the stores stay equal.
		require.Equal(t, kl.Sweep(now), kw.Sweep(now))
		g, gerr := got.Decide(context.Background(), key, at, cost)
		w, werr := want.Decide(context.Background(), key, at, cost)
		require.NoError(t, gerr)
		require.NoError(t, werr)
		// Instants by wall clock: the two stores' monotonic readings differ.
		g.RetryAt, w.RetryAt = g.RetryAt.Round(0), w.RetryAt.Round(0)
		require.Equal(t, w, g, "seed %d, request %d: %s at %v, cost %d", seed, i, key, at, cost)
		reasons[g.Reason]++
	}
	for _, why := range []httplimit.Reason{httplimit.Admitted, httplimit.OverLimit, httplimit.Never, httplimit.Full} {
		assert.NotZero(t, reasons[why], "no decision with reason %v: the run did not exercise it", why)
	}
}
