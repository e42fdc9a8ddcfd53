package redis_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/redis"
)

// TestHTTP: the Redis limiter behind httplimit's middleware, on the server's
// clock: two requests per hour per client pass, the third gets 429 with a
// Retry-After; Decide maps every edge to httplimit's reasons; inside
// httplimit.All a refusal by another member costs nothing in Redis; a limiter with
// more rules than httplimit supports is refused; a Redis that is down is the
// middleware's limiter error (503) under FailClosed.
func TestHTTP(t *testing.T) {
	s, _, c := standalone(t)
	l := mustLog(t, c, redis.Options{Timeout: 200 * time.Millisecond}, redis.Rule{Limit: 2, Window: time.Hour}, redis.Rule{Limit: 10, Window: 24 * time.Hour})
	h, err := redis.NewHTTP(l, true)
	require.NoError(t, err)
	require.Equal(t, []httplimit.Rule{{Limit: 2, Window: time.Hour}, {Limit: 10, Window: 24 * time.Hour}}, h.Rules())
	m, err := httplimit.New(h)
	require.NoError(t, err)
	handler := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	get := func(addr string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w
	}
	for i, want := range []int{204, 204, 429} {
		w := get("192.0.2.1:1000")
		require.Equal(t, want, w.Code, "request %d", i)
		if want == 429 {
			require.NotEmpty(t, w.Header().Get("Retry-After"))
		}
	}
	require.Equal(t, 204, get("192.0.2.2:1000").Code, "another client has its own limit")

	hc, err := redis.NewHTTP(mustLog(t, c, redis.Options{Prefix: "decide"}, redis.Rule{Limit: 3, Window: time.Second}), false)
	require.NoError(t, err)
	now := at(epoch)
	d, err := hc.Decide(t.Context(), "k", now, 2)
	require.NoError(t, err)
	require.Equal(t, httplimit.Admitted, d.Reason)
	require.Equal(t, 1, d.NumQuota)
	require.Equal(t, httplimit.Quota{Remaining: 1, Reset: time.Second}, d.Quota[0])
	d, err = hc.Decide(t.Context(), "k", now.Add(time.Millisecond), 2)
	require.NoError(t, err)
	require.Equal(t, httplimit.OverLimit, d.Reason)
	require.Equal(t, now.Add(time.Second), d.RetryAt)
	for _, cost := range []int{-1, 4} {
		d, err = hc.Decide(t.Context(), "k", now, cost)
		require.NoError(t, err)
		require.Equal(t, httplimit.Never, d.Reason, "cost %d", cost)
		require.True(t, d.RetryAt.IsZero())
	}

	// Inside httplimit.All, a request refused by one member consumes
	// nothing in another: with two Redis members (say, per client and
	// global), All asks both with Check before either records.
	perClient := mustLog(t, c, redis.Options{Prefix: "all-client"}, redis.Rule{Limit: 5, Window: time.Hour})
	global := mustLog(t, c, redis.Options{Prefix: "all-global"}, redis.Rule{Limit: 1, Window: time.Hour})
	hp, err := redis.NewHTTP(perClient, false)
	require.NoError(t, err)
	hg, err := redis.NewHTTP(global, false)
	require.NoError(t, err)
	all, err := httplimit.All(hp, hg)
	require.NoError(t, err)
	for i, want := range []bool{true, false, false} {
		d, err := all.Decide(t.Context(), "k", now, 1)
		require.NoError(t, err)
		require.Equal(t, want, d.Allowed, "request %d", i)
	}
	chk, err := perClient.CheckN(t.Context(), "k", now, 1)
	require.NoError(t, err)
	require.Equal(t, []int{4}, chk.Remaining, "the refused requests cost nothing in the other member")

	many := make([]redis.Rule, httplimit.MaxRules+1)
	for i := range many {
		many[i] = redis.Rule{Limit: 1, Window: time.Second}
	}
	_, err = redis.NewHTTP(mustLog(t, c, redis.Options{}, many...), false)
	require.ErrorContains(t, err, "httplimit supports at most 8")

	s.Stop()
	require.Equal(t, http.StatusServiceUnavailable, get("192.0.2.3:1000").Code)
}

// TestHTTPServerClockRetryAt: on the server's clock, a refusal's RetryAt is
// the middleware's instant plus the wait the server measured, so that the
// Retry-After the middleware derives from it is the window whatever the skew
// between this instance's clock and the server's (a RetryAt on the server's
// clock was off by the skew: 11 minutes for an instance 10 minutes behind).
func TestHTTPServerClockRetryAt(t *testing.T) {
	_, _, c := standalone(t)
	for _, exact := range []bool{true, false} {
		mk := mustWindow
		if exact {
			mk = mustLog
		}
		l := mk(t, c, redis.Options{Prefix: fmt.Sprint("skew-", exact)}, redis.Rule{Limit: 1, Window: time.Minute})
		h, err := redis.NewHTTP(l, true)
		require.NoError(t, err)
		for _, skew := range []time.Duration{-10 * time.Minute, 0, 10 * time.Minute} {
			key := "k" + skew.String()
			d, err := h.Decide(t.Context(), key, time.Now().Add(skew), 1)
			require.NoError(t, err)
			require.True(t, d.Allowed)
			local := time.Now().Add(skew) // this instance's clock
			d, err = h.Decide(t.Context(), key, local, 1)
			require.NoError(t, err)
			require.Equal(t, httplimit.OverLimit, d.Reason)
			wait := d.RetryAt.Sub(local)
			max := time.Minute
			if !exact {
				max = 2 * time.Minute
			}
			require.True(t, wait > 0 && wait <= max, "exact %v, skew %v: RetryAt is %v after the middleware's now", exact, skew, wait)
		}
	}
}

// TestHTTPResetBound: a quota's Reset is an upper bound on when the rule has
// its whole limit back: asked again Reset later, with nothing admitted
// meanwhile, every kind answers the full limit and a Reset of 0. The window's
// previous count weighs on the estimate for a second window, so its Reset
// after an admission is two windows.
func TestHTTPResetBound(t *testing.T) {
	_, _, c := standalone(t)
	rule := redis.Rule{Limit: 2, Window: time.Second}
	mk := map[string]func() (*redis.Limiter, error){
		"log": func() (*redis.Limiter, error) {
			return redis.NewLog(c, testOptions(redis.Options{Prefix: "reset-log"}), rule)
		},
		"window": func() (*redis.Limiter, error) {
			return redis.NewWindow(c, testOptions(redis.Options{Prefix: "reset-win"}), rule)
		},
		"buckets": func() (*redis.Limiter, error) {
			r := rule
			r.Precision = rule.Window / 4
			return redis.NewBuckets(c, testOptions(redis.Options{Prefix: "reset-bkt"}), r)
		},
	}
	for kind, f := range mk {
		l, err := f()
		require.NoError(t, err)
		h, err := redis.NewHTTP(l, false)
		require.NoError(t, err)
		t0 := at(epoch).Add(300 * time.Millisecond)
		d, err := h.Decide(t.Context(), "k", t0, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed, kind)
		reset := d.Quota[0].Reset
		require.Positive(t, reset, kind)
		d, err = h.Check(t.Context(), "k", t0.Add(reset), 0)
		require.NoError(t, err)
		require.Equal(t, httplimit.Quota{Remaining: rule.Limit}, d.Quota[0], "%s: asked again %v later", kind, reset)
	}
}
