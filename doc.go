// Package slidelimit is the overview of a module of rate limiters for Go
// services: exact or approximate sliding windows, one limit or several at
// once, one limiter or one per key, with lock-free decisions that allocate
// nothing. This package itself holds only what the limiters share: the errors
// ([ErrNeverReady], [ErrDeadline]) and [Status], a decision with what remains
// and when to retry; the limiters live in the packages below.
//
// # Which limiter
//
// Windows are half-open: the window ending at t is (t-W, t]. Every limiter
// has the same methods (those of golang.org/x/time/rate): Allow, AllowN at a
// given instant, TokensAt, ReadyAt (for an HTTP Retry-After), Wait and WaitN,
// IdleAt.
//
//	limiter          guarantee                              memory                 pick it when
//	ring.New         exact: at most limit in every window   8 bytes x limit        the limit is a contract
//	                 of length W, whatever its alignment                           ("never more than 100 calls
//	                                                                               to the provider in any second")
//	window.New       approximate: the two-counter estimate  128 bytes, whatever    large limits, or many keys
//	                 computed exactly; at most 2*limit-1    the limit              where a few words per key
//	                 in some window of length W                                    matter more than exactness
//	multi.New        exact, for several rules at once       8 bytes x the largest  "10 per second and 1000 per
//	                 (all or nothing: a refused call        limit, shared by all   hour", exact
//	                 counts against no rule)                rules
//	multi.NewApprox  approximate per rule, as window,       a few words per rule   several rules with large
//	                 all or nothing                                                limits
//	keyed.New        any of the above per key, created on   the limiter's, plus    one limit per client, user
//	                 first use, idle keys evicted, a hard   about 90 bytes per     or API key
//	                 bound on the number of keys            key, its bytes too
//	keyed.NewWindow  window's per key, with keyed's          about 75 bytes per     one limit per key over
//	                 eviction and bound; each key's state   key, a key of up to    many keys
//	                 inline in the map                      16 bytes included
//
// At a million keys of up to 16 bytes, a ring of limit 10 kept per key costs
// about 330 bytes per key in keyed, a window.Limiter about 218 and a key of
// keyed.NewWindow about 75, whatever the limit, the key's bytes included.
//
// # Per process
//
// Every limiter of these packages counts in the memory of one process: a
// service with several instances gets one limit per instance. To share a
// limit between instances, use the module
// [github.com/slidelimit/slidelimit/redis], which keeps the same two models
// (the exact log and the two-counter window, several rules at once) in Redis.
//
// # Packages
//
//   - [github.com/slidelimit/slidelimit/ring]: the exact sliding log.
//   - [github.com/slidelimit/slidelimit/window]: the two-counter window.
//   - [github.com/slidelimit/slidelimit/multi]: several rules, exact
//     (Limiter) or approximate (Approx).
//   - [github.com/slidelimit/slidelimit/keyed]: one limiter per key, or one
//     two-counter window per key kept inline (Window).
//   - [github.com/slidelimit/slidelimit/httplimit]: net/http middleware over
//     any of them, answering refusals with 429 and Retry-After.
//
// The algorithms, their proofs, the concurrency protocols and the
// measurements are in the docs directory of the repository, linked from its
// README.
package slidelimit
