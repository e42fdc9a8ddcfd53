package httplimit_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
)

// fixed is a Limiter that returns a fixed answer: a limiter on a store that
// fails, or any decision a test needs.
type fixed struct {
	rules []httplimit.Rule
	d     httplimit.Decision
	err   error
	calls *int
}

func (f fixed) Rules() []httplimit.Rule { return f.rules }

func (f fixed) Decide(context.Context, string, time.Time, int) (httplimit.Decision, error) {
	if f.calls != nil {
		*f.calls++
	}
	return f.d, f.err
}

var oneRule = []httplimit.Rule{{Limit: 10, Window: time.Second}}

func TestFailurePolicy(t *testing.T) {
	storeDown := errors.New("store unreachable")
	l := fixed{rules: oneRule, err: storeDown}

	h, c := newMW(t, l) // the default: fail closed
	w := get(h, c, 0)
	assert.Equal(t, 503, w.Code)
	assert.Equal(t, "rate limiter unavailable\n", w.Body.String())

	for _, tt := range []struct {
		policy   httplimit.Failure
		wantCode int
	}{
		{httplimit.FailClosed, 503},
		{httplimit.FailOpen, 200},
	} {
		var seen []error
		h, c := newMW(t, l, httplimit.OnLimiterError(tt.policy, func(r *http.Request, err error) { seen = append(seen, err) }))
		w := get(h, c, 0)
		assert.Equal(t, tt.wantCode, w.Code, "policy %d", tt.policy)
		assert.Empty(t, w.Header().Get("RateLimit"), "policy %d: no fields for an undecided request", tt.policy)
		assert.Empty(t, w.Header().Get("Retry-After"), "policy %d", tt.policy)
		assert.Equal(t, []error{storeDown}, seen, "policy %d", tt.policy)
	}
}

// A keyed limiter whose factory fails is a limiter failure, not a refusal
// with a bogus Retry-After.
func TestFactoryFailure(t *testing.T) {
	boom := errors.New("factory down")
	failing := false // keyed.New tries the factory: fail only after
	k, err := keyed.New[string](func() (*ring.Limiter, error) {
		if failing {
			return nil, boom
		}
		return ring.New(5, time.Second)
	})
	require.NoError(t, err)
	failing = true
	var seen error
	h, c := newMW(t, httplimit.Keyed(k, httplimit.Rule{Limit: 5, Window: time.Second}),
		httplimit.OnLimiterError(httplimit.FailClosed, func(r *http.Request, err error) { seen = err }))
	w := get(h, c, 0)
	assert.Equal(t, 503, w.Code)
	assert.Empty(t, w.Header().Get("Retry-After"))
	assert.ErrorIs(t, seen, boom)
}

func TestKeyError(t *testing.T) {
	calls := 0
	l := fixed{rules: oneRule, d: httplimit.Decision{Allowed: true}, calls: &calls}
	h, c := newMW(t, l, httplimit.Key(httplimit.HeaderKey("X-Api-Key")))
	w := get(h, c, 0)
	assert.Equal(t, 500, w.Code)
	assert.Zero(t, calls, "the limiter is not asked without a key")

	h, c = newMW(t, l, httplimit.Key(httplimit.HeaderKey("X-Api-Key")),
		httplimit.KeyErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			assert.ErrorIs(t, err, httplimit.ErrNoKey)
			http.Error(w, "API key required", http.StatusUnauthorized)
		}))
	w = get(h, c, 0)
	assert.Equal(t, 401, w.Code)
	assert.Equal(t, "API key required\n", w.Body.String())
	w = get(h, c, 0, "X-Api-Key", "k1")
	assert.Equal(t, 200, w.Code)
	assert.Equal(t, 1, calls)
}

func TestExempt(t *testing.T) {
	l := mustRing(t, 1, time.Hour)
	h, c := newMW(t, httplimit.Ring(l), httplimit.Exempt(func(r *http.Request) bool {
		return r.Header.Get("X-Health") != ""
	}))
	for range 3 {
		w := get(h, c, 0, "X-Health", "1")
		assert.Equal(t, 200, w.Code)
		assert.Empty(t, w.Header().Get("RateLimit"))
	}
	assert.Equal(t, 1, l.TokensAt(t0), "exempt requests count nothing")
	assert.Equal(t, 200, get(h, c, 0).Code)
	assert.Equal(t, 429, get(h, c, 0).Code)
}

func TestCost(t *testing.T) {
	l := mustRing(t, 10, time.Hour)
	cost := 0
	h, c := newMW(t, httplimit.Ring(l), httplimit.Cost(func(*http.Request) int { return cost }))

	w := get(h, c, 0)
	assert.Equal(t, 200, w.Code, "cost 0 passes")
	assert.Equal(t, 10, l.TokensAt(t0), "cost 0 counts nothing")

	for _, never := range []int{11, -1} {
		cost = never
		w = get(h, c, 0)
		assert.Equal(t, 429, w.Code, "cost %d", never)
		assert.Empty(t, w.Header().Get("Retry-After"), "cost %d can never fit: no Retry-After", never)
		assert.Contains(t, w.Body.String(), "can never be admitted", "cost %d", never)
		assert.Equal(t, 10, l.TokensAt(t0), "cost %d counts nothing", never)
	}

	cost = 7
	assert.Equal(t, 200, get(h, c, 0).Code)
	w = get(h, c, time.Minute)
	assert.Equal(t, 429, w.Code)
	assert.Equal(t, "3540", w.Header().Get("Retry-After"), "7 fit again when the first 7 leave the window")
	assert.Equal(t, `"10-per-1h";r=3;t=3540`, w.Header().Get("RateLimit"))
}

func TestFullIsRefused(t *testing.T) {
	k, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(5, time.Hour) }, keyed.MaxKeys(1))
	require.NoError(t, err)
	var refusals []httplimit.Reason
	h, c := newMW(t, httplimit.Keyed(k, httplimit.Rule{Limit: 5, Window: time.Hour}),
		httplimit.Key(httplimit.HeaderKey("X-Api-Key")),
		httplimit.OnRefusal(func(r *http.Request, key string, d httplimit.Decision) {
			refusals = append(refusals, d.Reason)
		}))
	assert.Equal(t, 200, get(h, c, 0, "X-Api-Key", "a").Code)
	w := get(h, c, 0, "X-Api-Key", "b")
	assert.Equal(t, 503, w.Code)
	assert.Empty(t, w.Header().Get("Retry-After"), "when room appears is not known")
	// The policy only: the key has no quota yet, and r=0;t=0 would tell
	// the client to come back at once, into the full store.
	assert.Empty(t, w.Header().Get("RateLimit"), "a Full refusal has no quota to report")
	assert.Equal(t, `"5-per-1h";q=5;w=3600`, w.Header().Get("RateLimit-Policy"))
	assert.Equal(t, []httplimit.Reason{httplimit.Full}, refusals)
}

func TestRefusalHooks(t *testing.T) {
	type refusal struct {
		key    string
		reason httplimit.Reason
	}
	var got []refusal
	h, c := newMW(t, httplimit.Ring(mustRing(t, 1, time.Second)),
		httplimit.OnRefusal(func(r *http.Request, key string, d httplimit.Decision) {
			got = append(got, refusal{key, d.Reason})
		}),
		httplimit.RefusalHandler(func(w http.ResponseWriter, r *http.Request, d httplimit.Decision) {
			assert.Equal(t, "1", w.Header().Get("Retry-After"), "set before the handler runs")
			assert.NotEmpty(t, w.Header().Get("RateLimit"), "set before the handler runs")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"title":"slow down"}`))
		}))
	assert.Equal(t, 200, get(h, c, 0).Code)
	w := get(h, c, 0)
	assert.Equal(t, 429, w.Code)
	assert.Equal(t, "application/problem+json", w.Header().Get("Content-Type"))
	assert.Equal(t, `{"title":"slow down"}`, w.Body.String())
	assert.Equal(t, []refusal{{"192.0.2.1", httplimit.OverLimit}}, got)
}

func TestDefaultRefusalBody(t *testing.T) {
	h, c := newMW(t, httplimit.Ring(mustRing(t, 1, time.Second)))
	get(h, c, 0)
	w := get(h, c, 0)
	assert.Equal(t, 429, w.Code)
	assert.Equal(t, "too many requests\n", w.Body.String())
	assert.Equal(t, "text/plain; charset=utf-8", w.Header().Get("Content-Type"))
}

// A refusal whose RetryAt is not after now (a race in the limiter) still
// tells the client to wait one second rather than retry at once; a RetryAt
// far ahead is sent in full.
func TestRetryAfterBounds(t *testing.T) {
	for _, tt := range []struct {
		retryAt time.Time
		want    string
	}{
		{t0, "1"},
		{t0.Add(-time.Hour), "1"},
		{t0.Add(time.Nanosecond), "1"},
		{t0.Add(time.Second), "1"},
		{t0.Add(time.Second + 1), "2"},
		{t0.Add(1000 * time.Hour), "3600000"},
	} {
		d := httplimit.Decision{Reason: httplimit.OverLimit, RetryAt: tt.retryAt, NumQuota: 1}
		h, c := newMW(t, fixed{rules: oneRule, d: d})
		w := get(h, c, 0)
		assert.Equal(t, 429, w.Code)
		assert.Equal(t, tt.want, w.Header().Get("Retry-After"), "RetryAt %v", tt.retryAt.Sub(t0))
	}
}

// reusable is a ResponseWriter that allocates nothing per request.
type reusable struct {
	h    http.Header
	code int
}

func (w *reusable) Header() http.Header         { return w.h }
func (w *reusable) Write(b []byte) (int, error) { return len(b), nil }
func (w *reusable) WriteHeader(code int)        { w.code = code }

// WriteString is what net/http's ResponseWriter offers too.
func (w *reusable) WriteString(s string) (int, error) { return len(s), nil }

// serve sends r through h on w, its header map cleared first, and returns
// the status code written (0 if none).
func (w *reusable) serve(h http.Handler, r *http.Request) int {
	clear(w.h)
	w.code = 0
	h.ServeHTTP(w, r)
	return w.code
}

func TestAllocations(t *testing.T) {
	k, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(1_000_000, time.Hour) })
	require.NoError(t, err)
	for _, tt := range []struct {
		name   string
		l      httplimit.Limiter
		fields httplimit.Fields
		max    float64
	}{
		{"ring, fields off", httplimit.Ring(mustRing(t, 1_000_000, time.Hour)), httplimit.FieldsOff, 0},
		// Each admission leaves a new remaining count: a new RateLimit
		// value, made with its slice in one allocation.
		{"ring, fields on", httplimit.Ring(mustRing(t, 1_000_000, time.Hour)), httplimit.FieldsAlways, 1},
		{"keyed, fields on", httplimit.Keyed(k, httplimit.Rule{Limit: 1_000_000, Window: time.Hour}), httplimit.FieldsAlways, 1},
		{"keyed, fields off", httplimit.Keyed(k, httplimit.Rule{Limit: 1_000_000, Window: time.Hour}), httplimit.FieldsOff, 0},
		{"keyed window, fields on", httplimit.KeyedWindow(mustKeyedWindow(t, 1_000_000, time.Hour)), httplimit.FieldsAlways, 1},
		{"keyed window, fields off", httplimit.KeyedWindow(mustKeyedWindow(t, 1_000_000, time.Hour)), httplimit.FieldsOff, 0},
		{"window, fields on", httplimit.Window(mustWindow(t, 1_000_000, time.Hour)), httplimit.FieldsAlways, 1},
		{"window, fields off", httplimit.Window(mustWindow(t, 1_000_000, time.Hour)), httplimit.FieldsOff, 0},
		// Retry-After values allocate nothing after their first use, nor
		// does a RateLimit value that repeats an earlier response's.
		{"refusals, fields off", httplimit.Ring(mustRing(t, 1, time.Hour)), httplimit.FieldsOff, 0},
		{"refusals, fields on", httplimit.Ring(mustRing(t, 1, time.Hour)), httplimit.FieldsAlways, 0},
		{"keyed window refusals, fields on", httplimit.KeyedWindow(mustKeyedWindow(t, 1, time.Hour)), httplimit.FieldsAlways, 0},
		// A multi limiter's quota (RemainingAt, ResetsAt) is read into
		// buffers on the stack: refusals allocate nothing, with one rule
		// and the fields on (a repeated value) or with two and them off.
		{"multi, fields off", httplimit.Multi(mustMulti(t, multi.Rule{Limit: 1_000_000, Window: time.Hour})), httplimit.FieldsOff, 0},
		{"multi refusals, fields on", httplimit.Multi(mustMulti(t, multi.Rule{Limit: 1, Window: time.Hour})), httplimit.FieldsAlways, 0},
		{"multi refusals, two rules, fields off", httplimit.Multi(mustMulti(t, multi.Rule{Limit: 1, Window: time.Hour},
			multi.Rule{Limit: 5, Window: 24 * time.Hour})), httplimit.FieldsOff, 0},
		{"approx refusals, two rules, fields off", httplimit.Approx(mustApprox(t, multi.Rule{Limit: 1, Window: time.Hour},
			multi.Rule{Limit: 5, Window: 24 * time.Hour})), httplimit.FieldsOff, 0},
		// With two rules and the fields on, a repeated RateLimit value of
		// two items is remembered as one of one item is. Keyed over a multi
		// limiter reads every rule's quota into a pooled buffer
		// (keyed.Limiter.DecideRules).
		{"multi refusals, two rules, fields on", httplimit.Multi(mustMulti(t, multi.Rule{Limit: 1, Window: time.Hour},
			multi.Rule{Limit: 5, Window: 24 * time.Hour})), httplimit.FieldsAlways, 0},
		{"keyed multi refusals, two rules, fields on", httplimit.Keyed(mustKeyedMulti(t, multi.Rule{Limit: 1, Window: time.Hour},
			multi.Rule{Limit: 5, Window: 24 * time.Hour}), httplimit.Rule{Limit: 1, Window: time.Hour}, httplimit.Rule{Limit: 5, Window: 24 * time.Hour}), httplimit.FieldsAlways, 0},
	} {
		m, err := httplimit.New(tt.l, httplimit.SendFields(tt.fields))
		require.NoError(t, err)
		h := m.Handler(ok200)
		r := request("192.0.2.1:1234")
		w := &reusable{h: http.Header{}}
		h.ServeHTTP(w, r)
		allocs := testing.AllocsPerRun(200, func() { h.ServeHTTP(w, r) })
		assert.LessOrEqual(t, allocs, tt.max, tt.name)
	}
}

// TestKeyedRulesAllocateNothing: a decision of Keyed over a multi limiter
// with two rules, with every rule's quota (one DecideRules call of the key's
// limiter, into a pooled buffer), allocates nothing for a present key,
// admitting or refusing.
func TestKeyedRulesAllocateNothing(t *testing.T) {
	l := httplimit.Keyed(mustKeyedMulti(t, multi.Rule{Limit: 3, Window: time.Second}, multi.Rule{Limit: 10, Window: time.Minute}),
		httplimit.Rule{Limit: 3, Window: time.Second}, httplimit.Rule{Limit: 10, Window: time.Minute})
	ctx := context.Background()
	now := time.Now()
	d, err := l.Decide(ctx, "client", now, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, 2, d.NumQuota)
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(100 * time.Millisecond)
		if _, err := l.Decide(ctx, "client", now, 1); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// With the fields off, an admission skips the quota, but the hooks still see
// it on every refusal.
func TestQuotaOnRefusalWithFieldsOff(t *testing.T) {
	var got []httplimit.Decision
	h, c := newMW(t, httplimit.Ring(mustRing(t, 2, time.Second)), httplimit.SendFields(httplimit.FieldsOff),
		httplimit.OnRefusal(func(r *http.Request, key string, d httplimit.Decision) { got = append(got, d) }))
	assert.Equal(t, 200, get(h, c, 0).Code)
	assert.Equal(t, 200, get(h, c, 0).Code)
	w := get(h, c, 0)
	assert.Equal(t, 429, w.Code)
	assert.Empty(t, w.Header().Get("RateLimit"))
	require.Len(t, got, 1)
	assert.Equal(t, 1, got[0].NumQuota)
	assert.Equal(t, httplimit.Quota{Remaining: 0, Reset: time.Second}, got[0].Quota[0])
}

// A Limiter of the user's may report any NumQuota: more entries than rules
// (even more than MaxRules), or a negative count. The middleware sends one
// item per rule at most, and never panics.
func TestNumQuotaOutOfRange(t *testing.T) {
	two := []httplimit.Rule{{Limit: 10, Window: time.Second}, {Limit: 100, Window: time.Minute}}
	for _, n := range []int{-1, 0, 1, 2, 3, httplimit.MaxRules, httplimit.MaxRules + 1, math.MaxInt} {
		for _, allowed := range []bool{true, false} {
			d := httplimit.Decision{Allowed: allowed, NumQuota: n}
			if !allowed {
				d.Reason, d.RetryAt = httplimit.OverLimit, t0.Add(time.Second)
			}
			for i := range d.Quota {
				d.Quota[i] = httplimit.Quota{Remaining: i, Reset: time.Second}
			}
			h, c := newMW(t, fixed{rules: two, d: d}, httplimit.Legacy(httplimit.ResetSeconds))
			var w *httptest.ResponseRecorder
			require.NotPanics(t, func() { w = get(h, c, 0) }, "NumQuota %d", n)
			items := parseList(t, w.Header().Values("RateLimit"))
			assert.Len(t, items, min(max(n, 0), len(two)), "NumQuota %d, allowed %v", n, allowed)
		}
	}
}

func mustKeyedMulti(t *testing.T, rules ...multi.Rule) *keyed.Limiter[string, *multi.Limiter] {
	t.Helper()
	k, err := keyed.New[string](func() (*multi.Limiter, error) { return multi.New(rules...) })
	require.NoError(t, err)
	return k
}

func mustMulti(t *testing.T, rules ...multi.Rule) *multi.Limiter {
	t.Helper()
	l, err := multi.New(rules...)
	require.NoError(t, err)
	return l
}

func mustApprox(t *testing.T, rules ...multi.Rule) *multi.Approx {
	t.Helper()
	l, err := multi.NewApprox(rules...)
	require.NoError(t, err)
	return l
}

// TestFactoryRecovers: a factory that fails once makes that request fail
// (503 under FailClosed), and the next requests create their keys as usual,
// alone or inside All, where a dry check comes first: a store that once
// failed to create a key is not full, and its new keys must still be
// created.
func TestFactoryRecovers(t *testing.T) {
	for _, inAll := range []bool{false, true} {
		calls := 0
		k, err := keyed.New[string](func() (*ring.Limiter, error) {
			calls++
			if calls == 3 { // the first request's: keyed.New made two
				return nil, errors.New("factory down")
			}
			return ring.New(5, time.Second)
		})
		require.NoError(t, err)
		var l httplimit.Limiter = httplimit.Keyed(k, httplimit.Rule{Limit: 5, Window: time.Second})
		if inAll {
			l, err = httplimit.All(l, httplimit.Ring(mustRing(t, 100, time.Second)))
			require.NoError(t, err)
		}
		h, c := newMW(t, l, httplimit.Key(httplimit.HeaderKey("X-Api-Key")))
		assert.Equal(t, 503, get(h, c, 0, "X-Api-Key", "a").Code, "all %v: the failed creation", inAll)
		for _, key := range []string{"b", "a", "c"} {
			w := get(h, c, 0, "X-Api-Key", key)
			assert.Equal(t, 200, w.Code, "all %v: key %q after the factory recovered: %s", inAll, key, w.Body.String())
		}
	}
}

// TestFullStoreSweeps: a full store refuses a new key (503 Full) while its
// keys are busy; once they are idle, the next new key makes the store sweep
// them and is admitted, alone or inside All, where a dry check comes first
// (a dry check does not sweep, so it cannot tell). Inside All, the refusals
// of the full store cost the other member nothing.
func TestFullStoreSweeps(t *testing.T) {
	for _, inAll := range []bool{false, true} {
		k, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(5, time.Second) }, keyed.MaxKeys(2))
		require.NoError(t, err)
		var l httplimit.Limiter = httplimit.Keyed(k, httplimit.Rule{Limit: 5, Window: time.Second})
		if inAll {
			// A global limit of 4 per minute, given first: the keyed
			// member's refusals must cost it nothing.
			l, err = httplimit.All(httplimit.Ring(mustRing(t, 4, time.Minute)), l)
			require.NoError(t, err)
		}
		h, c := newMW(t, l, httplimit.Key(httplimit.HeaderKey("X-Api-Key")))
		for _, key := range []string{"a", "b"} {
			assert.Equal(t, 200, get(h, c, 0, "X-Api-Key", key).Code, "all %v: key %q", inAll, key)
		}
		for range 3 {
			w := get(h, c, 0, "X-Api-Key", "c")
			assert.Equal(t, 503, w.Code, "all %v: a third key while two are busy", inAll)
			assert.Equal(t, "rate limiter is full\n", w.Body.String())
		}
		w := get(h, c, 10*time.Second, "X-Api-Key", "c")
		assert.Equal(t, 200, w.Code, "all %v: a third key once the two are idle: %s", inAll, w.Body.String())
		assert.Equal(t, 200, get(h, c, 10*time.Second, "X-Api-Key", "c").Code, "all %v: the fourth admission", inAll)
		if inAll {
			assert.Equal(t, 429, get(h, c, 10*time.Second, "X-Api-Key", "c").Code, "the global limit's fifth")
		}
	}
}

// cancelAware is a Limiter that honours its context, as a remote store's
// does (the redis module returns the context's error under every failure
// policy): one admission in all.
type cancelAware struct{ used int }

func (l *cancelAware) Rules() []httplimit.Rule {
	return []httplimit.Rule{{Limit: 1, Window: time.Hour}}
}

func (l *cancelAware) Decide(ctx context.Context, _ string, now time.Time, cost int) (httplimit.Decision, error) {
	if err := ctx.Err(); err != nil {
		return httplimit.Decision{}, err
	}
	d := httplimit.Decision{NumQuota: 1}
	if l.used+cost <= 1 {
		l.used += cost
		d.Allowed = true
	} else {
		d.Reason, d.RetryAt = httplimit.OverLimit, now.Add(time.Hour)
	}
	return d, nil
}

// TestRequestEndedBeforeDecision: a request whose own context ends before
// the limiter decides (the client went away) is refused under either
// failure policy, and is not reported as a failure of the limiter: under
// FailOpen, passing it on let a client that cancels its requests have the
// handler run without being counted.
func TestRequestEndedBeforeDecision(t *testing.T) {
	for _, policy := range []httplimit.Failure{httplimit.FailOpen, httplimit.FailClosed} {
		l := &cancelAware{}
		var errs []error
		m, err := httplimit.New(l, httplimit.OnLimiterError(policy, func(_ *http.Request, err error) { errs = append(errs, err) }))
		require.NoError(t, err)
		ran := 0
		h := m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran++ }))
		codes := map[int]int{}
		for i := range 20 {
			ctx, cancel := context.WithCancel(context.Background())
			if i > 0 {
				cancel()
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("POST", "/", nil).WithContext(ctx))
			codes[w.Code]++
			cancel()
		}
		assert.Equal(t, 1, ran, "policy %d: the handler ran for cancelled requests", policy)
		assert.Equal(t, map[int]int{200: 1, 503: 19}, codes, "policy %d", policy)
		assert.Empty(t, errs, "policy %d: a client's cancellation reported as a limiter error", policy)
	}
}

// TestLegacyAllocations: the legacy fields' values of 16384 and more (an
// epoch second, a limit or a remaining count in the tens of thousands, a
// Retry-After of hours) allocate nothing once seen, as smaller ones do.
func TestLegacyAllocations(t *testing.T) {
	for _, tt := range []struct {
		name string
		l    httplimit.Limiter
		opts []httplimit.Option
		max  float64
	}{
		{"refusals, 1 per day (Retry-After 86400)", httplimit.Ring(mustRing(t, 1, 24*time.Hour)), nil, 0},
		{"refusals, ResetUnix", httplimit.Ring(mustRing(t, 1, time.Minute)), []httplimit.Option{httplimit.Legacy(httplimit.ResetUnix)}, 0},
		// Each admission leaves a new remaining count: the new RateLimit
		// value (one allocation) and the legacy Remaining (two, the value
		// and its string); the limit comes from the cache.
		{"admissions, limit 100000, ResetSeconds", httplimit.Ring(mustRing(t, 100_000, time.Hour)), []httplimit.Option{httplimit.Legacy(httplimit.ResetSeconds)}, 3},
	} {
		m, err := httplimit.New(tt.l, tt.opts...)
		require.NoError(t, err)
		now := time.Unix(1_800_000_000, 0)
		httplimit.SetNow(m, func() time.Time { return now })
		h := m.Handler(ok200)
		r := request("192.0.2.1:1234")
		w := &reusable{h: http.Header{}}
		h.ServeHTTP(w, r)
		h.ServeHTTP(w, r)
		allocs := testing.AllocsPerRun(200, func() { h.ServeHTTP(w, r) })
		assert.LessOrEqual(t, allocs, tt.max, tt.name)
	}
}

// TestPolicyNamesNone: PolicyNames with no names is an error of New, as a
// wrong count is, not the default names in silence.
func TestPolicyNamesNone(t *testing.T) {
	_, err := httplimit.New(httplimit.Ring(mustRing(t, 5, time.Second)), httplimit.PolicyNames())
	require.ErrorContains(t, err, "PolicyNames: got 0 names, want one per rule (1)")
	_, err = httplimit.New(httplimit.Ring(mustRing(t, 5, time.Second)), httplimit.PolicyNames("five"))
	require.NoError(t, err)
}
