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

// ClockNow returns a new clock's reading function, as New installs it for
// this package's adapters.
func ClockNow() func() time.Time { return newClock().now }

// RemoteAddrSlow is RemoteAddr through the general parser only, for
// checking its fast path.
func RemoteAddrSlow(s string) (string, error) {
	a, text, err := peerIPSlow(s)
	if err != nil {
		return "", err
	}
	return addrKey(a, text, DefaultIPv6Prefix), nil
}
