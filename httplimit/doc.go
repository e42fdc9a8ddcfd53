// Package httplimit is net/http middleware that limits requests with the
// limiters of this module: one limiter shared by all requests, one per key
// (client address, API key, route), or several at once, answering refusals
// with 429 Too Many Requests, an exact Retry-After, and the IETF RateLimit
// and RateLimit-Policy fields (draft-ietf-httpapi-ratelimit-headers-11).
//
// # Model
//
// For each request the middleware computes a key ([KeyFunc]) and a cost
// ([Cost]), reads the clock once, and asks its [Limiter] for a [Decision]
// with one call of Decide. The Decision is the whole answer: admitted or
// not, why not, when the cost would fit (for Retry-After), and the state of
// each rule (for the RateLimit field). The adapters [Ring], [Window],
// [Multi], [Approx], [Keyed] and [KeyedWindow] wrap the limiters of this
// module; a limiter
// on a remote store implements Limiter itself, deciding in one round trip.
// [All] combines several limiters so that a request refused by one consumes
// nothing from the others.
//
// No client-supplied header is trusted unless configured: the default key is
// the peer's address, and a [ProxyResolver] reads forwarding headers only
// through the proxies the user names.
//
// # Concurrency
//
// A Middleware, the adapters, the key functions and ProxyResolver are safe
// for concurrent use. The middleware holds no lock while a limiter decides
// or while user code runs; with the adapters of this package, an admitted
// request allocates nothing when the RateLimit fields are off. When they are
// on, it allocates at most the RateLimit field's value (two allocations if
// that value is long, as with several rules with long names), and nothing
// when the remaining counts and resets repeat an earlier response's: the
// middleware remembers up to 512 values for one rule and 256 for several.
// The legacy fields ([Legacy]) add at most two allocations per field whose
// value (a remaining count, a reset) was not seen recently.
//
// docs/http.md describes the trust model for client addresses, the exact
// bytes sent, the bound of All under concurrency, the failure policy, and
// measurements.
package httplimit
