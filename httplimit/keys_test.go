package httplimit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
)

func request(remote string, header ...string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = remote
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return r
}

func TestRemoteAddr(t *testing.T) {
	tests := []struct {
		remote string
		want   string // "" means an error
	}{
		{"192.0.2.1:1234", "192.0.2.1"},
		{"192.0.2.1", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"[::ffff:192.0.2.1]:80", "192.0.2.1"},
		{"[::1]:80", "::/64"},
		{"", ""},
		{"@", ""},
		{"example.com:80", ""},
		{"192.0.2.1:80:90", ""},
		{"[192.0.2.1:80", ""},
		{"01.2.3.4:80", ""},
		{"192.0.2.256:80", ""},
		{strings.Repeat("9", 1<<16), ""},
	}
	for _, tt := range tests {
		got, err := httplimit.RemoteAddr(request(tt.remote))
		if tt.want == "" {
			require.Error(t, err, "RemoteAddr %q", tt.remote)
			assert.Less(t, len(err.Error()), 200, "error message is clipped")
			continue
		}
		require.NoError(t, err, "RemoteAddr %q", tt.remote)
		assert.Equal(t, tt.want, got, "RemoteAddr %q", tt.remote)
	}
}

// A client-supplied forwarding header is never read without a resolver.
func TestRemoteAddrIgnoresForwardingHeaders(t *testing.T) {
	r := request("198.51.100.7:5000",
		"X-Forwarded-For", "203.0.113.9",
		"Forwarded", "for=203.0.113.9",
		"X-Real-Ip", "203.0.113.9")
	got, err := httplimit.RemoteAddr(r)
	require.NoError(t, err)
	assert.Equal(t, "198.51.100.7", got)
}

func TestIPKeyPrefix(t *testing.T) {
	for _, bad := range []int{-1, 0, 129} {
		_, err := httplimit.IPKey(bad, nil)
		require.ErrorContains(t, err, "v6Prefix")
	}
	k, err := httplimit.IPKey(128, nil)
	require.NoError(t, err)
	got, err := k(request("[2001:db8::1]:1"))
	require.NoError(t, err)
	assert.Equal(t, "2001:db8::1", got)
	k, err = httplimit.IPKey(48, nil)
	require.NoError(t, err)
	got, err = k(request("[2001:db8:aa:bb::1]:1"))
	require.NoError(t, err)
	assert.Equal(t, "2001:db8:aa::/48", got)
	got, err = k(request("10.1.2.3:1"))
	require.NoError(t, err)
	assert.Equal(t, "10.1.2.3", got, "IPv4 is never grouped")
}

func TestRemoteAddrAllocatesNothingForIPv4(t *testing.T) {
	r := request("192.0.2.1:1234")
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := httplimit.RemoteAddr(r); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// RemoteAddr's fast path takes the form net/http sets for an IPv4 peer and
// leaves every other string to the general parser, which answers the same.
func TestPeerIPv4FastPath(t *testing.T) {
	for _, tt := range []struct {
		in   string
		fast bool
	}{
		{"192.0.2.1:1234", true},
		{"0.0.0.0:0", true},
		{"255.255.255.255:65535", true},
		{"10.20.30.40:1", true},
		{"1.2.3.4", false},     // no port
		{"1.2.3.4:", false},    // empty port
		{"1.2.3.4:x", false},   // port not digits
		{"01.2.3.4:1", false},  // leading zero: ParseAddr refuses it too
		{"1.2.3.256:1", false}, // field above 255
		{"1.2.3:1", false},     // three fields
		{"1.2.3.4.5:1", false}, // five fields
		{"1..3.4:1", false},    // empty field
		{".1.2.3:1", false},    // empty first field
		{"1.2.3.4.:1", false},  // empty last field
		{"[1.2.3.4]:1", false}, // brackets
		{"::ffff:1.2.3.4:1", false},
		{"[::1]:80", false},
		{"1.2.3.4:1:2", false},
		{":1", false},
		{"", false},
	} {
		_, _, ok := httplimit.PeerIPv4(tt.in)
		assert.Equal(t, tt.fast, ok, "%q", tt.in)
		checkPeerIP(t, tt.in)
	}
}

// checkPeerIP fails if peerIP, or RemoteAddr's key, and the general parser
// disagree on s.
func checkPeerIP(t *testing.T, s string) {
	t.Helper()
	a, text, err := httplimit.PeerIP(s)
	b, textB, errB := httplimit.PeerIPSlow(s)
	if a != b || text != textB || (err == nil) != (errB == nil) {
		t.Fatalf("peerIP(%q) = %v, %q, %v; the general parser says %v, %q, %v", s, a, text, err, b, textB, errB)
	}
	r := &http.Request{RemoteAddr: s}
	key, err := httplimit.RemoteAddr(r)
	keyB, errB := httplimit.RemoteAddrSlow(s)
	if key != keyB || (err == nil) != (errB == nil) {
		t.Fatalf("RemoteAddr(%q) = %q, %v; through the general parser %q, %v", s, key, err, keyB, errB)
	}
}

func FuzzPeerIP(f *testing.F) {
	for _, s := range []string{"192.0.2.1:1234", "1.2.3.4", "01.2.3.4:1", "1.2.3.256:9", "[::1]:80", "1.2.3.4:", "::ffff:1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkPeerIP(t, s) })
}

func resolver(t *testing.T, h httplimit.ForwardHeader, trusted ...string) *httplimit.ProxyResolver {
	t.Helper()
	var ps []netip.Prefix
	for _, s := range trusted {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	p, err := httplimit.NewProxyResolver(h, ps...)
	require.NoError(t, err)
	return p
}

func TestNewProxyResolverRejects(t *testing.T) {
	_, err := httplimit.NewProxyResolver(httplimit.XForwardedFor)
	require.ErrorContains(t, err, "trusted prefix")
	_, err = httplimit.NewProxyResolver(0, netip.MustParsePrefix("10.0.0.0/8"))
	require.ErrorContains(t, err, "header")
	_, err = httplimit.NewProxyResolver(httplimit.Forwarded, netip.Prefix{})
	require.ErrorContains(t, err, "invalid")
}

type resolveCase struct {
	name   string
	remote string
	header []string // name, value pairs
	want   string   // client address; "" means an error
}

func runResolve(t *testing.T, p *httplimit.ProxyResolver, tests []resolveCase) {
	t.Helper()
	for _, tt := range tests {
		got, err := p.ClientIP(request(tt.remote, tt.header...))
		if tt.want == "" {
			assert.Error(t, err, "%s: got %v", tt.name, got)
			continue
		}
		if assert.NoError(t, err, tt.name) {
			assert.Equal(t, tt.want, got.String(), tt.name)
		}
	}
}

func TestProxyResolverXForwardedFor(t *testing.T) {
	// One trusted proxy at 10.0.0.1 (its /32) and a trusted IPv6 range.
	p := resolver(t, httplimit.XForwardedFor, "10.0.0.1/32", "2001:db8:ffff::/48")
	xff := "X-Forwarded-For"
	runResolve(t, p, []resolveCase{
		{"peer not trusted: header ignored", "198.51.100.7:1", []string{xff, "203.0.113.9"}, "198.51.100.7"},
		{"peer not trusted: garbage ignored", "198.51.100.7:1", []string{xff, "garbage"}, "198.51.100.7"},
		{"one trusted proxy: the hop before it", "10.0.0.1:1", []string{xff, "203.0.113.9"}, "203.0.113.9"},
		{"spoofed entries left of the real one", "10.0.0.1:1", []string{xff, "1.1.1.1, 2.2.2.2, 203.0.113.9"}, "203.0.113.9"},
		{"spoofed entry claiming to be the proxy", "10.0.0.1:1", []string{xff, "203.0.113.9, 10.0.0.1"}, "203.0.113.9"},
		{"garbage left of the real one", "10.0.0.1:1", []string{xff, "\x01zz, , [, 203.0.113.9"}, "203.0.113.9"},
		{"trusted proxy, no header: the proxy", "10.0.0.1:1", nil, "10.0.0.1"},
		{"trusted proxy, empty header", "10.0.0.1:1", []string{xff, ""}, "10.0.0.1"},
		{"every hop trusted: the leftmost", "10.0.0.1:1", []string{xff, "10.0.0.1, 10.0.0.1"}, "10.0.0.1"},
		{"hop with a port", "10.0.0.1:1", []string{xff, "203.0.113.9:4711"}, "203.0.113.9"},
		{"IPv6 hop", "10.0.0.1:1", []string{xff, "2001:db8::5"}, "2001:db8::5"},
		{"IPv6 hop in brackets with port", "10.0.0.1:1", []string{xff, "[2001:db8::5]:80"}, "2001:db8::5"},
		{"IPv6 hop in brackets", "10.0.0.1:1", []string{xff, "[2001:db8::5]"}, "2001:db8::5"},
		{"IPv6 hop with zone", "10.0.0.1:1", []string{xff, "fe80::1%eth0"}, "fe80::1"},
		{"mapped IPv4 hop", "10.0.0.1:1", []string{xff, "::ffff:203.0.113.9"}, "203.0.113.9"},
		{"trusted IPv6 proxy chain", "[2001:db8:ffff::1]:1", []string{xff, "203.0.113.9, 2001:db8:ffff::2"}, "203.0.113.9"},
		{"several lines are one list", "10.0.0.1:1", []string{xff, "1.1.1.1", xff, "203.0.113.9"}, "203.0.113.9"},
		{"malformed hop before the proxy", "10.0.0.1:1", []string{xff, "203.0.113.9, not-an-ip"}, ""},
		{"empty hop before the proxy", "10.0.0.1:1", []string{xff, "203.0.113.9, "}, ""},
		// A trailing comma is an empty entry too (until 2026-11-25 it was
		// dropped, and the walk went on to the entry left of it).
		{"trailing comma before the proxy", "10.0.0.1:1", []string{xff, "203.0.113.9,"}, ""},
		{"two commas before the proxy", "10.0.0.1:1", []string{xff, "203.0.113.9,,10.0.0.1"}, ""},
		{"blank line right of the real one", "10.0.0.1:1", []string{xff, "203.0.113.9", xff, " "}, "203.0.113.9"},
		{"bad port", "10.0.0.1:1", []string{xff, "203.0.113.9:http"}, ""},
		{"bracket garbage", "10.0.0.1:1", []string{xff, "[2001:db8::5]x"}, ""},
		{"bad remote address", "nope", []string{xff, "203.0.113.9"}, ""},
	})
}

func TestProxyResolverForwarded(t *testing.T) {
	p := resolver(t, httplimit.Forwarded, "10.0.0.0/8")
	fwd := "Forwarded"
	runResolve(t, p, []resolveCase{
		{"peer not trusted", "198.51.100.7:1", []string{fwd, "for=203.0.113.9"}, "198.51.100.7"},
		{"one element", "10.0.0.1:1", []string{fwd, "for=203.0.113.9;proto=https;by=10.0.0.1"}, "203.0.113.9"},
		{"case-insensitive name", "10.0.0.1:1", []string{fwd, "For=203.0.113.9"}, "203.0.113.9"},
		{"quoted IPv6 with port", "10.0.0.1:1", []string{fwd, `for="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::17"},
		{"quoted IPv4 with port", "10.0.0.1:1", []string{fwd, `for="203.0.113.9:47011"`}, "203.0.113.9"},
		{"chain, right to left", "10.0.0.1:1", []string{fwd, "for=1.1.1.1, for=203.0.113.9, for=10.0.0.2"}, "203.0.113.9"},
		{"quoted comma on the left is not a separator", "10.0.0.1:1", []string{fwd, `for="1.1.1.1, for=10.0.0.3", for=203.0.113.9`}, "203.0.113.9"},
		{"quoted comma hiding a spoof", "10.0.0.1:1", []string{fwd, `for=203.0.113.9;by="x, for=10.0.0.5"`}, "203.0.113.9"},
		{"spaces around pairs", "10.0.0.1:1", []string{fwd, " for = 203.0.113.9 ; proto=http "}, "203.0.113.9"},
		{"several lines", "10.0.0.1:1", []string{fwd, "for=1.1.1.1", fwd, "for=203.0.113.9"}, "203.0.113.9"},
		{"unknown", "10.0.0.1:1", []string{fwd, "for=unknown"}, ""},
		{"obfuscated", "10.0.0.1:1", []string{fwd, "for=_hidden"}, ""},
		{"element without for", "10.0.0.1:1", []string{fwd, "for=203.0.113.9, proto=https"}, ""},
		// RFC 7239 allows each parameter once per element: which of two
		// for= a proxy meant is not known (until 2026-11-25 the first won).
		{"two for= in one element", "10.0.0.1:1", []string{fwd, "for=6.6.6.6;for=203.0.113.9"}, ""},
		{"two for= in a client's element, never read", "10.0.0.1:1", []string{fwd, "for=6.6.6.6;for=1.1.1.1, for=203.0.113.9"}, "203.0.113.9"},
		{"unterminated quote", "10.0.0.1:1", []string{fwd, `for="203.0.113.9`}, ""},
		{"escape in quoted value", "10.0.0.1:1", []string{fwd, `for="203.0.113.\9"`}, ""},
		{"unknown on the left is never read", "10.0.0.1:1", []string{fwd, "for=unknown, for=203.0.113.9"}, "203.0.113.9"},
		// A client's unclosed quote cannot swallow what the proxy appends
		// after it on the same line.
		{"unclosed quote on the left", "10.0.0.1:1", []string{fwd, `for=", for=203.0.113.9`}, "203.0.113.9"},
		{"unclosed quote before a quoted hop", "10.0.0.1:1", []string{fwd, `for=", for="[2001:db8::7]:1"`}, "2001:db8::7"},
		{"unclosed quote before trusted hops", "10.0.0.1:1", []string{fwd, `for="x, for=203.0.113.9;proto=https, for=10.0.0.2`}, "203.0.113.9"},
		{"X-Forwarded-For is not read", "10.0.0.1:1", []string{"X-Forwarded-For", "203.0.113.9"}, "10.0.0.1"},
		{"empty value", "10.0.0.1:1", []string{fwd, " "}, "10.0.0.1"},
		{"lone quote", "10.0.0.1:1", []string{fwd, `"`}, ""},
		{"lone equals", "10.0.0.1:1", []string{fwd, `for=`}, ""},
	})
}

func TestProxyResolverLongHeader(t *testing.T) {
	p := resolver(t, httplimit.XForwardedFor, "10.0.0.0/8")
	long := strings.Repeat("1.1.1.1, ", 100_000) + "203.0.113.9, 10.0.0.2"
	got, err := p.ClientIP(request("10.0.0.1:1", "X-Forwarded-For", long))
	require.NoError(t, err)
	assert.Equal(t, "203.0.113.9", got.String())

	q := resolver(t, httplimit.Forwarded, "10.0.0.0/8")
	long = strings.Repeat(`for="[2001:db8::1]:1";proto=http, `, 50_000) + "for=203.0.113.9"
	got, err = q.ClientIP(request("10.0.0.1:1", "Forwarded", long))
	require.NoError(t, err)
	assert.Equal(t, "203.0.113.9", got.String())
}

func TestProxyResolverAllocatesNothing(t *testing.T) {
	for _, h := range []httplimit.ForwardHeader{httplimit.XForwardedFor, httplimit.Forwarded} {
		p := resolver(t, h, "10.0.0.0/8")
		r := request("10.0.0.1:1", "X-Forwarded-For", "1.1.1.1, 203.0.113.9, 10.0.0.2",
			"Forwarded", "for=1.1.1.1, for=203.0.113.9;proto=https, for=10.0.0.2")
		k, err := httplimit.IPKey(64, p)
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(100, func() {
			key, err := k(r)
			if err != nil || key != "203.0.113.9" {
				t.Fatalf("key %q, err %v", key, err)
			}
		})
		assert.Zero(t, allocs, "header %d", h)
	}
}

func FuzzProxyResolver(f *testing.F) {
	for _, s := range []string{"for=203.0.113.9", `for="[2001:db8::1]:80";by=x, for=10.0.0.2`, `"`, "for=", "1.1.1.1, 10.0.0.2", ";;,,=", `for="\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		for _, fh := range []httplimit.ForwardHeader{httplimit.XForwardedFor, httplimit.Forwarded} {
			p, err := httplimit.NewProxyResolver(fh, netip.MustParsePrefix("10.0.0.0/8"))
			if err != nil {
				t.Fatal(err)
			}
			// Untrusted peer: the header is never believed.
			a, err := p.ClientIP(request("198.51.100.7:1", "X-Forwarded-For", h, "Forwarded", h))
			if err != nil || a.String() != "198.51.100.7" {
				t.Fatalf("untrusted peer: %v, %v", a, err)
			}
			// Trusted peer: an address or an error, never a trusted one
			// unless every hop is trusted.
			a, err = p.ClientIP(request("10.0.0.1:1", "X-Forwarded-For", h, "Forwarded", h))
			if err == nil && !a.IsValid() {
				t.Fatalf("invalid address without an error")
			}
		}
	})
}

func TestHeaderKey(t *testing.T) {
	k := httplimit.HeaderKey("x-api-key")
	got, err := k(request("1.2.3.4:1", "X-Api-Key", "secret-1"))
	require.NoError(t, err)
	assert.Equal(t, "secret-1", got)

	_, err = k(request("1.2.3.4:1"))
	require.ErrorIs(t, err, httplimit.ErrNoKey)
	_, err = k(request("1.2.3.4:1", "X-Api-Key", ""))
	require.ErrorIs(t, err, httplimit.ErrNoKey)
	_, err = k(request("1.2.3.4:1", "X-Api-Key", "a", "X-Api-Key", "b"))
	require.ErrorContains(t, err, "2 values")
	_, err = k(request("1.2.3.4:1", "X-Api-Key", strings.Repeat("k", httplimit.MaxKeyLen+1)))
	require.ErrorContains(t, err, "longer than")
	got, err = k(request("1.2.3.4:1", "X-Api-Key", strings.Repeat("k", httplimit.MaxKeyLen)))
	require.NoError(t, err)
	assert.Len(t, got, httplimit.MaxKeyLen)
}

func TestPatternKey(t *testing.T) {
	var got string
	var gotErr error
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, gotErr = httplimit.PatternKey(r)
	}))
	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/items/42", nil))
	require.NoError(t, gotErr)
	assert.Equal(t, "GET /items/{id}", got)

	_, err := httplimit.PatternKey(httptest.NewRequest("GET", "/items/42", nil))
	require.ErrorIs(t, err, httplimit.ErrNoKey)
}

func TestJoinKeys(t *testing.T) {
	constant := func(s string) httplimit.KeyFunc {
		return func(*http.Request) (string, error) { return s, nil }
	}
	r := request("1.2.3.4:1")
	a, err := httplimit.JoinKeys(constant("a:b"), constant("c"))(r)
	require.NoError(t, err)
	b, err := httplimit.JoinKeys(constant("a"), constant("b:c"))(r)
	require.NoError(t, err)
	c, err := httplimit.JoinKeys(constant("a:bc"))(r)
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, a, c)
	assert.NotEqual(t, b, c)

	ip, err := httplimit.JoinKeys(httplimit.RemoteAddr, httplimit.HeaderKey("X-Api-Key"))(request("1.2.3.4:1", "X-Api-Key", "k"))
	require.NoError(t, err)
	assert.Equal(t, "7:1.2.3.41:k", ip)

	boom := errors.New("boom")
	_, err = httplimit.JoinKeys(constant("a"), func(*http.Request) (string, error) { return "", boom })(r)
	require.ErrorIs(t, err, boom)
	require.PanicsWithValue(t, "httplimit: JoinKeys: key function 1 is nil", func() { httplimit.JoinKeys(constant("a"), nil) },
		"a nil part is reported where the key function is built, not per request")
}

// Hops with a malformed port are not addresses: the walk fails.
func TestProxyResolverMalformedPorts(t *testing.T) {
	p := resolver(t, httplimit.XForwardedFor, "10.0.0.1/32")
	xff := "X-Forwarded-For"
	runResolve(t, p, []resolveCase{
		{"port of five digits", "10.0.0.1:1", []string{xff, "203.0.113.9:65535"}, "203.0.113.9"},
		{"port of six digits", "10.0.0.1:1", []string{xff, "203.0.113.9:123456"}, ""},
		{"bracketed, port of six digits", "10.0.0.1:1", []string{xff, "[2001:db8::5]:123456"}, ""},
		{"bracketed, empty port", "10.0.0.1:1", []string{xff, "[2001:db8::5]:"}, ""},
		{"bracketed, port not digits", "10.0.0.1:1", []string{xff, "[2001:db8::5]:http"}, ""},
	})
}

// A trusted prefix written as IPv4-mapped IPv6 trusts the IPv4 addresses it
// maps (peers are unmapped before they are compared).
func TestProxyResolverMappedTrustedPrefix(t *testing.T) {
	p := resolver(t, httplimit.XForwardedFor, "::ffff:10.0.0.0/104")
	runResolve(t, p, []resolveCase{
		{"IPv4 peer inside the mapped prefix", "10.0.0.1:1", []string{"X-Forwarded-For", "203.0.113.9"}, "203.0.113.9"},
		{"mapped peer inside the mapped prefix", "[::ffff:10.0.0.1]:1", []string{"X-Forwarded-For", "203.0.113.9"}, "203.0.113.9"},
		{"IPv4 peer outside", "11.0.0.1:1", []string{"X-Forwarded-For", "203.0.113.9"}, "11.0.0.1"},
	})
}
