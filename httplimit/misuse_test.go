package httplimit_test

import (
	"context"
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
