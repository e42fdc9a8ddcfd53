package httplimit_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/ring"
)

// perPattern builds a middleware keyed by PatternKey over one ring of 3 per
// hour per key, on an injected clock standing at t0, and records the key of
// every refusal.
func perPattern(t *testing.T, refused *[]string) *httplimit.Middleware {
	t.Helper()
	k, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(3, time.Hour) })
	require.NoError(t, err)
	m, err := httplimit.New(httplimit.Keyed(k, httplimit.Rule{Limit: 3, Window: time.Hour}),
		httplimit.Key(httplimit.PatternKey),
		httplimit.OnRefusal(func(r *http.Request, key string, d httplimit.Decision) { *refused = append(*refused, key) }))
	require.NoError(t, err)
	c := &clock{now: t0}
	httplimit.SetNow(m, c.Now)
	return m
}

// itemRoutes registers the two routes of these tests on a new ServeMux, each
// handler wrapped by wrap, and returns the mux. The handler writes the
// pattern the mux matched and counts its calls.
func itemRoutes(wrap func(http.Handler) http.Handler, calls *int) *http.ServeMux {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*calls++
		_, _ = io.WriteString(w, r.Pattern)
	})
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", wrap(h))
	mux.Handle("POST /items", wrap(h))
	return mux
}

func serve(h http.Handler, method, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w
}

// TestServeMuxPatternKey: the middleware wraps the handler of each Go 1.22
// pattern on a real ServeMux and keys by PatternKey. Every path a pattern
// matches shares that pattern's limit (HEAD included, which the mux serves
// with the GET pattern), another pattern has its own, and the requests the
// mux answers itself, 405 for a method no pattern of the path takes and 404
// for a path no pattern matches, get exactly what they get from the same
// mux without the middleware, before and after the limits are used up, and
// count nothing.
func TestServeMuxPatternKey(t *testing.T) {
	var refused []string
	m := perPattern(t, &refused)
	var calls, bareCalls int
	mux := itemRoutes(m.Handler, &calls)
	bare := itemRoutes(func(h http.Handler) http.Handler { return h }, &bareCalls)

	muxAnswers := func(when string) {
		for _, rq := range []struct {
			method, target string
			code           int
			allow          string
		}{
			{"POST", "/items/1", 405, "GET, HEAD"},
			{"DELETE", "/items/2", 405, "GET, HEAD"},
			{"GET", "/items", 405, "POST"},
			{"GET", "/other", 404, ""},
			{"GET", "/items/1/more", 404, ""},
		} {
			for range 4 { // more than the limit: none of them counts
				w, want := serve(mux, rq.method, rq.target), serve(bare, rq.method, rq.target)
				assert.Equal(t, rq.code, want.Code, "%s: %s %s without the middleware", when, rq.method, rq.target)
				assert.Equal(t, want.Code, w.Code, "%s: %s %s", when, rq.method, rq.target)
				assert.Equal(t, want.Body.String(), w.Body.String(), "%s: %s %s", when, rq.method, rq.target)
				assert.Equal(t, want.Header(), w.Header(), "%s: %s %s", when, rq.method, rq.target)
				assert.Equal(t, rq.allow, w.Header().Get("Allow"), "%s: %s %s", when, rq.method, rq.target)
				assert.Empty(t, w.Header().Values("RateLimit"), "%s: %s %s", when, rq.method, rq.target)
			}
		}
		assert.Zero(t, calls, "%s: a request the mux answers never reaches the handler", when)
	}
	muxAnswers("before any admission")

	const policy = `"3-per-1h";q=3;w=3600`
	// The paths of one pattern share its 3 per hour: all at t0, so the whole
	// limit is back at t0+1h, 3600 s on.
	for i, rq := range []struct{ method, target, pattern, rateLimit string }{
		{"GET", "/items/1", "GET /items/{id}", `"3-per-1h";r=2;t=3600`},
		{"GET", "/items/2", "GET /items/{id}", `"3-per-1h";r=1;t=3600`},
		{"GET", "/items/3", "GET /items/{id}", `"3-per-1h";r=0;t=3600`},
		{"POST", "/items", "POST /items", `"3-per-1h";r=2;t=3600`},
		{"POST", "/items", "POST /items", `"3-per-1h";r=1;t=3600`},
		{"POST", "/items", "POST /items", `"3-per-1h";r=0;t=3600`},
	} {
		w := serve(mux, rq.method, rq.target)
		require.Equal(t, 200, w.Code, "request %d: %s %s", i, rq.method, rq.target)
		assert.Equal(t, rq.pattern, w.Body.String(), "request %d: the pattern the handler saw", i)
		assert.Equal(t, []string{rq.rateLimit}, w.Header().Values("RateLimit"), "request %d", i)
		assert.Equal(t, []string{policy}, w.Header().Values("RateLimit-Policy"), "request %d", i)
	}
	assert.Equal(t, 6, calls)

	for _, rq := range []struct{ method, target, key string }{
		{"GET", "/items/4", "GET /items/{id}"},
		{"GET", "/items/1", "GET /items/{id}"},
		{"HEAD", "/items/5", "GET /items/{id}"},
		{"POST", "/items", "POST /items"},
	} {
		refused = nil
		w := serve(mux, rq.method, rq.target)
		assert.Equal(t, 429, w.Code, "%s %s", rq.method, rq.target)
		assert.Equal(t, []string{"3600"}, w.Header().Values("Retry-After"), "%s %s", rq.method, rq.target)
		assert.Equal(t, []string{`"3-per-1h";r=0;t=3600`}, w.Header().Values("RateLimit"), "%s %s", rq.method, rq.target)
		assert.Equal(t, []string{rq.key}, refused, "%s %s: the key is the pattern", rq.method, rq.target)
	}
	assert.Equal(t, 6, calls, "a refused request never reaches the handler")

	calls = 0
	muxAnswers("with both limits used up")
}

// TestServeMuxWrappedPatternKey: the documented misuse. The middleware wraps
// the whole mux, so it runs before the mux has matched a pattern:
// Request.Pattern is empty, PatternKey fails with an error wrapping ErrNoKey,
// and every request, routed or not, gets the key-error response (500 by
// default) without reaching the limiter or the mux.
func TestServeMuxWrappedPatternKey(t *testing.T) {
	decides := 0
	l := fixed{rules: oneRule, d: httplimit.Decision{Allowed: true}, calls: &decides}
	var calls int
	mux := itemRoutes(func(h http.Handler) http.Handler { return h }, &calls)

	m, err := httplimit.New(l, httplimit.Key(httplimit.PatternKey))
	require.NoError(t, err)
	h := m.Handler(mux)
	for _, rq := range []struct{ method, target string }{
		{"GET", "/items/1"},  // 200 from the mux alone
		{"POST", "/items"},   // 200
		{"POST", "/items/1"}, // 405
		{"GET", "/other"},    // 404
	} {
		w := serve(h, rq.method, rq.target)
		assert.Equal(t, 500, w.Code, "%s %s", rq.method, rq.target)
		assert.Equal(t, "rate limit key unavailable\n", w.Body.String(), "%s %s", rq.method, rq.target)
		assert.Equal(t, http.Header{
			"Content-Type":           {"text/plain; charset=utf-8"},
			"X-Content-Type-Options": {"nosniff"},
		}, w.Header(), "%s %s: no Retry-After, no RateLimit fields", rq.method, rq.target)
	}
	assert.Zero(t, decides, "the key error never reaches the limiter")
	assert.Zero(t, calls, "nor the mux's handlers")

	// KeyErrorHandler sees the error: it wraps ErrNoKey.
	var keyErr error
	m, err = httplimit.New(l, httplimit.Key(httplimit.PatternKey),
		httplimit.KeyErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			keyErr = err
			w.WriteHeader(http.StatusBadRequest)
		}))
	require.NoError(t, err)
	w := serve(m.Handler(mux), "GET", "/items/1")
	assert.Equal(t, 400, w.Code)
	assert.True(t, errors.Is(keyErr, httplimit.ErrNoKey), "error %v", keyErr)
	assert.Zero(t, decides)
	assert.Zero(t, calls)
}
