package httplimit_test

import (
	"testing"
	"time"

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
