package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/ring"
)

// TestOutsideKeyGoneWhileFull: through the middleware (fields on refusal
// only, so a decision asks for no quota and a refusal is then decided again
// through DecideStatus), a
// request from a client at its
// limit, while another goroutine deletes the client's key, fills the one-key
// store with another client and gives the room back, is admitted, refused
// over the limit (429 with Retry-After) or refused as Full (503); never
// refused as a cost that can never fit (429 without Retry-After), for both
// keyed adapters.
func TestOutsideKeyGoneWhileFull(t *testing.T) {
	const client, other = "192.0.2.1", "192.0.2.2"
	kl, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(1, time.Hour) }, keyed.MaxKeys(1))
	require.NoError(t, err)
	kw, err := keyed.NewWindow[string](1, time.Hour, keyed.MaxKeys(1))
	require.NoError(t, err)
	type store interface {
		AllowN(key string, now time.Time, n int) bool
		Delete(key string)
	}
	for name, c := range map[string]struct {
		s store
		l httplimit.Limiter
	}{
		"Keyed":       {kl, httplimit.Keyed(kl, httplimit.Rule{Limit: 1, Window: time.Hour})},
		"KeyedWindow": {kw, httplimit.KeyedWindow(kw)},
	} {
		m, err := httplimit.New(c.l, httplimit.SendFields(httplimit.FieldsOnRefusal))
		require.NoError(t, err)
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			for !stop.Load() {
				c.s.Delete(client)
				c.s.AllowN(other, time.Now(), 1)
				c.s.Delete(other)
				c.s.AllowN(client, time.Now(), 1)
			}
		})
		never := 0
		for range 20_000 {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, request(client+":1234"))
			if w.Code == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
				never++
			}
		}
		stop.Store(true)
		wg.Wait()
		require.Zero(t, never, "%s: 429s without Retry-After (never fits)", name)
	}
}
