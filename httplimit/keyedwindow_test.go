package httplimit_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
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
