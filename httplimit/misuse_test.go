package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
)

// A Middleware not made by New (its zero value, or a nil pointer), and a nil
// handler to wrap, are programming errors: Handler says so when it is
// called, not with a nil dereference at the first request.
func TestHandlerMisuse(t *testing.T) {
	require.PanicsWithValue(t, "httplimit: Middleware used without New: make it with httplimit.New", func() {
		var m httplimit.Middleware
		m.Handler(ok200)
	})
	require.PanicsWithValue(t, "httplimit: Middleware used without New: make it with httplimit.New", func() {
		var m *httplimit.Middleware
		m.Handler(ok200)
	})
	m, err := httplimit.New(httplimit.Ring(mustRing(t, 1, time.Second)))
	require.NoError(t, err)
	require.PanicsWithValue(t, "httplimit: Handler: the handler to wrap is nil", func() { m.Handler(nil) })
}

// nilRules is a Limiter whose methods need a non-nil receiver.
type nilRules struct{ rules []httplimit.Rule }

func (l *nilRules) Rules() []httplimit.Rule { return l.rules }

func (l *nilRules) Decide(context.Context, string, time.Time, int) (httplimit.Decision, error) {
	return httplimit.Decision{Allowed: true}, nil
}

// A nil pointer in the Limiter interface is a nil limiter: New and All
// return an error instead of calling its methods.
func TestNilPointerLimiter(t *testing.T) {
	var l *nilRules
	var m *httplimit.Middleware
	var err error
	require.NotPanics(t, func() { m, err = httplimit.New(l) })
	assert.Nil(t, m)
	assert.ErrorContains(t, err, "httplimit: limiter is nil")
	var a httplimit.Limiter
	require.NotPanics(t, func() { a, err = httplimit.All(httplimit.Ring(mustRing(t, 1, time.Second)), l) })
	assert.Nil(t, a)
	assert.ErrorContains(t, err, "httplimit: All: limiter 1 is nil")
}

// A nil *ProxyResolver answers as IPKey with a nil resolver does: the peer
// is the client, and no header is read.
func TestNilProxyResolver(t *testing.T) {
	var p *httplimit.ProxyResolver
	r := request("10.1.2.3:4000", "X-Forwarded-For", "203.0.113.7")
	var a netip.Addr
	var err error
	require.NotPanics(t, func() { a, err = p.ClientIP(r) })
	require.NoError(t, err)
	assert.Equal(t, netip.MustParseAddr("10.1.2.3"), a)
}

// An option given twice is an error of New naming it, as keyed's MaxKeys
// given twice is: a later option silently replacing an earlier one (a
// fail-open policy over a fail-closed one, another key function) is what a
// list of options assembled in several places gets wrong.
func TestNewRejectsOptionGivenTwice(t *testing.T) {
	r := httplimit.Ring(mustRing(t, 1, time.Second))
	noop := func(*http.Request) bool { return false }
	for _, tt := range []struct {
		opts []httplimit.Option
		name string
	}{
		{[]httplimit.Option{httplimit.Key(httplimit.RemoteAddr), httplimit.Key(httplimit.PatternKey)}, "Key"},
		{[]httplimit.Option{httplimit.Cost(nil), httplimit.Cost(nil)}, "Cost"},
		{[]httplimit.Option{httplimit.SendFields(httplimit.FieldsOff), httplimit.SendFields(httplimit.FieldsAlways)}, "SendFields"},
		{[]httplimit.Option{httplimit.Legacy(httplimit.ResetSeconds), httplimit.Legacy(httplimit.ResetUnix)}, "Legacy"},
		{[]httplimit.Option{httplimit.PolicyNames("a"), httplimit.PolicyNames("b")}, "PolicyNames"},
		{[]httplimit.Option{httplimit.Exempt(noop), httplimit.Exempt(noop)}, "Exempt"},
		{[]httplimit.Option{httplimit.OnRefusal(nil), httplimit.OnRefusal(nil)}, "OnRefusal"},
		{[]httplimit.Option{httplimit.RefusalHandler(nil), httplimit.RefusalHandler(nil)}, "RefusalHandler"},
		{[]httplimit.Option{httplimit.KeyErrorHandler(nil), httplimit.KeyErrorHandler(nil)}, "KeyErrorHandler"},
		{[]httplimit.Option{httplimit.OnLimiterError(httplimit.FailClosed, nil), nil, httplimit.OnLimiterError(httplimit.FailOpen, nil)}, "OnLimiterError"},
	} {
		m, err := httplimit.New(r, tt.opts...)
		assert.Nil(t, m, tt.name)
		assert.EqualError(t, err, "httplimit: "+tt.name+": option given twice", tt.name)
	}
	// Each option once, all of them: accepted.
	_, err := httplimit.New(r, httplimit.Key(httplimit.RemoteAddr), httplimit.Cost(nil), httplimit.SendFields(httplimit.FieldsOff),
		httplimit.Legacy(httplimit.ResetSeconds), httplimit.PolicyNames("a"), httplimit.Exempt(noop), httplimit.OnRefusal(nil),
		httplimit.RefusalHandler(nil), httplimit.KeyErrorHandler(nil), httplimit.OnLimiterError(httplimit.FailClosed, nil))
	require.NoError(t, err)
}

// An outer handler may have set Content-Length for a response it meant to
// send. The middleware's own refusals replace the body, so they drop it, as
// http.Error does: otherwise a real server cuts the body short of the
// declared length and the client reads a broken response.
func TestRefusalDropsContentLength(t *testing.T) {
	m, err := httplimit.New(httplimit.Ring(mustRing(t, 1, time.Hour)))
	require.NoError(t, err)
	inner := m.Handler(ok200)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2")
		inner.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	for i, want := range []int{200, 429} {
		res, err := srv.Client().Get(srv.URL)
		require.NoError(t, err, "request %d", i)
		body := make([]byte, 64)
		n, _ := res.Body.Read(body)
		_ = res.Body.Close()
		require.Equal(t, want, res.StatusCode, "request %d", i)
		if want == 429 {
			assert.Equal(t, "too many requests\n", string(body[:n]))
			assert.Equal(t, int64(len("too many requests\n")), res.ContentLength)
		}
	}
}
