package httplimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// clock is an injected clock for the middleware.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

var ok200 = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })

// newMW builds a middleware with an injected clock starting at t0.
func newMW(t *testing.T, l httplimit.Limiter, opts ...httplimit.Option) (http.Handler, *clock) {
	t.Helper()
	m, err := httplimit.New(l, opts...)
	require.NoError(t, err)
	c := &clock{now: t0}
	httplimit.SetNow(m, c.Now)
	return m.Handler(ok200), c
}

func get(h http.Handler, at *clock, offset time.Duration, header ...string) *httptest.ResponseRecorder {
	at.now = t0.Add(offset)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, request("192.0.2.1:1234", header...))
	return w
}

func mustRing(t *testing.T, limit int, w time.Duration) *ring.Limiter {
	t.Helper()
	l, err := ring.New(limit, w)
	require.NoError(t, err)
	return l
}

func mustWindow(t *testing.T, limit int, w time.Duration) *window.Limiter {
	t.Helper()
	l, err := window.New(limit, w)
	require.NoError(t, err)
	return l
}

// sfItem is one parsed list member: its String value and integer parameters.
type sfItem struct {
	name   string
	params map[string]int64
}

// parseList parses a field with a real RFC 9651 parser.
func parseList(t *testing.T, values []string) []sfItem {
	t.Helper()
	l, err := httpsfv.UnmarshalList(values)
	require.NoError(t, err, "field %q", values)
	var out []sfItem
	for _, m := range l {
		it, ok := m.(httpsfv.Item)
		require.True(t, ok, "member %v is not an item", m)
		name, ok := it.Value.(string)
		require.True(t, ok, "item value %#v is not a String (a quoted policy name)", it.Value)
		ps := map[string]int64{}
		for _, k := range it.Params.Names() {
			v, _ := it.Params.Get(k)
			n, ok := v.(int64)
			require.True(t, ok, "parameter %s=%#v is not an Integer", k, v)
			ps[k] = n
		}
		out = append(out, sfItem{name, ps})
	}
	return out
}

func TestFieldsOneRule(t *testing.T) {
	h, c := newMW(t, httplimit.Ring(mustRing(t, 3, 10*time.Second)))
	for _, at := range []time.Duration{0, 2 * time.Second, 4 * time.Second} {
		w := get(h, c, at)
		require.Equal(t, 200, w.Code)
	}
	w := get(h, c, 4*time.Second)
	require.Equal(t, 429, w.Code)
	w = get(h, c, 5500*time.Millisecond)
	require.Equal(t, 429, w.Code)

	// Exact bytes.
	assert.Equal(t, []string{`"3-per-10s";q=3;w=10`}, w.Header().Values("RateLimit-Policy"))
	// Nothing fits until the first admission (t0) leaves the window at t0+10s:
	// 4.5 s, rounded up. The whole quota is back when the last one (t0+4s)
	// leaves it at t0+14s: 8.5 s, rounded up.
	assert.Equal(t, []string{`"3-per-10s";r=0;t=9`}, w.Header().Values("RateLimit"))
	assert.Equal(t, []string{"5"}, w.Header().Values("Retry-After"))
	assert.Empty(t, w.Header().Values("X-RateLimit-Limit"), "legacy fields are opt-in")

	// Parsed back.
	assert.Equal(t, []sfItem{{"3-per-10s", map[string]int64{"q": 3, "w": 10}}}, parseList(t, w.Header().Values("RateLimit-Policy")))
	assert.Equal(t, []sfItem{{"3-per-10s", map[string]int64{"r": 0, "t": 9}}}, parseList(t, w.Header().Values("RateLimit")))

	// An admitted response carries them too (FieldsAlways is the default).
	w = get(h, c, 10*time.Second)
	require.Equal(t, 200, w.Code)
	assert.Equal(t, []sfItem{{"3-per-10s", map[string]int64{"r": 0, "t": 10}}}, parseList(t, w.Header().Values("RateLimit")))
	assert.Empty(t, w.Header().Values("Retry-After"))
}

func TestFieldsSeveralRules(t *testing.T) {
	m, err := multi.New(multi.Rule{Limit: 2, Window: time.Second}, multi.Rule{Limit: 5, Window: time.Minute})
	require.NoError(t, err)
	h, c := newMW(t, httplimit.Multi(m), httplimit.PolicyNames("burst", "minute"))
	require.Equal(t, 200, get(h, c, 0).Code)
	w := get(h, c, 100*time.Millisecond)
	require.Equal(t, 200, w.Code)
	assert.Equal(t, []string{`"burst";q=2;w=1, "minute";q=5;w=60`}, w.Header().Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"burst";r=0;t=1, "minute";r=3;t=60`}, w.Header().Values("RateLimit"))

	w = get(h, c, 200*time.Millisecond)
	require.Equal(t, 429, w.Code)
	assert.Equal(t, []string{"1"}, w.Header().Values("Retry-After"), "0.8 s rounded up")
	assert.Equal(t, []sfItem{
		{"burst", map[string]int64{"q": 2, "w": 1}},
		{"minute", map[string]int64{"q": 5, "w": 60}},
	}, parseList(t, w.Header().Values("RateLimit-Policy")))
	assert.Equal(t, []sfItem{
		{"burst", map[string]int64{"r": 0, "t": 1}},
		{"minute", map[string]int64{"r": 3, "t": 60}},
	}, parseList(t, w.Header().Values("RateLimit")))
}

// Keyed over multi limiters with two rules sends each rule's own quota, as
// Multi does (not the smallest remaining and twice the window), whether the
// fields go on every response or only on refusals.
func TestFieldsSeveralRulesKeyed(t *testing.T) {
	for _, fields := range []httplimit.Fields{httplimit.FieldsAlways, httplimit.FieldsOnRefusal} {
		k, err := keyed.New[string](func() (*multi.Limiter, error) {
			return multi.New(multi.Rule{Limit: 2, Window: time.Second}, multi.Rule{Limit: 5, Window: time.Minute})
		})
		require.NoError(t, err)
		l := httplimit.Keyed(k, httplimit.Rule{Limit: 2, Window: time.Second}, httplimit.Rule{Limit: 5, Window: time.Minute})
		h, c := newMW(t, l, httplimit.PolicyNames("burst", "minute"), httplimit.SendFields(fields))
		require.Equal(t, 200, get(h, c, 0).Code)
		w := get(h, c, 100*time.Millisecond)
		require.Equal(t, 200, w.Code)
		if fields == httplimit.FieldsAlways {
			assert.Equal(t, []string{`"burst";r=0;t=1, "minute";r=3;t=60`}, w.Header().Values("RateLimit"))
		} else {
			assert.Empty(t, w.Header().Values("RateLimit"))
		}
		w = get(h, c, 200*time.Millisecond)
		require.Equal(t, 429, w.Code)
		assert.Equal(t, []string{"1"}, w.Header().Values("Retry-After"), "0.8 s rounded up")
		assert.Equal(t, []string{`"burst";r=0;t=1, "minute";r=3;t=60`}, w.Header().Values("RateLimit"), "fields %v", fields)
	}
}

// From the caller's side, with two rules: every response's RateLimit field,
// parsed back, is what a twin keyed.Limiter over multi limiters, fed the same
// calls at the same instants, reports rule by rule (DecideRules). Eighty
// clients over 12,000 requests make about 1,000 distinct sets of pairs, four
// times the middleware's table of 256 remembered values of several items, so
// values are shared, replaced and made again, and sets that share an entry
// and their first pair are met (a table matching on the first pair alone
// fails this test).
func TestFieldsSeveralRulesMatchTwin(t *testing.T) {
	rules := []multi.Rule{{Limit: 10, Window: 3 * time.Second}, {Limit: 200, Window: 10 * time.Minute}}
	mk := func() *keyed.Limiter[string, *multi.Limiter] {
		k, err := keyed.New[string](func() (*multi.Limiter, error) { return multi.New(rules...) })
		require.NoError(t, err)
		return k
	}
	h, c := newMW(t, httplimit.Keyed(mk(), httplimit.Rule{Limit: 10, Window: 3 * time.Second}, httplimit.Rule{Limit: 200, Window: 10 * time.Minute}),
		httplimit.PolicyNames("short", "long"))
	twin := mk()
	seen := map[[4]int64]bool{}
	var each []keyed.Status
	replayClients(t, h, c, 5, 80, 12000, func(i int, key string, rec *httptest.ResponseRecorder) {
		var s keyed.Status
		var err error
		s, each, err = twin.DecideRules(key, c.now, 1, each[:0])
		require.NoError(t, err)
		require.Len(t, each, 2)
		want := []sfItem{
			{"short", map[string]int64{"r": int64(each[0].Remaining), "t": resetSeconds(each[0].ResetAt, c.now)}},
			{"long", map[string]int64{"r": int64(each[1].Remaining), "t": resetSeconds(each[1].ResetAt, c.now)}},
		}
		require.Equal(t, want, parseList(t, rec.Header().Values("RateLimit")), "request %d, client %s at %v", i, key, c.now.Sub(t0))
		require.Equal(t, s.Admitted, rec.Code == http.StatusOK, "request %d", i)
		seen[[4]int64{want[0].params["r"], want[0].params["t"], want[1].params["r"], want[1].params["t"]}] = true
	})
	require.Greater(t, len(seen), 3*256, "the sets of pairs must outnumber the table's entries several times")
}

// Multi's Reset is exact per rule: when every admission the rule counts has
// left its window, not the rule's whole window.
func TestMultiResetExact(t *testing.T) {
	m, err := multi.New(multi.Rule{Limit: 2, Window: time.Second}, multi.Rule{Limit: 5, Window: time.Minute})
	require.NoError(t, err)
	l := httplimit.Multi(m)
	ctx := context.Background()
	for _, dt := range []time.Duration{0, 100 * time.Millisecond} {
		d, err := l.Decide(ctx, "", t0.Add(dt), 1)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	d, err := l.(httplimit.Checker).Check(ctx, "", t0.Add(30*time.Second), 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, 2, d.NumQuota)
	assert.Equal(t, httplimit.Quota{Remaining: 2}, d.Quota[0], "the burst rule counts nothing 30 s later")
	assert.Equal(t, httplimit.Quota{Remaining: 3, Reset: 30*time.Second + 100*time.Millisecond}, d.Quota[1],
		"the minute rule is whole again 60 s after its latest admission")
}

// Long policy names make a RateLimit value past the sizes packed in one
// allocation: the bytes sent are the same, item by item.
func TestFieldsLongNames(t *testing.T) {
	m, err := multi.New(multi.Rule{Limit: 2, Window: time.Second}, multi.Rule{Limit: 5, Window: time.Minute}, multi.Rule{Limit: 9, Window: time.Hour})
	require.NoError(t, err)
	names := []string{strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)}
	h, c := newMW(t, httplimit.Multi(m), httplimit.PolicyNames(names...))
	w := get(h, c, 0)
	require.Equal(t, 200, w.Code)
	want := `"` + names[0] + `";r=1;t=1, "` + names[1] + `";r=4;t=60, "` + names[2] + `";r=8;t=3600`
	require.Greater(t, len(want), 112)
	assert.Equal(t, []string{want}, w.Header().Values("RateLimit"))
	assert.Equal(t, []sfItem{
		{names[0], map[string]int64{"r": 1, "t": 1}},
		{names[1], map[string]int64{"r": 4, "t": 60}},
		{names[2], map[string]int64{"r": 8, "t": 3600}},
	}, parseList(t, w.Header().Values("RateLimit")))
}

// A window of microseconds gets a default name in ASCII ("us", not
// Duration.String's "µs"): a structured field's string is printable ASCII.
func TestFieldsMicrosecondName(t *testing.T) {
	h, c := newMW(t, httplimit.Ring(mustRing(t, 10, 250*time.Microsecond)))
	w := get(h, c, 0)
	assert.Equal(t, []string{`"10-per-250us";q=10;w=1`}, w.Header().Values("RateLimit-Policy"))
	for _, v := range append(w.Header().Values("RateLimit-Policy"), w.Header().Values("RateLimit")...) {
		for i := range len(v) {
			assert.True(t, v[i] >= 0x20 && v[i] < 0x7f, "byte %#x of %q", v[i], v)
		}
	}
}

// A window under a second is announced as w=1 with the same q: a client
// that sends at most q per second is never refused.
func TestFieldsSubSecondWindow(t *testing.T) {
	h, c := newMW(t, httplimit.Ring(mustRing(t, 5, 250*time.Millisecond)))
	w := get(h, c, 0)
	assert.Equal(t, []string{`"5-per-250ms";q=5;w=1`}, w.Header().Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"5-per-250ms";r=4;t=1`}, w.Header().Values("RateLimit"))
	for range 4 {
		get(h, c, 0)
	}
	w = get(h, c, 0)
	require.Equal(t, 429, w.Code)
	assert.Equal(t, []string{"1"}, w.Header().Values("Retry-After"), "250 ms rounded up")
}

func TestFieldsModes(t *testing.T) {
	for _, tt := range []struct {
		mode             httplimit.Fields
		onAdmit, onRefus bool
	}{
		{httplimit.FieldsAlways, true, true},
		{httplimit.FieldsOnRefusal, false, true},
		{httplimit.FieldsOff, false, false},
	} {
		h, c := newMW(t, httplimit.Ring(mustRing(t, 1, time.Second)), httplimit.SendFields(tt.mode))
		w := get(h, c, 0)
		require.Equal(t, 200, w.Code)
		assert.Equal(t, tt.onAdmit, w.Header().Get("RateLimit") != "", "mode %d admitted", tt.mode)
		assert.Equal(t, tt.onAdmit, w.Header().Get("RateLimit-Policy") != "", "mode %d admitted", tt.mode)
		w = get(h, c, 0)
		require.Equal(t, 429, w.Code)
		assert.Equal(t, tt.onRefus, w.Header().Get("RateLimit") != "", "mode %d refused", tt.mode)
		assert.Equal(t, "1", w.Header().Get("Retry-After"), "Retry-After is sent in every mode")
	}
}

func TestFieldsLegacy(t *testing.T) {
	m, err := multi.New(multi.Rule{Limit: 2, Window: time.Second}, multi.Rule{Limit: 5, Window: time.Minute})
	require.NoError(t, err)
	h, c := newMW(t, httplimit.Multi(m), httplimit.Legacy(httplimit.ResetSeconds))
	w := get(h, c, 0)
	// burst has 1 left, minute 4: the legacy fields describe burst.
	assert.Equal(t, "2", w.Header().Get("X-RateLimit-Limit"))
	assert.Equal(t, "1", w.Header().Get("X-RateLimit-Remaining"))
	assert.Equal(t, "1", w.Header().Get("X-RateLimit-Reset"))

	m2, err := multi.New(multi.Rule{Limit: 2, Window: time.Second}, multi.Rule{Limit: 5, Window: time.Minute})
	require.NoError(t, err)
	h, c = newMW(t, httplimit.Multi(m2), httplimit.Legacy(httplimit.ResetUnix))
	w = get(h, c, 300*time.Millisecond)
	assert.Equal(t, strconv.FormatInt(t0.Add(2*time.Second).Unix(), 10), w.Header().Get("X-RateLimit-Reset"),
		"reset at t0+1.3s, rounded up to a whole second")
}

func TestNewRejects(t *testing.T) {
	r := httplimit.Ring(mustRing(t, 1, time.Second))
	for _, tt := range []struct {
		name string
		l    httplimit.Limiter
		opts []httplimit.Option
		want string
	}{
		{"nil limiter", nil, nil, "limiter is nil"},
		{"nil ring", httplimit.Ring(nil), nil, "no rules"},
		{"nil multi", httplimit.Multi(nil), nil, "no rules"},
		{"nil keyed", httplimit.Keyed[*ring.Limiter](nil, httplimit.Rule{Limit: 1, Window: 1}), nil, "no rules"},
		{"nil keyed window", httplimit.KeyedWindow(nil), nil, "no rules"},
		{"too many rules", fixed{rules: make([]httplimit.Rule, 9)}, nil, "9 rules"},
		{"bad rule", fixed{rules: []httplimit.Rule{{Limit: 0, Window: time.Second}}}, nil, "rule 0"},
		{"names count", r, []httplimit.Option{httplimit.PolicyNames("a", "b")}, "got 2 names, want one per rule (1)"},
		{"name with quote", r, []httplimit.Option{httplimit.PolicyNames(`a"b`)}, "printable"},
		{"empty name", r, []httplimit.Option{httplimit.PolicyNames("")}, "printable"},
		{"nil key", r, []httplimit.Option{httplimit.Key(nil)}, "key function is nil"},
		{"bad fields", r, []httplimit.Option{httplimit.SendFields(9)}, "SendFields"},
		{"bad legacy", r, []httplimit.Option{httplimit.Legacy(9)}, "Legacy"},
		{"bad failure", r, []httplimit.Option{httplimit.OnLimiterError(9, nil)}, "OnLimiterError"},
	} {
		m, err := httplimit.New(tt.l, tt.opts...)
		assert.Nil(t, m, tt.name)
		assert.ErrorContains(t, err, tt.want, tt.name)
	}
	m2, err := multi.New(multi.Rule{Limit: 1, Window: time.Second})
	require.NoError(t, err)
	_, err = httplimit.New(r, httplimit.PolicyNames("x"), nil) // a nil option is skipped
	require.NoError(t, err)
	_, err = httplimit.New(httplimit.Multi(m2), httplimit.PolicyNames("x"))
	require.NoError(t, err)
}

// headerValue packs short values with their slice in one allocation: at
// every size boundary of that packing, the value is the bytes given, a copy
// of them, in a slice of length and capacity 1.
func TestHeaderValueSizes(t *testing.T) {
	for _, n := range []int{0, 1, 31, 32, 33, 47, 48, 49, 111, 112, 113, 300} {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(i%26)
		}
		want := string(b)
		v := httplimit.HeaderValue(b)
		for i := range b {
			b[i] = '!' // the value must not share the caller's buffer
		}
		require.Len(t, v, 1, "size %d", n)
		assert.Equal(t, 1, cap(v), "size %d: capacity", n)
		assert.Equal(t, want, v[0], "size %d", n)
		// Header.Add must copy the slice, not write after the value.
		h := http.Header{"X": v}
		h.Add("X", "second")
		assert.Equal(t, []string{want}, v, "size %d: after Add", n)
	}
}

// The one-rule RateLimit values are remembered in a table of a few hundred
// entries: every value must be the one made for its pair, whatever pairs
// shared its entry before (pairs at random from several goroutines at once,
// run with -race, and pairs that differ in one number only), and a pair
// that repeats shares its value and allocates nothing.
func TestFieldsValueCache(t *testing.T) {
	m, err := httplimit.New(httplimit.Window(mustWindow(t, 100, time.Minute)))
	require.NoError(t, err)
	want := func(rem int, reset int64) string {
		return `"100-per-1m";r=` + strconv.Itoa(rem) + ";t=" + strconv.FormatInt(reset, 10)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 20_000 {
				// 101 * 61 pairs, ten times the entries: every entry is
				// shared by several pairs.
				rem, reset := rng.IntN(101), int64(rng.IntN(61))
				v := httplimit.RateLimitValue(m, rem, reset)
				if len(v) != 1 || cap(v) != 1 || v[0] != want(rem, reset) {
					t.Errorf("value for r=%d t=%d: %q (cap %d)", rem, reset, v, cap(v))
					return
				}
			}
		})
	}
	wg.Wait()
	// Pairs that differ in one number only: with more of them than entries,
	// some share an entry, which must not answer for the other.
	for range 2 {
		for x := range 2000 {
			for _, p := range [][2]int{{7, x}, {x, 7}} {
				if v := httplimit.RateLimitValue(m, p[0], int64(p[1])); v[0] != want(p[0], int64(p[1])) {
					t.Fatalf("value for r=%d t=%d: %q", p[0], p[1], v)
				}
			}
		}
	}

	first := httplimit.RateLimitValue(m, 7, 42)
	allocs := testing.AllocsPerRun(100, func() {
		if v := httplimit.RateLimitValue(m, 7, 42); &v[0] != &first[0] {
			t.Fatal("a repeated pair made a new value")
		}
	})
	assert.Zero(t, allocs)
	// Pairs beyond what an int formats in a few bytes, and a name that
	// makes the value too long for an entry, are still exact.
	assert.Equal(t, []string{want(1<<30, 1<<40)}, httplimit.RateLimitValue(m, 1<<30, 1<<40))
	long := strings.Repeat("n", 64)
	ml, err := httplimit.New(httplimit.Window(mustWindow(t, 100, time.Minute)), httplimit.PolicyNames(long))
	require.NoError(t, err)
	assert.Equal(t, []string{`"` + long + `";r=5;t=6`}, httplimit.RateLimitValue(ml, 5, 6))
}

// The RateLimit values of decisions of several rules are remembered too, by
// every rule's pair: every value must be the one made for its pairs, whatever
// shared its entry before (several goroutines at once, run with -race, and
// pairs that differ in one number of one rule), a repeated decision shares
// its value and allocates nothing, and a value too long for an entry is
// still exact.
func TestFieldsRulesValueCache(t *testing.T) {
	m2, err := multi.New(multi.Rule{Limit: 100, Window: time.Minute}, multi.Rule{Limit: 1000, Window: time.Hour})
	require.NoError(t, err)
	m, err := httplimit.New(httplimit.Multi(m2), httplimit.PolicyNames("minute", "hour"))
	require.NoError(t, err)
	decision := func(r1 int, t1 int64, r2 int, t2 int64) *httplimit.Decision {
		d := &httplimit.Decision{NumQuota: 2}
		d.Quota[0] = httplimit.Quota{Remaining: r1, Reset: time.Duration(t1) * time.Second}
		d.Quota[1] = httplimit.Quota{Remaining: r2, Reset: time.Duration(t2) * time.Second}
		return d
	}
	want := func(r1 int, t1 int64, r2 int, t2 int64) string {
		return fmt.Sprintf(`"minute";r=%d;t=%d, "hour";r=%d;t=%d`, r1, t1, r2, t2)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range 20_000 {
				r1, t1, r2, t2 := rng.IntN(11), int64(rng.IntN(7)), rng.IntN(11), int64(rng.IntN(7))
				v := httplimit.RateLimitRulesValue(m, decision(r1, t1, r2, t2))
				if len(v) != 1 || cap(v) != 1 || v[0] != want(r1, t1, r2, t2) {
					t.Errorf("value for %d %d %d %d: %q (cap %d)", r1, t1, r2, t2, v, cap(v))
					return
				}
			}
		})
	}
	wg.Wait()
	for range 2 {
		for x := range 600 {
			for _, p := range [][4]int{{x, 1, 2, 3}, {1, x, 2, 3}, {1, 2, x, 3}, {1, 2, 3, x}} {
				if v := httplimit.RateLimitRulesValue(m, decision(p[0], int64(p[1]), p[2], int64(p[3]))); v[0] != want(p[0], int64(p[1]), p[2], int64(p[3])) {
					t.Fatalf("value for %v: %q", p, v)
				}
			}
		}
	}
	d := decision(0, 42, 7, 3600)
	first := httplimit.RateLimitRulesValue(m, d)
	allocs := testing.AllocsPerRun(100, func() {
		if v := httplimit.RateLimitRulesValue(m, d); &v[0] != &first[0] {
			t.Fatal("a repeated decision made a new value")
		}
	})
	assert.Zero(t, allocs)
	long := strings.Repeat("n", 63) // two items of 80 bytes and more: too long for an entry
	m3, err := multi.New(multi.Rule{Limit: 100, Window: time.Minute}, multi.Rule{Limit: 1000, Window: time.Hour}, multi.Rule{Limit: 5000, Window: 24 * time.Hour})
	require.NoError(t, err)
	ml, err := httplimit.New(httplimit.Multi(m3), httplimit.PolicyNames(long+"1", long+"2", long+"3"))
	require.NoError(t, err)
	d3 := decision(5, 6, 7, 8)
	d3.NumQuota, d3.Quota[2] = 3, httplimit.Quota{Remaining: 9, Reset: 10 * time.Second}
	assert.Equal(t, []string{`"` + long + `1";r=5;t=6, "` + long + `2";r=7;t=8, "` + long + `3";r=9;t=10`}, httplimit.RateLimitRulesValue(ml, d3))
}

// From the caller's side: every response's RateLimit field, parsed back, is
// what a twin keyed.Window fed the same calls at the same instants reports
// for the same decision. Forty clients over several windows make about 850
// (remaining, reset) pairs, more than the middleware's table of 512
// remembered values, so values are shared, replaced and made again.
func TestFieldsMatchTwin(t *testing.T) {
	const limit, win = 40, 30 * time.Second
	h, c := newMW(t, httplimit.KeyedWindow(mustKeyedWindow(t, limit, win)))
	twin := mustKeyedWindow(t, limit, win)
	seen := map[[2]int64]bool{}
	replayClients(t, h, c, 3, 40, 8000, func(i int, key string, rec *httptest.ResponseRecorder) {
		s, err := twin.DecideStatus(key, c.now, 1)
		require.NoError(t, err)
		reset := resetSeconds(s.ResetAt, c.now)
		want := []sfItem{{"40-per-30s", map[string]int64{"r": int64(s.Remaining), "t": reset}}}
		require.Equal(t, want, parseList(t, rec.Header().Values("RateLimit")), "request %d, client %s at %v", i, key, c.now.Sub(t0))
		require.Equal(t, s.Admitted, rec.Code == http.StatusOK, "request %d", i)
		seen[[2]int64{int64(s.Remaining), reset}] = true
	})
	require.Greater(t, len(seen), 512, "the pairs must outnumber the table's entries")
}

// replayClients sends n requests to h from clients of 192.0.2.0/24 drawn at
// random among the first clients ones (with PCG seed seed), each 0 to 49 ms
// after the one before on c, starting at t0, and calls check with each
// request's index, its client's IP and the response, c.now still the
// request's instant.
func replayClients(t *testing.T, h http.Handler, c *clock, seed uint64, clients, n int, check func(i int, key string, rec *httptest.ResponseRecorder)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	var off time.Duration
	for i := range n {
		off += time.Duration(rng.IntN(50)) * time.Millisecond
		key := "192.0.2." + strconv.Itoa(rng.IntN(clients))
		c.now = t0.Add(off)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, request(key+":1234"))
		check(i, key, rec)
	}
}

// resetSeconds is the RateLimit field's t for a reset at at, seen at now:
// whole seconds, rounded up, 0 when the whole limit is there.
func resetSeconds(at, now time.Time) int64 {
	if d := at.Sub(now); d > 0 {
		return int64((d + time.Second - 1) / time.Second)
	}
	return 0
}

// TestFieldsLegacyTightest: the legacy fields describe the rule with the
// least remaining, with that rule's own limit, even when it is not the first;
// of rules with equal remaining, the one that resets last.
func TestFieldsLegacyTightest(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		rules                 []multi.Rule
		limit, remain, resets string
	}{
		// The minute has 4 left, the second 1.
		{"tightest second", []multi.Rule{{Limit: 5, Window: time.Minute}, {Limit: 2, Window: time.Second}}, "2", "1", "1"},
		// Both have 1 left: the minute resets last.
		{"tie", []multi.Rule{{Limit: 2, Window: time.Second}, {Limit: 2, Window: time.Minute}}, "2", "1", "60"},
	} {
		m, err := multi.New(tc.rules...)
		require.NoError(t, err)
		h, c := newMW(t, httplimit.Multi(m), httplimit.Legacy(httplimit.ResetSeconds))
		w := get(h, c, 0)
		require.Equal(t, 200, w.Code, tc.name)
		assert.Equal(t, tc.limit, w.Header().Get("X-RateLimit-Limit"), tc.name)
		assert.Equal(t, tc.remain, w.Header().Get("X-RateLimit-Remaining"), tc.name)
		assert.Equal(t, tc.resets, w.Header().Get("X-RateLimit-Reset"), tc.name)
	}
}
