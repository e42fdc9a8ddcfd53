package httplimit

import "time"

// SetNow replaces the middleware's clock, so tests inject instants.
func SetNow(m *Middleware, now func() time.Time) { m.now = now }

// HeaderValue is headerValue, for its boundary tests.
var HeaderValue = headerValue

// PeerIP is peerIP, PeerIPv4 its fast path, and PeerIPSlow the general
// parser the fast path must agree with.
var (
	PeerIP     = peerIP
	PeerIPv4   = peerIPv4
	PeerIPSlow = peerIPSlow
)
