package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/window"
)

// OnRefusal is called once for every refusal, whatever its reason (over the
// limit, a cost that never fits, a full store), and for nothing else: not
// for admissions, key errors or limiter failures.
func TestOnRefusalEveryReason(t *testing.T) {
	k, err := keyed.New[string](func() (*window.Limiter, error) { return window.New(2, time.Hour) }, keyed.MaxKeys(1))
	require.NoError(t, err)
	var got []httplimit.Reason
	cost := 1
	h, c := newMW(t, httplimit.Keyed(k, httplimit.Rule{Limit: 2, Window: time.Hour}),
		httplimit.Key(httplimit.HeaderKey("X-Client")),
		httplimit.Cost(func(*http.Request) int { return cost }),
		httplimit.OnRefusal(func(r *http.Request, key string, d httplimit.Decision) { got = append(got, d.Reason) }))
	for _, step := range []struct {
		client string
		cost   int
		code   int
	}{
		{"a", 1, 200},
		{"a", 1, 200},
		{"a", 1, 429}, // over the limit
		{"a", 3, 429}, // never fits
		{"b", 1, 503}, // the store holds a, which is not idle
		{"", 1, 500},  // no key
	} {
		cost = step.cost
		var hdr []string
		if step.client != "" {
			hdr = []string{"X-Client", step.client}
		}
		require.Equal(t, step.code, get(h, c, 0, hdr...).Code, "client %q cost %d", step.client, step.cost)
	}
	assert.Equal(t, []httplimit.Reason{httplimit.OverLimit, httplimit.Never, httplimit.Full}, got)
}

// X-RateLimit-Reset in seconds is rounded up, as t is: a reset 0.7 s away
// is 1, not 0 ("now").
func TestFieldsLegacyResetSecondsRoundsUp(t *testing.T) {
	h, c := newMW(t, httplimit.Ring(mustRing(t, 1, time.Second)), httplimit.Legacy(httplimit.ResetSeconds))
	require.Equal(t, 200, get(h, c, 0).Code)
	w := get(h, c, 300*time.Millisecond)
	require.Equal(t, 429, w.Code)
	assert.Equal(t, "0", w.Header().Get("X-RateLimit-Remaining"))
	assert.Equal(t, "1", w.Header().Get("X-RateLimit-Reset"), "reset at t0+1s, 0.7 s away, rounded up")
	assert.Equal(t, `"1-per-1s";r=0;t=1`, w.Header().Get("RateLimit"))
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
}

// A Limiter of the user's may report a negative Remaining: r is never
// negative on the wire, with one rule or several.
func TestFieldsNegativeRemaining(t *testing.T) {
	two := []httplimit.Rule{{Limit: 10, Window: time.Second}, {Limit: 100, Window: time.Minute}}
	for _, rules := range [][]httplimit.Rule{two[:1], two} {
		d := httplimit.Decision{Reason: httplimit.OverLimit, RetryAt: t0.Add(time.Second), NumQuota: len(rules)}
		for i := range rules {
			d.Quota[i] = httplimit.Quota{Remaining: -3, Reset: time.Second}
		}
		h, c := newMW(t, fixed{rules: rules, d: d}, httplimit.Legacy(httplimit.ResetSeconds))
		w := get(h, c, 0)
		require.Equal(t, 429, w.Code)
		items := parseList(t, w.Header().Values("RateLimit"))
		require.Len(t, items, len(rules))
		for _, it := range items {
			assert.Equal(t, int64(0), it.params["r"], "%d rules: %v", len(rules), w.Header().Values("RateLimit"))
		}
		assert.Equal(t, "0", w.Header().Get("X-RateLimit-Remaining"))
	}
}

// A Limiter of the user's reporting a negative NumQuota reports no quota: no
// RateLimit field (an empty one is not a valid list of one item per rule),
// and the hooks see NumQuota 0.
func TestNegativeNumQuotaSendsNoField(t *testing.T) {
	two := []httplimit.Rule{{Limit: 10, Window: time.Second}, {Limit: 100, Window: time.Minute}}
	for _, rules := range [][]httplimit.Rule{two[:1], two} {
		for _, allowed := range []bool{true, false} {
			d := httplimit.Decision{Allowed: allowed, NumQuota: -1}
			if !allowed {
				d.Reason, d.RetryAt = httplimit.OverLimit, t0.Add(time.Second)
			}
			seen := -2
			h, c := newMW(t, fixed{rules: rules, d: d},
				httplimit.OnRefusal(func(r *http.Request, key string, d httplimit.Decision) { seen = d.NumQuota }))
			w := get(h, c, 0)
			_, has := w.Header()["Ratelimit"]
			assert.False(t, has, "%d rules, allowed %v: RateLimit %q", len(rules), allowed, w.Header().Values("RateLimit"))
			if !allowed {
				assert.Zero(t, seen, "%d rules: NumQuota the hook sees", len(rules))
			}
		}
	}
}

// Keyed over limiters that cannot report each rule's quota announces, for
// each rule, a t after which the key's whole limit is back: a client that
// waits it is admitted for the whole limit. Over two-counter windows that
// can take up to twice the window (the previous window's count still
// weighs), so a bound of one window would send it back too early.
func TestKeyedSeveralRulesResetIsAnUpperBound(t *testing.T) {
	const limit = 5
	for _, start := range []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond, 900 * time.Millisecond, 999 * time.Millisecond} {
		k, err := keyed.New[string](func() (*window.Limiter, error) { return window.New(limit, time.Second) })
		require.NoError(t, err)
		h, c := newMW(t, httplimit.Keyed(k, httplimit.Rule{Limit: limit, Window: time.Second}, httplimit.Rule{Limit: 50, Window: time.Minute}))
		var w = get(h, c, start)
		for range limit - 1 {
			w = get(h, c, start)
			require.Equal(t, 200, w.Code)
		}
		items := parseList(t, w.Header().Values("RateLimit"))
		require.Len(t, items, 2)
		wait := time.Duration(items[0].params["t"]) * time.Second
		require.Positive(t, wait, "start %v", start)
		for i := range limit {
			assert.Equal(t, 200, get(h, c, start+wait).Code, "start %v: request %d of %d after waiting t=%v", start, i+1, limit, wait)
		}
	}
}

// A panic in user code (the key function, the cost function, OnRefusal, the
// wrapped handler) reaches the caller as is, and the middleware holds
// nothing: the next request is decided as usual.
func TestUserPanicsLeaveNothingHeld(t *testing.T) {
	k, err := keyed.New[string](func() (*window.Limiter, error) { return window.New(1, time.Hour) })
	require.NoError(t, err)
	l, err := httplimit.All(httplimit.Keyed(k, httplimit.Rule{Limit: 1, Window: time.Hour}),
		httplimit.Window(mustWindow(t, 100, time.Hour)))
	require.NoError(t, err)
	where := ""
	boom := func(at string) {
		if where == at {
			panic("boom in " + at)
		}
	}
	m, err := httplimit.New(l,
		httplimit.Key(func(r *http.Request) (string, error) { boom("key"); return r.Header.Get("X-Client"), nil }),
		httplimit.Cost(func(*http.Request) int { boom("cost"); return 1 }),
		httplimit.OnRefusal(func(*http.Request, string, httplimit.Decision) { boom("on refusal") }))
	require.NoError(t, err)
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { boom("handler") }))
	serve := func(client string) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, request("192.0.2.1:1234", "X-Client", client))
		return w.Code
	}
	for i, at := range []string{"key", "cost", "handler", "on refusal"} {
		client := string(rune('a' + i))
		where = at
		if at == "on refusal" {
			where = ""
			require.Equal(t, 200, serve(client))
			where = at
		}
		require.PanicsWithValue(t, "boom in "+at, func() { serve(client) }, at)
		where = ""
		done := make(chan int, 1)
		go func() { done <- serve("after " + at) }()
		select {
		case code := <-done:
			assert.Equal(t, 200, code, "after a panic in the %s", at)
		case <-time.After(10 * time.Second):
			t.Fatalf("after a panic in the %s: the next request did not finish", at)
		}
	}
}
