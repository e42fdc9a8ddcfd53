package httplimit

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/slidelimit/slidelimit/internal/nilvalue"
)

// Middleware limits the requests of the handlers it wraps. Build one with
// [New]; wrap handlers with [Middleware.Handler]. A Middleware is safe for
// concurrent use and holds no lock while a request is decided or while user
// code (a key function, a hook, the wrapped handler) runs.
//
// For each request that is not exempt, the middleware computes the key and
// the cost, reads the clock once, calls the limiter's Decide once, and then:
//
//   - admitted: sets the RateLimit fields (by default) and calls the handler;
//   - over the limit: 429 Too Many Requests with Retry-After, the whole
//     seconds until Decision.RetryAt rounded up and at least 1;
//   - a cost that can never fit (Reason Never): 429 without Retry-After,
//     with a body saying so;
//   - a keyed limiter full of keys (Reason Full): 503 Service Unavailable
//     without Retry-After;
//   - the key function failed: the key-error handler (default 500);
//   - the limiter failed (Decide returned an error): the failure policy,
//     fail closed with 503 by default, or fail open (the request passes).
type Middleware struct {
	lim   Limiter
	lazy  lazy // lim, if it is one of this package's adapters
	rules []Rule
	names []string
	items []string // the starts of the RateLimit value's items, one per rule
	// values are one-rule RateLimit values made for earlier responses.
	values *valueCache
	// policy is the RateLimit-Policy value, the same for every response,
	// so one slice is set on every header. Sharing it is safe because
	// nothing in net/http writes into a header value's slice: Header.Set
	// and direct assignment replace it, Header.Del removes it, and
	// Header.Add appends, which copies a slice of capacity 1 instead of
	// writing after its element. (Only code that assigns to the element
	// itself, h["Ratelimit-Policy"][0] = v, would change it everywhere.)
	policy []string

	key      KeyFunc
	cost     func(*http.Request) int
	fields   Fields
	legacy   LegacyReset
	exempt   func(*http.Request) bool
	refuse   func(http.ResponseWriter, *http.Request, Decision)
	keyErr   func(http.ResponseWriter, *http.Request, error)
	onRefuse func(*http.Request, string, Decision)
	failure  Failure
	onError  func(*http.Request, error)

	// now is time.Now, or a clock's now for this package's adapters; tests
	// replace it (export_test.go) to inject instants.
	now func() time.Time
}

// An Option configures New. Each option may be given once: New rejects an
// option given twice rather than let the later one replace the earlier in
// silence (a fail-open policy over a fail-closed one, another key function).
// A nil Option is skipped.
type Option interface {
	apply(*Middleware)
	name() string
}

// option is every Option: the setting it applies and the name of the
// function that made it, for New's errors.
type option struct {
	set  func(*Middleware)
	what string
}

func (o option) apply(m *Middleware) { o.set(m) }
func (o option) name() string        { return o.what }

// Key sets the function that gives each request's key. The default is
// [RemoteAddr]: the peer's IP address, IPv6 grouped by /64, trusting no
// header. A limiter shared by all keys ignores the key.
func Key(f KeyFunc) Option { return option{func(m *Middleware) { m.key = f }, "Key"} }

// Cost sets the function that gives each request's cost (its weight against
// the limits). The default costs 1. A cost of 0 passes without counting; a
// negative cost, or one larger than a rule's limit, is refused with Reason
// Never.
func Cost(f func(r *http.Request) int) Option {
	return option{func(m *Middleware) { m.cost = f }, "Cost"}
}

// SendFields sets when the RateLimit and RateLimit-Policy fields are sent.
// The default is FieldsAlways.
func SendFields(f Fields) Option { return option{func(m *Middleware) { m.fields = f }, "SendFields"} }

// Legacy also sends X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset (whenever the RateLimit fields are sent), describing the
// rule with the least remaining, with the Reset format given. Off by default.
func Legacy(reset LegacyReset) Option {
	return option{func(m *Middleware) { m.legacy = reset }, "Legacy"}
}

// PolicyNames names the rules in the RateLimit fields, one name per rule in
// the order of the limiter's Rules(): 1 to 64 printable ASCII characters
// other than '"' and '\', all different. The default names rule i
// "<limit>-per-<window>", such as "100-per-1s" or "5000-per-1h".
func PolicyNames(names ...string) Option {
	// Never nil, so that New tells no names (an error) from no option.
	names = append([]string{}, names...)
	return option{func(m *Middleware) { m.names = names }, "PolicyNames"}
}

// Exempt sets a function that lets matching requests pass without a decision
// (health checks, internal callers). Exempt requests count nothing and get no
// fields.
func Exempt(f func(r *http.Request) bool) Option {
	return option{func(m *Middleware) { m.exempt = f }, "Exempt"}
}

// OnRefusal sets a callback run on each refusal (for logging and metrics),
// with the request's key and the decision, before the response is written.
func OnRefusal(f func(r *http.Request, key string, d Decision)) Option {
	return option{func(m *Middleware) { m.onRefuse = f }, "OnRefusal"}
}

// RefusalHandler replaces the response to a refused request. When it runs,
// Retry-After and the RateLimit fields are already set on w's header; it
// must write the status and body. The default writes 429 (503 for Reason
// Full) with a short plain-text body.
func RefusalHandler(f func(w http.ResponseWriter, r *http.Request, d Decision)) Option {
	return option{func(m *Middleware) { m.refuse = f }, "RefusalHandler"}
}

// KeyErrorHandler replaces the response to a request whose key function
// failed. The default writes 500 Internal Server Error and does not call
// the wrapped handler.
func KeyErrorHandler(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return option{func(m *Middleware) { m.keyErr = f }, "KeyErrorHandler"}
}

// Failure is the policy applied when the limiter fails: Decide returns an
// error (a remote store unreachable, a per-key factory failing).
type Failure uint8

const (
	// FailClosed refuses the request with 503 Service Unavailable. It is
	// the default.
	FailClosed Failure = iota
	// FailOpen lets the request pass, undecided and without fields.
	FailOpen
)

// OnLimiterError sets the failure policy, and a callback (nil for none) run
// with each error of the limiter before the policy is applied. Neither
// applies to a request whose own context ended before the limiter decided
// (the client went away, or an outer handler's deadline passed): it is
// refused with 503 and the callback is not called, since passing it under
// FailOpen would let a client skip the limit by cancelling its requests.
func OnLimiterError(p Failure, f func(r *http.Request, err error)) Option {
	return option{func(m *Middleware) { m.failure, m.onError = p, f }, "OnLimiterError"}
}

// New returns a Middleware deciding with l. It fails if l is nil (also a nil
// pointer in the interface), has no rules, more than MaxRules, or an invalid
// rule, or if an option is invalid or given twice.
func New(l Limiter, opts ...Option) (*Middleware, error) {
	if nilvalue.Is(l) {
		return nil, errors.New("httplimit: limiter is nil")
	}
	m := &Middleware{lim: l, key: RemoteAddr, now: time.Now}
	var given []string
	for _, o := range opts {
		if o == nil {
			continue
		}
		n := o.name()
		if slices.Contains(given, n) {
			return nil, fmt.Errorf("httplimit: %s: option given twice", n)
		}
		given = append(given, n)
		o.apply(m)
	}
	m.rules = append([]Rule(nil), l.Rules()...)
	switch {
	case len(m.rules) == 0:
		return nil, errNoRules
	case len(m.rules) > MaxRules:
		return nil, fmt.Errorf("httplimit: limiter has %d rules, at most %d are supported", len(m.rules), MaxRules)
	}
	for i, r := range m.rules {
		if r.Limit < 1 || r.Window < 1 {
			return nil, fmt.Errorf("httplimit: limiter's rule %d has limit %d and window %v; both must be positive", i, r.Limit, r.Window)
		}
	}
	if m.names == nil {
		m.names = defaultNames(m.rules)
	} else if err := checkNames(m.names, m.rules); err != nil {
		return nil, err
	}
	if m.key == nil {
		return nil, errors.New("httplimit: Key: key function is nil")
	}
	if m.fields > FieldsOff {
		return nil, fmt.Errorf("httplimit: SendFields: unknown value %d", m.fields)
	}
	if m.legacy > ResetUnix {
		return nil, fmt.Errorf("httplimit: Legacy: unknown reset format %d", m.legacy)
	}
	if m.failure > FailOpen {
		return nil, fmt.Errorf("httplimit: OnLimiterError: unknown failure policy %d", m.failure)
	}
	m.policy = []string{policyValue(m.names, m.rules)}[:1:1]
	m.items = rateLimitItems(m.names)
	m.values = new(valueCache)
	if m.lazy, _ = l.(lazy); m.lazy != nil {
		// An in-process limiter compares instants on the monotonic clock,
		// which a clock reads in one call instead of time.Now's two. A
		// remote limiter keeps time.Now: it may send the wall clock to a
		// store shared with other processes.
		m.now = newClock().now
	}
	return m, nil
}

// Rules returns the policy the middleware announces, in the order of the
// RateLimit fields.
func (m *Middleware) Rules() []Rule { return append([]Rule(nil), m.rules...) }

// Handler returns next wrapped by the middleware: the usual
// func(http.Handler) http.Handler shape, so m.Handler plugs into routers
// that take middleware of that shape.
//
// It panics if m was not made by New (a zero Middleware, or a nil pointer) or
// if next is nil: both are programming errors, reported when the handler is
// built rather than as a nil dereference at the first request.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	if m == nil || m.lim == nil {
		panic("httplimit: Middleware used without New: make it with httplimit.New")
	}
	if next == nil {
		panic("httplimit: Handler: the handler to wrap is nil")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.serve(w, r, next)
	})
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if m.exempt != nil && m.exempt(r) {
		next.ServeHTTP(w, r)
		return
	}
	key, err := m.key(r)
	if err != nil {
		if m.keyErr != nil {
			m.keyErr(w, r, err)
		} else {
			plain(w, http.StatusInternalServerError, "rate limit key unavailable\n")
		}
		return
	}
	cost := 1
	if m.cost != nil {
		cost = m.cost(r)
	}
	now := m.now()
	if m.lazy != nil {
		m.lazy.serve(m, w, r, next, key, now, cost)
		return
	}
	d, err := m.lim.Decide(r.Context(), key, now, cost)
	// A Limiter of the user's may report any count: one entry per rule at
	// most, as the fields and the hooks expect.
	d.NumQuota = min(max(d.NumQuota, 0), len(m.rules))
	m.respond(w, r, next, key, now, &d, err)
}

// respond answers the request r, decided for key at now: d and err are the
// limiter's answer.
func (m *Middleware) respond(w http.ResponseWriter, r *http.Request, next http.Handler, key string, now time.Time, d *Decision, err error) {
	if err != nil {
		if r.Context().Err() != nil {
			// The request's own context ended first (the client went
			// away, or an outer handler's deadline passed): nothing was
			// decided, and this is no failure of the limiter. Letting it
			// pass under FailOpen would let a client skip the limit by
			// cancelling its own requests.
			plain(w, http.StatusServiceUnavailable, "request ended before the rate limiter decided\n")
			return
		}
		if m.onError != nil {
			m.onError(r, err)
		}
		if m.failure == FailOpen {
			next.ServeHTTP(w, r)
		} else {
			plain(w, http.StatusServiceUnavailable, "rate limiter unavailable\n")
		}
		return
	}
	if d.Allowed {
		if m.fields == FieldsAlways {
			m.setFields(w.Header(), d, now)
		}
		next.ServeHTTP(w, r)
		return
	}
	h := w.Header()
	if m.fields != FieldsOff {
		if d.Reason == Full {
			// The key has no quota yet: announce the policy only. A
			// RateLimit field would say r=0;t=0, "back now", to a client
			// that would only meet the full store again.
			if d.NumQuota > 0 {
				h[fieldPolicy] = m.policy
			}
		} else {
			m.setFields(h, d, now)
		}
	}
	if d.Reason == OverLimit {
		h[fieldRetryAfter] = intValue(retryAfter(d.RetryAt, now))
	}
	if m.onRefuse != nil {
		m.onRefuse(r, key, *d)
	}
	if m.refuse != nil {
		m.refuse(w, r, *d)
		return
	}
	switch d.Reason {
	case Never:
		plain(w, http.StatusTooManyRequests, "request cost exceeds the rate limit: it can never be admitted\n")
	case Full:
		plain(w, http.StatusServiceUnavailable, "rate limiter is full\n")
	default:
		plain(w, http.StatusTooManyRequests, "too many requests\n")
	}
}

// quotaOnAdmit reports whether an admitted request needs the per-rule quota:
// only if its response carries the fields. A refusal always needs it (the
// hooks see it).
func (m *Middleware) quotaOnAdmit() bool { return m.fields == FieldsAlways }

// retryAfter is the Retry-After value for a refusal at now: the whole seconds
// until at, rounded up, and at least 1 so that a client never retries at
// once (at <= now happens only when the limiter's answer raced with others).
func retryAfter(at, now time.Time) int64 {
	return max(seconds(at.Sub(now)), 1)
}

var (
	textPlain = []string{"text/plain; charset=utf-8"}[:1:1]
	nosniff   = []string{"nosniff"}[:1:1]
)

// plain writes a short plain-text response, as http.Error does, without
// allocating. As http.Error, it drops a Content-Length an outer handler may
// have set for another body: a server would cut this one short of it.
func plain(w http.ResponseWriter, code int, body string) {
	h := w.Header()
	delete(h, "Content-Length")
	h["Content-Type"] = textPlain
	h["X-Content-Type-Options"] = nosniff
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}
