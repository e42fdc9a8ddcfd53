// Package keyed keeps one rate limiter per key (an API key, a user, a client
// address), created on first use, evicted when it carries no information, and
// bounded in number so that a flood of invented keys cannot exhaust memory.
//
// # Model
//
// A Limiter[K, L] maps keys of type K to limiters of type L: a *ring.Limiter,
// *window.Limiter, *multi.Limiter, *multi.Approx, or any type with the
// methods of [PerKey]. For a key that is present, every call is the key's own
// limiter's call:
//
//	k.AllowN(key, now, n)  is  limiterOf(key).AllowN(now, n)
//
// so each key gets exactly the guarantees of its limiter type. A key that is
// absent behaves as a newly constructed limiter: its first admission creates
// it with the function given to [New].
//
// A [Window] is the same store for one two-counter window per key (package
// window's limiter), with each key's state kept inline in a map of this
// package instead of in a limiter of its own: it answers every call as a
// Limiter[K, *window.Limiter] would, takes about a third of its memory, and
// fewer cache misses per decision when the keys do not fit in cache. What
// this documentation says of a Limiter holds for a Window, except where the
// Window's documentation says otherwise.
//
// # Eviction
//
// A limiter whose IdleAt(now) is true decides, for every instant >= now,
// exactly as a newly constructed one would. [Limiter.Sweep] removes such
// keys; the next call on a removed key creates a fresh limiter, which decides
// what the removed one would have decided. Eviction therefore changes no
// decision, provided no call later presents an instant earlier than the
// sweep's: to guarantee that, Sweep(now) also records now as the earliest
// instant the Limiter accepts, and every later call that presents an earlier
// instant is decided at now instead, as if it had arrived then. This is the
// limiters' own rule for time going backwards (a stale instant is clamped
// forward to the latest one recorded), applied across the whole Limiter.
//
// Sweeping is driven by the caller; the package starts no goroutine. Call
// Sweep(time.Now()) periodically, for instance from a goroutine with a
// [time.Ticker] that the application owns. A sweep visits every key once: one
// IdleAt call per key, plus one map update per removed key, so its cost grows
// with the number of keys, while calls on every key proceed. The period
// trades memory (idle keys stay until the next sweep) against that cost; it
// does not affect decisions.
//
// # Bound
//
// A Limiter never holds more than MaxKeys keys ([MaxKeys], default
// [DefaultMaxKeys]). When a call needs a new key and the Limiter is full,
// idle keys go first: the calling goroutine sweeps at the call's instant, as
// Sweep does (so, as after any sweep, a call at an earlier instant on any key
// is decided at that one: give every call its instant from one clock). To
// keep a flood of new keys from turning into back-to-back sweeps, such an
// automatic sweep is skipped when another automatic sweep is
// running or when the previous one began less than 16 times its own duration
// earlier (measured on the instants of the calls; a sweep that took more than
// twice as long per key as the one before it, as a goroutine preempted
// mid-sweep does, counts as twice that one); the time spent in automatic
// sweeps is thus at most about 1/16 of one goroutine's time. If no
// room is made, the new key is refused: AllowN returns false, Decide's error
// wraps [ErrFull], TokensAt reports 0, ReadyAt reports false and WaitN fails
// with an error wrapping ErrFull, while keys already present keep their
// limiters. Refusing is the safe choice for abuse protection: evicting a key
// whose limiter is not idle would forget its admissions and let that key
// through again, so an attacker inventing keys could reset everyone else's
// limits.
//
// MaxKeys bounds the keys, not the bytes: what a flood of invented keys can
// pin is MaxKeys times the memory of one key, and one key costs its
// limiter's memory plus about 90 bytes of map and entry, the copy of a
// string key's bytes included (about 75 bytes in all for a Window key of up
// to 16 bytes). A window limiter is 128 bytes whatever its limit; a ring
// limiter is 8 bytes per unit of limit, an exact multi limiter 8 bytes per
// unit of its largest limit. At the default of a million keys that is about
// 75 MB for a Window, 218 MB for window limiters, 1.1 GB for rings of limit
// 100 and 77 GiB for rings of limit 10,000. When the limiter's memory grows
// with its limit, set MaxKeys from a memory budget: budget / (bytes per
// key).
//
// A key whose type is a string type is stored as a copy of its bytes (a
// Window copies them into the key's own cell), never as the string the
// caller passed: a key cut from a larger string (a token, a request line)
// would otherwise keep that whole string alive, and MaxKeys times the cost
// of one key would no longer bound the memory. Only string types are
// copied: a key of another type that holds strings (a struct of strings, an
// interface holding a string) keeps the caller's strings alive; copy them
// with strings.Clone before, if they can be cut from large ones.
//
// # Failures
//
// No call admits anything it cannot account for. A call is refused, and
// [Limiter.Decide] says why, when the key is not equal to itself (a NaN
// inside it, or an interface holding a value that cannot be compared:
// [ErrBadKey]; such a key never enters the map), when n can never be
// admitted ([ErrNeverReady]; no key is created), when the Limiter is full
// (ErrFull), or when the function given to New fails or returns a nil
// limiter for a new key (the error it returned is wrapped). If that function
// panics, the panic reaches the caller and leaves nothing behind: no key, no
// reserved slot, no lock held. After a failed creation, TokensAt and ReadyAt
// answer for absent keys as the refusal did (0, and false) until a creation
// succeeds again.
//
// # Concurrency
//
// A Limiter is safe for concurrent use by multiple goroutines. Deciding for a
// key that is present is one lock-free map lookup and one call of the key's
// limiter, and allocates nothing. Creating a key calls the function given to
// New with no lock held, then stores the new limiter unless another call
// stored one first: when many goroutines meet a new key at once, each may
// build a limiter, one is kept, and all of them decide on it. The map takes a
// lock on one bucket to store or remove a key; no lock of the package is held
// while the user's code (the function given to New, Range's callback, or the
// methods of a user's own PerKey type) runs. A sweep marks a key as being
// inspected while it asks the key's limiter whether it is idle, and that mark
// works as a lock on the key: a call on that key waits for the verdict, which
// is as long as one IdleAt call (so a PerKey type's IdleAt must not wait for
// anything a caller of that key may hold while it calls the Limiter), and,
// for an idle key, its removal from the map, which waits for the map to
// finish growing or shrinking if it is (a copy of its entries). A call
// that races with the eviction of its key is decided again on the key's new
// limiter, so no admission is lost with an evicted limiter (see
// [Limiter.AllowN]).
package keyed

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/slidelimit/slidelimit"
)

// PerKey is the part of the limiter contract that a keyed Limiter uses for
// each key. *ring.Limiter, *window.Limiter, *multi.Limiter and *multi.Approx
// implement it. Every method must be safe for concurrent use, and IdleAt(now)
// true must mean that the limiter decides as a newly constructed one for every
// instant >= now.
type PerKey interface {
	AllowN(now time.Time, n int) bool
	TokensAt(now time.Time) int
	ReadyAt(now time.Time, n int) (at time.Time, ok bool)
	IdleAt(now time.Time) bool
}

// ErrNeverReady is wrapped by the error Decide and WaitN return when n can
// never be admitted: n < 0, or n above what a newly constructed limiter
// admits. It is the module's [slidelimit.ErrNeverReady], so errors.Is matches
// either (and ring.ErrNeverReady and the others, which are the same value).
var ErrNeverReady = slidelimit.ErrNeverReady

// ErrDeadline is wrapped by the error WaitN returns when the context's
// deadline falls before the instant n could be admitted. It is the module's
// [slidelimit.ErrDeadline].
var ErrDeadline = slidelimit.ErrDeadline

// ErrFull is wrapped by the error Decide and WaitN return when the key is
// absent, the Limiter holds MaxKeys keys, and sweeping freed none. Keys that
// concurrent calls are creating count: each call that meets a new key takes
// a place for it before it knows whether another call is creating the same
// key, and gives it back once one of them has stored it, so near the bound
// such calls, or a call for another new key, can be refused for a moment
// although a place is about to be free.
var ErrFull = errors.New("keyed: store is full")

// ErrBadKey is wrapped by the error Decide and WaitN return for a key that
// is not equal to itself: a floating-point NaN anywhere in it (in a field, an
// array element or an interface value), or an interface holding a value that
// cannot be compared (a slice, a map, a function). Such a key could never be
// found again, so it never enters the map.
var ErrBadKey = errors.New("keyed: key is not equal to itself (a NaN, or an uncomparable value in an interface)")

// DefaultMaxKeys is the bound on the number of keys when New gets no MaxKeys
// option.
const DefaultMaxKeys = 1_000_000

// MaxMaxKeys is the largest bound MaxKeys accepts.
const MaxMaxKeys = math.MaxInt32

// cacheLine is the false-sharing unit (64 bytes on amd64 and most arm64
// cores), as in the other packages of this module.
const cacheLine = 64

// autoSweepGap is how many times its own duration (as bound.paced counts
// it) an automatic sweep (one started because the Limiter is full) waits, on
// the calls' instants, before the next one may start.
const autoSweepGap = 16

// Entry states. An entry is live while it is in the map. A sweep that finds
// its limiter idle marks it sweeping (a CAS from live), asks the limiter
// again with no lock held, and then marks it live again, or dead and removes
// it from the map (the CAS to dead and the removal under the map's lock for
// the key). Delete marks it dead and removes it under the same lock.
const (
	live     uint32 = iota // a decision on lim counts
	sweeping               // a sweep is deciding; wait for its verdict
	dead                   // removed from the map; a decision on lim is void
)

// entry is the map's value for one key.
type entry[L PerKey] struct {
	lim L
	// state is one of live, sweeping, dead. It moves from live to sweeping
	// and back only by the sweep that holds it (CAS), and to dead either by
	// that sweep or by Delete, under the map's lock for the key.
	state atomic.Uint32
}

// Limiter holds one limiter of type L per key of type K. Use New to create
// one; the zero value is not usable (its methods panic with a message saying
// so). A Limiter must not be copied after first use. It is safe for
// concurrent use by multiple goroutines.
type Limiter[K comparable, L PerKey] struct {
	// The fields up to bound's floor are read by every call and written
	// only by New (and floor by sweeps); bound keeps what creations and
	// removals write on another cache line.
	keys       store[K, *entry[L]]
	newLimiter func() (L, error)
	// fresh was made by New and is never decided on: it answers TokensAt and
	// ReadyAt for absent keys (and DecideRules for costs that decide
	// nothing).
	fresh L
	// maxN is fresh's TokensAt when New made it: the largest n any key's
	// limiter can admit.
	maxN int
	// keyCheck says how keys are checked for being equal to themselves.
	keyCheck keyCheck
	// copyKeys: K is a string type, and a new key is stored as a copy.
	copyKeys bool
	// methods says how to reach L's optional methods without allocating.
	methods methods
	bound

	// failed is true when the latest call of newLimiter for a new key
	// failed, returned a nil limiter or panicked; the next success clears
	// it. TokensAt and ReadyAt read it for absent keys.
	failed atomic.Bool
}

// errZero is what the methods of a Limiter not made by New panic with.
const errZero = "keyed: Limiter used without New: make it with keyed.New"

// mustBeMade panics with a clear message if k was not made by New.
func (k *Limiter[K, L]) mustBeMade() {
	if k == nil || k.newLimiter == nil {
		panic(errZero)
	}
}

// Len returns the number of keys. It is exact when no call creates or
// removes a key concurrently; otherwise it may include keys whose creation
// or removal by a concurrent call is in progress (at most one per such
// call). It never exceeds MaxKeys.
func (k *Limiter[K, L]) Len() int {
	k.mustBeMade()
	return int(k.n.Load())
}

// Range calls f for each key, until f returns false. A nil f panics.
//
// Like sync.Map's Range, it does not correspond to a consistent snapshot: no
// key is visited twice, a key present for the whole call is visited once,
// and a key created or removed (by Delete or a sweep) during the call may or
// may not be visited. Range holds no lock while it calls f, so f may call any
// method of k, including Delete and Sweep; if f panics, the panic reaches
// Range's caller and leaves k unchanged. Its cost is proportional to the size
// of the map's table, which shrinks some time after keys are removed.
func (k *Limiter[K, L]) Range(f func(key K) bool) {
	k.mustBeMade()
	if f == nil {
		panic("keyed: Range: f is nil")
	}
	k.keys.rangeAll(func(key K, e *entry[L]) bool {
		if e.state.Load() == dead {
			return true
		}
		return f(key)
	})
}
