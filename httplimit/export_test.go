package httplimit

import "time"

// SetNow replaces the middleware's clock, so tests inject instants.
func SetNow(m *Middleware, now func() time.Time) { m.now = now }

// HeaderValue is headerValue, for its boundary tests.
var HeaderValue = headerValue
