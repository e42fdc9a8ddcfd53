// Package httplimit is net/http middleware that limits requests with the
// limiters of this module: one limiter shared by all requests, one per key
// (client address, API key, route), or several at once, answering refusals
// with 429 Too Many Requests, an exact Retry-After, and the IETF RateLimit
// and RateLimit-Policy fields.
//
// The middleware needs one thing from a limiter: a [Limiter], whose Decide
// method gives the whole answer for one request in one call. The adapters
// [Ring], [Window], [Multi], [Approx] and [Keyed] wrap the limiters of this
// module; a limiter on a remote store implements Limiter itself.
package httplimit
