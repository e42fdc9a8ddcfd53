package httplimit

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"strconv"
)

// KeyFunc gives the key a request is limited under. An error refuses the
// request with the key-error response (see [KeyErrorHandler]); it never
// reaches the limiter. A panic reaches net/http as the handler's own would:
// the middleware holds no lock while a KeyFunc runs, and nothing was
// decided for that request.
//
// The key returned is passed to the limiter as is. The empty string is a
// key like any other: every request that gets it shares one limit. Its
// length is not bounded: a keyed store keeps a copy of each key's bytes, so
// a function whose key a client can choose (a header, a path) must bound it,
// as [HeaderKey] does with [MaxKeyLen], or a flood of long invented keys
// pins MaxKeys times their length.
type KeyFunc func(r *http.Request) (string, error)

// DefaultIPv6Prefix is the prefix length IPv6 addresses are grouped by in
// [RemoteAddr]: a /64 is what one subscriber usually gets, so keying by the
// full address would let one client rotate through 2^64 keys.
const DefaultIPv6Prefix = 64

// MaxKeyLen is the longest key [HeaderKey] accepts: longer values are
// errors, so that a client cannot make the limiter store huge keys.
const MaxKeyLen = 256

// RemoteAddr keys a request by its peer's IP address (Request.RemoteAddr,
// without the port), IPv4 as is, IPv6 grouped by its /64 prefix, an IPv4
// address mapped into IPv6 as the IPv4 address. It trusts no header: behind a
// proxy every request has the proxy's address; use [IPKey] with a
// [ProxyResolver] there.
var RemoteAddr KeyFunc = ipKey{v6: DefaultIPv6Prefix}.key

// IPKey keys a request by its client's IP address, IPv6 addresses grouped by
// the prefix of v6Prefix bits (1 to 128; 128 keeps the whole address). With
// a nil resolver the client is the peer (Request.RemoteAddr); with one, the
// client is what the resolver finds from the forwarding header its trusted
// proxies set.
func IPKey(v6Prefix int, p *ProxyResolver) (KeyFunc, error) {
	if v6Prefix < 1 || v6Prefix > 128 {
		return nil, fmt.Errorf("httplimit: IPKey: v6Prefix must be between 1 and 128, got %d", v6Prefix)
	}
	return ipKey{v6: v6Prefix, p: p}.key, nil
}

type ipKey struct {
	v6 int
	p  *ProxyResolver
}

func (k ipKey) key(r *http.Request) (string, error) {
	var a netip.Addr
	var text string
	var err error
	if k.p != nil {
		a, text, err = k.p.clientIP(r)
	} else if _, host, ok := peerIPv4(r.RemoteAddr); ok {
		return host, nil // plain dotted IPv4: addrKey would return host
	} else {
		a, text, err = peerIPSlow(r.RemoteAddr)
	}
	if err != nil {
		return "", err
	}
	return addrKey(a, text, k.v6), nil
}

// addrKey is the key of address a, whose text form in the request was text:
// text itself when it is already the canonical form (no allocation), else
// the canonical form of a (IPv4) or of a's prefix (IPv6).
func addrKey(a netip.Addr, text string, v6 int) string {
	if a.Is4() {
		if dotted(text) {
			return text // ParseAddr accepts only the canonical dotted form
		}
		return a.String()
	}
	if v6 == 128 {
		return a.String()
	}
	return netip.PrefixFrom(a, v6).Masked().String()
}

// dotted reports whether s holds only digits and dots: for a text that
// netip.ParseAddr parsed as IPv4, that it is the plain dotted form, not an
// IPv4-mapped IPv6 address. Every request keyed by IP takes this path, so it
// is a plain loop rather than strings.ContainsAny, which builds a set first.
func dotted(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '.' && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// peerIP parses Request.RemoteAddr: "ip:port", "[ipv6]:port", or a bare IP.
func peerIP(s string) (netip.Addr, string, error) {
	if a, host, ok := peerIPv4(s); ok {
		return a, host, nil
	}
	return peerIPSlow(s)
}

// peerIPv4 is peerIP for the form net/http's server sets for an IPv4 peer,
// "a.b.c.d:port", and reports false for anything else. It answers what
// peerIPSlow answers for such a string (FuzzPeerIP compares them): with one
// colon and no brackets, net.SplitHostPort splits at the colon, and
// netip.ParseAddr accepts a dotted host exactly when it has four decimal
// fields of at most 255 without leading zeros.
func peerIPv4(s string) (netip.Addr, string, bool) {
	i := len(s) - 1
	for i >= 0 && s[i] >= '0' && s[i] <= '9' {
		i--
	}
	if i < 0 || i == len(s)-1 || s[i] != ':' {
		return netip.Addr{}, "", false
	}
	host := s[:i]
	var ip [4]byte
	field, v, digits := 0, 0, 0
	for j := 0; j <= len(host); j++ {
		if j == len(host) || host[j] == '.' {
			if digits == 0 || field == 4 {
				return netip.Addr{}, "", false
			}
			ip[field] = byte(v)
			field, v, digits = field+1, 0, 0
			continue
		}
		c := host[j]
		if c < '0' || c > '9' || (digits > 0 && v == 0) {
			return netip.Addr{}, "", false // not a digit, or a leading zero
		}
		v = v*10 + int(c-'0')
		if digits++; v > 255 {
			return netip.Addr{}, "", false
		}
	}
	if field != 4 {
		return netip.Addr{}, "", false
	}
	return netip.AddrFrom4(ip), host, true
}

// peerIPSlow is peerIP for every form.
func peerIPSlow(s string) (netip.Addr, string, error) {
	host := s
	if h, _, err := net.SplitHostPort(s); err == nil {
		host = h
	}
	a, ok := parseIP(host)
	if !ok {
		return netip.Addr{}, "", fmt.Errorf("httplimit: remote address %q is not an IP address", clip(s))
	}
	return a, host, nil
}

// parseIP parses an IP address without port, dropping brackets' absence
// (SplitHostPort removed them) and any zone, and unmapping IPv4-in-IPv6.
func parseIP(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

// clip shortens s for an error message.
func clip(s string) string {
	const n = 64
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// ErrNoKey is wrapped by the errors of HeaderKey and PatternKey when the
// request has no value to key by.
var ErrNoKey = errors.New("no key")

// HeaderKey keys a request by the value of the header field name (an API
// key, a tenant id). A request without the field, with an empty value, with
// several values, or with a value longer than MaxKeyLen gets an error
// (wrapping ErrNoKey for the first two). Clients choose this value freely:
// key by it only when the limit is meant per value (authenticate first).
func HeaderKey(name string) KeyFunc {
	canon := textproto.CanonicalMIMEHeaderKey(name)
	return func(r *http.Request) (string, error) {
		v := r.Header[canon]
		switch {
		case len(v) == 0 || v[0] == "":
			return "", fmt.Errorf("httplimit: header %s: %w", canon, ErrNoKey)
		case len(v) > 1:
			return "", fmt.Errorf("httplimit: header %s: %d values, want one", canon, len(v))
		case len(v[0]) > MaxKeyLen:
			return "", fmt.Errorf("httplimit: header %s: value of %d bytes, longer than %d", canon, len(v[0]), MaxKeyLen)
		}
		return v[0], nil
	}
}

// PatternKey keys a request by the ServeMux pattern that matched it
// (Request.Pattern, such as "GET /items/{id}"), so that each route has its
// own limit. The pattern is set only when the middleware runs inside the
// mux: wrap the handler given to Handle, not the mux itself. A request
// without a pattern gets an error wrapping ErrNoKey.
func PatternKey(r *http.Request) (string, error) {
	if r.Pattern == "" {
		return "", fmt.Errorf("httplimit: request has no ServeMux pattern (wrap the handler registered on the mux): %w", ErrNoKey)
	}
	return r.Pattern, nil
}

// JoinKeys keys a request by several keys at once (per route and client,
// say): the key is each part prefixed with its length, so that two
// different lists of parts never give the same key. The first error of a
// part is returned. It panics if a part is nil, a programming error
// reported where the key function is built rather than as a 500 on every
// request.
func JoinKeys(parts ...KeyFunc) KeyFunc {
	parts = append([]KeyFunc(nil), parts...)
	for i, f := range parts {
		if f == nil {
			panic(fmt.Sprintf("httplimit: JoinKeys: key function %d is nil", i))
		}
	}
	return func(r *http.Request) (string, error) {
		var b []byte
		for _, f := range parts {
			k, err := f(r)
			if err != nil {
				return "", err
			}
			b = strconv.AppendInt(b, int64(len(k)), 10)
			b = append(b, ':')
			b = append(b, k...)
		}
		return string(b), nil
	}
}
