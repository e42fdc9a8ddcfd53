// Package keyed keeps one rate limiter per key (an API key, a user, a client
// address), created on first use, evicted when it carries no information, and
// bounded in number so that a flood of invented keys cannot exhaust memory.
//
// # Model
//
// A Limiter[K, L] maps keys of type K to limiters of type L: a *ring.Limiter,
// *window.Limiter, *multi.Limiter, *multi.Approx, or any type with the
// methods of [PerKey].
// For a key that is present, every call is the key's own limiter's call:
//
//	k.AllowN(key, now, n)  is  limiterOf(key).AllowN(now, n)
//
// so each key gets exactly the guarantees of its limiter type. A key that is
// absent behaves as a newly constructed limiter: its first admission creates
// it with the function given to [New].
//
// # Eviction
//
// A limiter whose IdleAt(now) is true decides, for every instant >= now,
// exactly as a newly constructed one would (see docs/api-contract.md). [Limiter.Sweep]
// removes such keys; the next call on a removed key creates a fresh limiter,
// which decides what the removed one would have decided. Eviction therefore
// changes no decision, provided no call later presents an instant earlier
// than the sweep's: to guarantee that, Sweep(now) also records now as the
// earliest instant the Limiter accepts, and every later call that presents an
// earlier instant is decided at now instead, as if it had arrived then. This
// is the contract's rule for time going backwards (a stale instant is
// clamped forward to the latest one recorded), applied across the whole
// Limiter.
//
// Sweeping is driven by the caller; the package starts no goroutine. Call
// Sweep(time.Now()) periodically, for instance from a goroutine with a
// [time.Ticker] that the application owns. A sweep visits every key once: one
// IdleAt call per key, plus one map update per removed key. Its cost is
// memory latency, a few cache misses per key: about 0.3 µs per key visited
// and 0.5–0.6 µs per key removed on the machine of docs/keyed.md, so 0.3 s of
// one goroutine for a million keys, while other calls proceed. The period
// trades memory (idle keys stay until the next sweep) against that cost; it
// does not affect decisions.
//
// # Bound
//
// A Limiter never holds more than MaxKeys keys ([MaxKeys], default
// [DefaultMaxKeys]). When a call needs a new key and the Limiter is full, idle
// keys go first: the calling goroutine sweeps at the call's instant, as Sweep
// does. To keep a flood of new keys from turning into back-to-back sweeps,
// such an automatic sweep is skipped when another sweep is running or when
// the previous automatic sweep began less than 16 times its own duration
// earlier (measured on the instants of the calls); the time spent in
// automatic sweeps is thus at most about 1/16 of one goroutine's time. If no
// room is made, the new key is refused: AllowN returns false, TokensAt
// reports 0, ReadyAt reports false and WaitN fails with an error wrapping
// [ErrFull], while keys already present keep their limiters. Refusing is the
// safe choice for abuse protection: evicting a key whose limiter is not idle
// would forget its admissions and let that key through again, so an attacker
// inventing keys could reset everyone else's limits.
//
// # Concurrency
//
// A Limiter is safe for concurrent use by multiple goroutines. Deciding for a
// key that is present is one lock-free map lookup and one call of the key's
// limiter, and allocates nothing. Creating a key takes a lock on one bucket
// of the map; when many goroutines meet a new key at once, the limiter is
// created exactly once and all of them decide on it. Sweeping and Delete take
// the same per-bucket lock, one key at a time. A call that races with the
// eviction of its key is decided again on the key's new limiter, so no
// admission is lost with an evicted limiter (see [Limiter.AllowN]).
package keyed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slidelimit/slidelimit/internal/clock"
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

// ErrNeverReady is wrapped by the error WaitN returns when n can never be
// admitted (the same value as ring.ErrNeverReady and the others).
var ErrNeverReady = clock.ErrNeverReady

// ErrDeadline is wrapped by the error WaitN returns when the context's
// deadline falls before the instant n could be admitted.
var ErrDeadline = clock.ErrDeadline

// ErrFull is wrapped by the error WaitN returns when the key is absent, the
// Limiter holds MaxKeys keys, and sweeping freed none.
var ErrFull = errors.New("keyed: store is full")

// DefaultMaxKeys is the bound on the number of keys when New gets no MaxKeys
// option.
const DefaultMaxKeys = 1_000_000

// MaxMaxKeys is the largest bound MaxKeys accepts.
const MaxMaxKeys = math.MaxInt32

// cacheLine is the false-sharing unit (64 bytes on amd64 and most arm64
// cores), as in the other packages of this module.
const cacheLine = 64

// autoSweepGap is how many times its own duration an automatic sweep (one
// started because the Limiter is full) waits, on the calls' instants, before
// the next one may start.
const autoSweepGap = 16

// An Option configures New.
type Option interface {
	apply(*config)
}

type config struct {
	maxKeys int
}

type maxKeysOption int

func (o maxKeysOption) apply(c *config) { c.maxKeys = int(o) }

// MaxKeys bounds the number of keys a Limiter holds, between 1 and MaxMaxKeys.
// The default is DefaultMaxKeys. See the package documentation for what
// happens when the bound is reached.
func MaxKeys(n int) Option { return maxKeysOption(n) }

// Entry states. An entry is live while it is in the map. A sweep that finds
// its limiter idle marks it sweeping, asks the limiter again, and then marks
// it live again or dead and removes it, all under the map's lock for the key.
// Delete marks it dead and removes it under the same lock.
const (
	live     uint32 = iota // a decision on lim counts
	sweeping               // a sweep is deciding; wait for its verdict
	dead                   // removed from the map; a decision on lim is void
)

// entry is the map's value for one key.
type entry[L PerKey] struct {
	lim L
	// state is one of live, sweeping, dead. It is only stored under the
	// map's lock for the key, and may be loaded at any time.
	state atomic.Uint32
}

// Limiter holds one limiter of type L per key of type K. Use New to create
// one; the zero value is not usable. A Limiter must not be copied after first
// use. It is safe for concurrent use by multiple goroutines.
type Limiter[K comparable, L PerKey] struct {
	// The fields up to floor are read by every call and written only by New
	// (and floor by sweeps).
	keys       store[K, *entry[L]]
	newLimiter func() (L, error)
	// fresh was made by New and is never decided on: it answers TokensAt and
	// ReadyAt for absent keys.
	fresh L
	// maxN is fresh's TokensAt: the largest n any key's limiter can admit.
	maxN    int
	maxKeys int64
	// floor is the latest instant given to a sweep, nil before the first.
	// Calls clamp their instant up to it after looking their key up.
	floor atomic.Pointer[time.Time]

	// n is written each time a key is created or removed, which a flood of
	// new keys does all the time: keep it off the cache line every call
	// reads.
	_ [cacheLine]byte

	// n counts the keys present plus the keys being created. A creator
	// reserves a slot (a CAS that keeps n <= maxKeys) before inserting, and
	// a remover releases it after removing, so the map never holds more
	// than maxKeys entries.
	n atomic.Int64

	// sweepMu is held for the whole of a sweep, so sweeps run one at a
	// time; floor and nextAuto are only stored with it held.
	sweepMu sync.Mutex
	// nextAuto is the earliest call instant at which a full Limiter may sweep
	// on its own again; nil means at once.
	nextAuto atomic.Pointer[time.Time]
}

// New returns a Limiter whose keys each get a limiter from newLimiter, which
// must return a new, independent limiter on every call (all with the same
// configuration, since eviction relies on a fresh limiter deciding as an idle
// one). New calls newLimiter once to check it and returns its error, if any,
// prefixed with "keyed: ". If newLimiter fails later, the key is not created
// and the call is refused.
//
// Typical use, with the key type given and the limiter type inferred:
//
//	k, err := keyed.New[string](func() (*ring.Limiter, error) {
//		return ring.New(100, time.Second)
//	}, keyed.MaxKeys(100_000))
func New[K comparable, L PerKey](newLimiter func() (L, error), opts ...Option) (*Limiter[K, L], error) {
	if newLimiter == nil {
		return nil, errors.New("keyed: newLimiter must not be nil")
	}
	c := config{maxKeys: DefaultMaxKeys}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.maxKeys < 1 || c.maxKeys > MaxMaxKeys {
		return nil, fmt.Errorf("keyed: MaxKeys must be between 1 and %d, got %d", MaxMaxKeys, c.maxKeys)
	}
	fresh, err := newLimiter()
	if err != nil {
		return nil, fmt.Errorf("keyed: newLimiter: %w", err)
	}
	if isNil(fresh) {
		return nil, errors.New("keyed: newLimiter returned a nil limiter and no error")
	}
	return &Limiter[K, L]{
		keys:       newStore[K, *entry[L]](),
		newLimiter: newLimiter,
		fresh:      fresh,
		maxN:       fresh.TokensAt(time.Now()),
		maxKeys:    int64(c.maxKeys),
	}, nil
}

// isNil reports whether l is a nil interface or a nil pointer (or other nil
// reference) in an interface.
func isNil(l any) bool {
	v := reflect.ValueOf(l)
	switch v.Kind() {
	case reflect.Invalid:
		return true
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// Allow is shorthand for AllowN(key, time.Now(), 1).
func (k *Limiter[K, L]) Allow(key K) bool {
	return k.AllowN(key, time.Now(), 1)
}

// Decide is AllowN, and also says why a refusal was not the key's own
// limit: admitted is AllowN(key, now, n), and err is nil when n was admitted
// or refused by the key's limiter. Otherwise nothing was admitted and err
// wraps ErrFull (the key is absent and no room could be made for it),
// ErrNeverReady (n < 0, or n above what a fresh limiter admits: nothing is
// created for the key), or the factory's own error (the key's limiter could
// not be created). Decide allocates nothing for a key that is present, nor
// when it refuses with ErrFull or ErrNeverReady.
func (k *Limiter[K, L]) Decide(key K, now time.Time, n int) (admitted bool, err error) {
	return k.allowN(key, now, n)
}

// AllowN reports whether n events may happen for key at now, and records
// them if so; it is the key's limiter's AllowN(now, n). An absent key is
// created first, unless n <= 0 (then AllowN returns n == 0 and creates
// nothing) or the Limiter is full (then it returns false; see the package
// documentation). A now earlier than the latest sweep's instant is replaced
// by that instant.
//
// AllowN allocates nothing for a key that is present. If a sweep evicts the
// key while AllowN decides, AllowN decides again on the key's new limiter,
// and that decision is the one returned: an admission is never lost with an
// evicted limiter. (One corner: if the first decision admitted at an instant
// so early that its admission no longer counted at the sweep's instant, the
// sweep may evict the limiter with that admission in it, and calls at such
// early instants racing with the same sweep may have seen it; it can only
// have made them refuse, never admit more.)
func (k *Limiter[K, L]) AllowN(key K, now time.Time, n int) bool {
	ok, _ := k.allowN(key, now, n)
	return ok
}

// allowN is AllowN; err is non-nil when the key could not be created.
//
// Why a decision on an evicted limiter is never lost: the sweep stores
// sweeping into e.state and then reads the limiter (IdleAt); a decision
// writes the limiter (AllowN) and then reads e.state. Both pairs are
// sequentially consistent atomics (or, for a limiter with a mutex, ordered
// by it), so at least one side sees the other's write. If the decision reads
// live, the sweep's IdleAt saw the admission and keeps the key, or evicts it
// only because the admission no longer counts at the sweep's instant. If it
// reads sweeping, it waits for the verdict; if it reads dead (at once or
// after waiting), the limiter has left the map and the decision is redone on
// the key's new one. The floor is read after the lookup: a key created after
// a sweep removed it is created after that sweep stored its floor, so the
// call cannot decide at an instant before the sweep's on the new limiter.
func (k *Limiter[K, L]) allowN(key K, now time.Time, n int) (bool, error) {
	if n <= 0 || n > k.maxN {
		if n == 0 {
			return true, nil
		}
		return false, errNeverReady
	}
	for {
		e, ok := k.keys.load(key)
		if !ok {
			var err error
			if e, err = k.create(key, now); err != nil {
				return false, err
			}
		}
		allowed := e.lim.AllowN(k.clamp(now), n)
		if e.state.Load() == live || e.settle() {
			return allowed, nil
		}
	}
}

// settle waits while a sweep decides about e, and reports whether e stayed
// live. A sweep holds the sweeping state only for one IdleAt call.
func (e *entry[L]) settle() bool {
	for {
		switch e.state.Load() {
		case live:
			return true
		case dead:
			return false
		}
		runtime.Gosched()
	}
}

// clamp returns now, or the latest sweep's instant if that is later.
func (k *Limiter[K, L]) clamp(now time.Time) time.Time {
	if f := k.floor.Load(); f != nil && now.Before(*f) {
		return *f
	}
	return now
}

// The errors create returns; preallocated, so that refusing a new key
// allocates nothing.
var (
	errFull       = fmt.Errorf("%w: key not created", ErrFull)
	errNeverReady = fmt.Errorf("keyed: n is negative or above the limit: %w", ErrNeverReady)
)

// create returns key's entry, creating it if it is still absent. It fails
// with an error wrapping ErrFull when the Limiter is full and a sweep (if one
// may run) frees no room.
func (k *Limiter[K, L]) create(key K, now time.Time) (*entry[L], error) {
	for swept := false; ; swept = true {
		if k.reserve() {
			var ferr error
			e, loaded := k.keys.loadOrTryCompute(key, func() (*entry[L], bool) {
				l, err := k.newLimiter()
				if err != nil {
					ferr = err
					return nil, true
				}
				return &entry[L]{lim: l}, false
			})
			if loaded || e == nil {
				k.n.Add(-1) // someone else created it, or newLimiter failed
			}
			if e == nil {
				return nil, fmt.Errorf("keyed: key not created: newLimiter: %w", ferr)
			}
			return e, nil
		}
		// Full. Another call may have created the key meanwhile.
		if e, ok := k.keys.load(key); ok {
			return e, nil
		}
		if swept || !k.sweepWhenFull(k.clamp(now)) {
			return nil, errFull
		}
	}
}

// reserve takes one of the maxKeys slots, if one is free. A refused
// reservation writes nothing.
func (k *Limiter[K, L]) reserve() bool {
	for {
		c := k.n.Load()
		if c >= k.maxKeys {
			return false
		}
		if k.n.CompareAndSwap(c, c+1) {
			return true
		}
	}
}

// sweepWhenFull sweeps at now unless another sweep is running or the last
// automatic sweep was too recent, and reports whether it removed any key.
func (k *Limiter[K, L]) sweepWhenFull(now time.Time) bool {
	if next := k.nextAuto.Load(); next != nil && now.Before(*next) {
		return false
	}
	if !k.sweepMu.TryLock() {
		return false
	}
	defer k.sweepMu.Unlock()
	if next := k.nextAuto.Load(); next != nil && now.Before(*next) {
		return false
	}
	start := time.Now()
	removed := k.sweepLocked(now)
	// At least one nanosecond: a second sweep at the same instant would
	// find nothing the first one left.
	next := now.Add(max(autoSweepGap*time.Since(start), 1))
	k.nextAuto.Store(&next)
	return removed > 0
}

// Sweep removes every key whose limiter is idle at now (IdleAt(now) is
// true), and returns how many it removed. Removing an idle key changes no
// decision at instants >= now, and Sweep records now so that no later call
// is decided at an earlier instant (see the package documentation).
//
// Sweep visits each key once, calling IdleAt without any lock and taking
// the map's lock for one key only to remove it. Calls on other keys, and on
// the key being removed, proceed meanwhile. Keys created during the sweep
// may or may not be visited. Sweeps run one at a time: a second Sweep waits
// for the first to finish.
func (k *Limiter[K, L]) Sweep(now time.Time) int {
	k.sweepMu.Lock()
	defer k.sweepMu.Unlock()
	return k.sweepLocked(now)
}

// sweepLocked is Sweep; it requires that k.sweepMu is held.
func (k *Limiter[K, L]) sweepLocked(now time.Time) int {
	if f := k.floor.Load(); f == nil || now.After(*f) {
		t := now
		k.floor.Store(&t) // before any removal: see allowN
	} else {
		now = *f
	}
	// Keys are checked in batches: loading the limiters of a batch first
	// lets the processor overlap their cache misses, which dominate the
	// cost of a sweep over more keys than the cache holds.
	var (
		keys    [sweepBatch]K
		entries [sweepBatch]*entry[L]
		lims    [sweepBatch]L
		b       int
		removed int
	)
	flush := func() {
		for i := range b {
			lims[i] = entries[i].lim
		}
		for i := range b {
			if lims[i].IdleAt(now) && k.evictIfIdle(keys[i], entries[i], now) {
				removed++
			}
		}
		clear(keys[:b]) // keep no key alive longer than the sweep needs
		b = 0
	}
	k.keys.rangeAll(func(key K, e *entry[L]) bool {
		keys[b], entries[b] = key, e
		if b++; b == sweepBatch {
			flush()
		}
		return true
	})
	flush()
	return removed
}

// sweepBatch is how many keys a sweep checks together.
const sweepBatch = 32

// evictIfIdle removes key if its entry is still e and e's limiter is idle at
// now, with the protocol described on allowN.
func (k *Limiter[K, L]) evictIfIdle(key K, e *entry[L], now time.Time) bool {
	removed := k.keys.deleteIf(key, func(cur *entry[L]) bool {
		if cur != e {
			return false
		}
		e.state.Store(sweeping)
		if !e.lim.IdleAt(now) {
			e.state.Store(live)
			return false
		}
		e.state.Store(dead)
		return true
	})
	if removed {
		k.n.Add(-1)
	}
	return removed
}

// Delete removes key and its limiter, forgetting its admissions: the next
// call on key starts from a fresh limiter. Unlike a sweep, Delete may change
// decisions; use it when a key is retired or its limit must be reset. A call
// deciding on key concurrently is decided on the limiter left in the map
// afterwards, as with a sweep.
func (k *Limiter[K, L]) Delete(key K) {
	removed := k.keys.deleteIf(key, func(e *entry[L]) bool {
		e.state.Store(dead)
		return true
	})
	if removed {
		k.n.Add(-1)
	}
}

// TokensAt returns the largest n that AllowN(key, now, n) would admit: the
// key's limiter's TokensAt, or a fresh limiter's for an absent key, or 0 for
// an absent key when the Limiter is full. It records nothing and creates no
// key.
func (k *Limiter[K, L]) TokensAt(key K, now time.Time) int {
	for {
		e, ok := k.keys.load(key)
		t := k.clamp(now)
		if !ok {
			if k.full() {
				return 0
			}
			return k.fresh.TokensAt(t)
		}
		tokens := e.lim.TokensAt(t)
		if e.state.Load() != dead {
			return tokens
		}
	}
}

// ReadyAt returns the earliest instant, not before now, at which
// AllowN(key, at, n) would admit n if nothing else were admitted for key
// meanwhile, and true; or false if n can never be admitted. It is the key's
// limiter's ReadyAt, or a fresh limiter's for an absent key. For an absent
// key when the Limiter is full it returns false too: when room will appear is
// not known. It records nothing and creates no key.
func (k *Limiter[K, L]) ReadyAt(key K, now time.Time, n int) (at time.Time, ok bool) {
	if n <= 0 {
		if n == 0 {
			return now, true
		}
		return time.Time{}, false
	}
	for {
		e, ok := k.keys.load(key)
		t := k.clamp(now)
		if !ok {
			if k.full() {
				return time.Time{}, false
			}
			at, ready := k.fresh.ReadyAt(t, n)
			return readyAt(now, t, at, ready)
		}
		at, ready := e.lim.ReadyAt(t, n)
		if e.state.Load() != dead {
			return readyAt(now, t, at, ready)
		}
	}
}

// readyAt maps a limiter's answer for the clamped instant t back to the
// caller's now: if n fits at t, AllowN(key, now, n) admits it (deciding at t),
// so the answer is now, as a limiter answers for a now it clamps itself.
func readyAt(now, t, at time.Time, ready bool) (time.Time, bool) {
	if ready && !at.After(t) {
		return now, true
	}
	return at, ready
}

// full reports whether no slot is free for a new key.
func (k *Limiter[K, L]) full() bool { return k.n.Load() >= k.maxKeys }

// Wait is shorthand for WaitN(ctx, key, 1).
func (k *Limiter[K, L]) Wait(ctx context.Context, key K) error {
	return k.WaitN(ctx, key, 1)
}

// WaitN blocks until AllowN(key, time.Now(), n) admits n, and returns nil;
// or returns ctx's error if ctx ends first. It fails at once, admitting
// nothing, with an error wrapping ErrNeverReady if n can never be admitted,
// ErrDeadline if ctx's deadline falls before the instant n could be
// admitted, or ErrFull if key is absent and the Limiter is full.
func (k *Limiter[K, L]) WaitN(ctx context.Context, key K, n int) error {
	w := waiter[K, L]{k: k, key: key}
	err := clock.Wait(ctx, "keyed", &w, n)
	if w.err != nil && errors.Is(err, ErrNeverReady) {
		return fmt.Errorf("keyed: WaitN(n=%d): %w", n, w.err)
	}
	return err
}

// waiter adapts one key of a Limiter to clock.Wait. When a key cannot be
// created it remembers why and reports the key as never ready, so that
// Wait stops instead of spinning.
type waiter[K comparable, L PerKey] struct {
	k   *Limiter[K, L]
	key K
	err error
}

func (w *waiter[K, L]) AllowN(now time.Time, n int) bool {
	ok, err := w.k.allowN(w.key, now, n)
	if err != nil {
		w.err = err
	}
	return ok
}

func (w *waiter[K, L]) ReadyAt(now time.Time, n int) (time.Time, bool) {
	if w.err != nil {
		return time.Time{}, false
	}
	return w.k.ReadyAt(w.key, now, n)
}

// Len returns the number of keys. It is exact when no call creates or
// removes a key concurrently; otherwise it may include keys whose creation
// or removal by a concurrent call is in progress (at most one per such
// call). It never exceeds MaxKeys.
func (k *Limiter[K, L]) Len() int { return int(k.n.Load()) }

// Range calls f for each key, until f returns false.
//
// Like sync.Map's Range, it does not correspond to a consistent snapshot: no
// key is visited twice, a key present for the whole call is visited once,
// and a key created or removed (by Delete or a sweep) during the call may or
// may not be visited. Range holds no lock while it calls f, so f may call any
// method of k, including Delete. Its cost is proportional to the size of the
// map's table, which shrinks some time after keys are removed.
func (k *Limiter[K, L]) Range(f func(key K) bool) {
	k.keys.rangeAll(func(key K, e *entry[L]) bool {
		if e.state.Load() == dead {
			return true
		}
		return f(key)
	})
}
