package httplimit

import (
	"context"
	"time"
)

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

// ByQueries adapts l as Window and Ring do, but through a type that hides
// DecideStatus: it decides with AllowN and reads the quota with TokensAt and
// ReadyAt, as the adapter of multi does.
func ByQueries[L single](l L, ok bool) Limiter { return newOne(queriesOnly[L]{l}, ok) }

type queriesOnly[L single] struct{ l L }

func (q queriesOnly[L]) AllowN(now time.Time, n int) bool { return q.l.AllowN(now, n) }
func (q queriesOnly[L]) TokensAt(now time.Time) int       { return q.l.TokensAt(now) }
func (q queriesOnly[L]) ReadyAt(now time.Time, n int) (time.Time, bool) {
	return q.l.ReadyAt(now, n)
}
func (q queriesOnly[L]) Limit() int            { return q.l.Limit() }
func (q queriesOnly[L]) Window() time.Duration { return q.l.Window() }

// RateLimitValue is the one-rule RateLimit value m sends for rem and reset
// (whole seconds), from m's cache of values.
func RateLimitValue(m *Middleware, rem int, reset int64) []string {
	return m.values.value(m.items[0], rem, reset)
}

// ManyByQueries adapts l as Multi and Approx do, but assembles every
// Decision from separate calls: AllowN, then ReadyAt, RemainingAt and
// ResetsAt, as their adapter does when the fields are not wanted on
// admissions.
func ManyByQueries[L ruled](l L) Limiter { return manyQueries[L]{newMany(l, true).(*many[L])} }

type manyQueries[L ruled] struct{ *many[L] }

func (q manyQueries[L]) Decide(_ context.Context, _ string, now time.Time, cost int) (Decision, error) {
	var d Decision
	decideShared(&d, q.l, q.limit, now, cost)
	q.quota(&d, now)
	return d, nil
}

// RateLimitRulesValue is the RateLimit value m sends for d, a decision of
// several rules, from m's cache of such values.
func RateLimitRulesValue(m *Middleware, d *Decision) []string {
	return m.values.rules(m.items, d)
}
