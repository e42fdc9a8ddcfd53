package httplimit

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ForwardHeader names the header field a ProxyResolver reads: the one the
// trusted proxies set. Only that one is read, so that a client cannot inject
// the other.
type ForwardHeader uint8

const (
	// XForwardedFor reads X-Forwarded-For: a comma-separated list of
	// addresses, each proxy appending its peer's.
	XForwardedFor ForwardHeader = iota + 1
	// Forwarded reads the for= parameters of RFC 7239 Forwarded.
	Forwarded
)

// ProxyResolver finds a request's client address behind proxies the user
// trusts. It reads the hops right to left: the peer (Request.RemoteAddr)
// first, then the header's entries from the last to the first, and the
// client is the first hop that is not inside a trusted prefix. A peer that is
// not trusted is the client, whatever the header says, so without trusted
// prefixes no header is ever believed. If every hop is trusted, the client is
// the leftmost one (the peer itself when the header is absent).
//
// The hop that ends the walk must be an IP address (with or without a port;
// IPv6 with or without brackets; a zone is dropped). If it is not (a
// malformed entry, Forwarded's "unknown" or an obfuscated identifier), the
// key function fails: a trusted proxy reported a peer it could not name.
// Entries left of that hop are never read, so garbage a client puts in the
// header cannot fail or steer the walk. All lines of the field are read, in
// order, as one list.
//
// A ProxyResolver is safe for concurrent use; resolving allocates nothing.
type ProxyResolver struct {
	header  ForwardHeader
	trusted []netip.Prefix
}

// NewProxyResolver returns a resolver reading header and trusting the hops
// inside the trusted prefixes (the addresses of the user's own proxies and
// load balancers). At least one prefix is required.
func NewProxyResolver(header ForwardHeader, trusted ...netip.Prefix) (*ProxyResolver, error) {
	if header != XForwardedFor && header != Forwarded {
		return nil, fmt.Errorf("httplimit: NewProxyResolver: header must be XForwardedFor or Forwarded, got %d", header)
	}
	if len(trusted) == 0 {
		return nil, errors.New("httplimit: NewProxyResolver: at least one trusted prefix is required")
	}
	p := &ProxyResolver{header: header}
	for i, t := range trusted {
		if !t.IsValid() {
			return nil, fmt.Errorf("httplimit: NewProxyResolver: trusted prefix %d is invalid", i)
		}
		if t.Addr().Is4In6() && t.Bits() >= 96 {
			t = netip.PrefixFrom(t.Addr().Unmap(), t.Bits()-96)
		}
		p.trusted = append(p.trusted, t.Masked())
	}
	return p, nil
}

// ClientIP returns the client's address for r (see the type's doc). A nil
// resolver trusts no proxy, as IPKey with a nil resolver: the client is the
// peer, and no header is read.
func (p *ProxyResolver) ClientIP(r *http.Request) (netip.Addr, error) {
	if p == nil {
		a, _, err := peerIP(r.RemoteAddr)
		return a, err
	}
	a, _, err := p.clientIP(r)
	return a, err
}

func (p *ProxyResolver) trusts(a netip.Addr) bool {
	for _, t := range p.trusted {
		if t.Contains(a) {
			return true
		}
	}
	return false
}

// hop is one entry of the forwarding header.
type hop struct {
	text string // the address as written, without port and brackets
	addr netip.Addr
	ok   bool // text is an IP address
}

func (p *ProxyResolver) clientIP(r *http.Request) (netip.Addr, string, error) {
	peer, text, err := peerIP(r.RemoteAddr)
	if err != nil || !p.trusts(peer) {
		return peer, text, err
	}
	name := "X-Forwarded-For"
	if p.header == Forwarded {
		name = "Forwarded"
	}
	// The answer is the last hop not trusted (all hops right of it are
	// trusted), or the first hop if all are trusted.
	var h hop
	var seen bool
	// Right to left, stopping at the first hop not trusted: what the client
	// wrote further left is never read. For Forwarded this also keeps the
	// elements the proxies appended safe from a client's unclosed quote
	// (Forwarded quotes values, and such a quote would run over them).
	visit := func(x hop) bool {
		h, seen = x, true
		return x.ok && p.trusts(x.addr)
	}
	lines := r.Header[name]
	for i := len(lines) - 1; i >= 0; i-- {
		var stopped bool
		if p.header == Forwarded {
			stopped = forwardedHops(lines[i], visit)
		} else {
			stopped = forwardedForHops(lines[i], visit)
		}
		if stopped {
			break
		}
	}
	if !seen {
		return peer, text, nil
	}
	if !h.ok {
		return netip.Addr{}, "", fmt.Errorf("httplimit: %s: hop %q is not an IP address", name, clip(h.text))
	}
	return h.addr, h.text, nil
}

// forwardedForHops calls visit with each hop of one line of an
// X-Forwarded-For header, from the last to the first, while visit returns
// true, and reports whether visit returned false. An empty entry (a trailing
// comma, two commas in a row) is a hop that is not an IP address; a line
// that is empty or blank altogether has no hop.
func forwardedForHops(line string, visit func(hop) bool) (stopped bool) {
	if strings.Trim(line, " \t") == "" {
		return false
	}
	for {
		i := strings.LastIndexByte(line, ',')
		if !visit(parseHop(line[i+1:])) {
			return true
		}
		if i < 0 {
			return false
		}
		line = line[:i]
	}
}

// parseHop parses one hop: an IP address, with or without a port, IPv6 with
// or without brackets, surrounded by optional whitespace.
func parseHop(v string) hop {
	v = strings.Trim(v, " \t")
	h := hop{text: v}
	s := v
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return h
		}
		if rest := s[end+1:]; rest != "" && !validPort(rest) {
			return h
		}
		s = s[1:end]
	} else if i := strings.IndexByte(s, ':'); i >= 0 && strings.IndexByte(s[i+1:], ':') < 0 {
		// One colon: IPv4 with a port.
		if !validPort(s[i:]) {
			return h
		}
		s = s[:i]
	}
	a, ok := parseIP(s)
	if !ok {
		return h
	}
	return hop{text: s, addr: a, ok: true}
}

// validPort reports whether s is ":" followed by 1 to 5 digits.
func validPort(s string) bool {
	if len(s) < 2 || len(s) > 6 || s[0] != ':' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// forwardedHops calls visit with the for= hop of each element of one line of
// a Forwarded header, from the last element to the first, while visit
// returns true, and reports whether visit returned false. Elements are
// separated by commas outside quoted strings, found from the right, so that
// the elements to the right of an unclosed quote are read as written;
// within an element, pairs are separated by semicolons outside quoted
// strings. An element without for=, or a malformed one, is a hop that is
// not an IP address.
func forwardedHops(line string, visit func(hop) bool) (stopped bool) {
	if strings.Trim(line, " \t") == "" {
		return false
	}
	end := len(line)
	for end >= 0 {
		start := end
		quoted := false
		for start > 0 && (quoted || line[start-1] != ',') {
			if line[start-1] == '"' {
				quoted = !quoted
			}
			start--
		}
		if !visit(forwardedElement(line[start:end])) {
			return true
		}
		end = start - 1 // before the comma; -1 past the first element
	}
	return false
}

// forwardedElement returns the for= hop of one element of a Forwarded
// header. An element with two for= parameters is malformed (RFC 7239 allows
// each parameter once per element): its hop is not an IP address.
func forwardedElement(elem string) hop {
	var found hop
	seen := false
	i := 0
	for i < len(elem) {
		for i < len(elem) && (elem[i] == ' ' || elem[i] == '\t' || elem[i] == ';') {
			i++
		}
		start := i
		for i < len(elem) && elem[i] != '=' && elem[i] != ';' {
			i++
		}
		name := strings.Trim(elem[start:i], " \t")
		var value string
		bad := false
		if i < len(elem) && elem[i] == '=' {
			i++
			if i < len(elem) && elem[i] == '"' {
				j := i + 1
				for j < len(elem) && elem[j] != '"' {
					if elem[j] == '\\' {
						bad = true // escapes never occur in an address
						j++
					}
					j++
				}
				if j >= len(elem) { // unterminated
					value, bad, i = elem[i+1:], true, len(elem)
				} else {
					value, i = elem[i+1:j], j+1
				}
			} else {
				s := i
				for i < len(elem) && elem[i] != ';' {
					i++
				}
				value = strings.Trim(elem[s:i], " \t")
			}
		}
		if strings.EqualFold(name, "for") {
			if seen {
				return hop{text: "(for= given twice)"}
			}
			seen = true
			if bad {
				found = hop{text: value}
			} else {
				found = parseHop(value)
			}
		}
		for i < len(elem) && elem[i] != ';' {
			i++ // junk after a quoted string
		}
	}
	if !seen {
		return hop{text: "(no for= parameter)"}
	}
	return found
}
