package keyed

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/internal/twocount"
	"github.com/slidelimit/slidelimit/internal/twoword"
	"github.com/slidelimit/slidelimit/window"
)

// Window keeps one two-counter sliding window per key: for each key, it
// decides every call exactly as a *window.Limiter with the same limit and
// window would (the same formula, the same concurrent contract), with each
// key's state kept inline in the map instead of in a limiter of its own. It
// is what Limiter[K, *window.Limiter] does, smaller and faster when the keys
// do not fit in the processor's caches: a key costs one 16-byte slot of the
// map, at 55 to 80% load, plus 16 bytes of state beside the key in one
// allocation, where Limiter[K, *window.Limiter] costs the map's entry, its
// own entry and the limiter's two padded cache lines. A string key's bytes
// are copied into that allocation (48 bytes in all for a key of up to 16
// bytes, 64 up to 32, 80 up to 48, 128 up to 96; a longer key gets a copy of
// its own), so the Window never keeps a caller's string alive: a key cut
// from a larger string (a token, a request line) costs its own length, not
// the string's. Deciding for a present key reads the map's slot (one cache
// line, mostly) and the key's cell, which holds the key and both counter
// words. See the repository's documentation of keyed for the layout and
// measurements.
//
// Everything the package documentation says of a Limiter holds for a Window:
// eviction (Sweep, and the floor it records), the MaxKeys bound and its
// automatic sweeps, keys not equal to themselves, and concurrency, with one
// difference: there is no function to call for a new key, so creating one
// cannot fail except for ErrFull, and a sweep decides whether a key is idle
// itself and evicts it with one compare-and-swap, so a call on a key being
// swept never waits.
//
// A Window is safe for concurrent use by multiple goroutines. Deciding for a
// key that is present is lock-free and allocates nothing; creating a key
// allocates its cell and takes a lock on one of the map's 256 shards, as
// does removing one.
type Window[K comparable] struct {
	// The fields up to bound's floor are read by every call and written
	// only by NewWindow (and floor by sweeps); bound keeps what creations
	// and removals write on another cache line.
	keys     *table[K]
	rule     twocount.Rule
	base     clock.Base
	keyCheck keyCheck
	bound
}

// NewWindow returns a Window whose keys each get a two-counter window of
// limit per window, as window.New(limit, window) makes: limit must be in
// [1, window.MaxLimit] and window in [1ns, window.MaxWindow]. It returns an
// error prefixed with "keyed: " for arguments out of range, and for a
// MaxKeys option out of range or given twice.
//
//	w, err := keyed.NewWindow[string](100, time.Second, keyed.MaxKeys(100_000))
func NewWindow[K comparable](limit int, window time.Duration, opts ...Option) (*Window[K], error) {
	if err := validWindow(limit, window); err != nil {
		return nil, err
	}
	c, err := configure(opts)
	if err != nil {
		return nil, err
	}
	return &Window[K]{
		rule:     twocount.Rule{Limit: int64(limit), Window: int64(window)},
		base:     clock.NewBase(),
		keyCheck: keyCheckFor(reflect.TypeFor[K]()),
		bound:    bound{maxKeys: int64(c.maxKeys)},
		keys:     newTable[K](stringKeys[K]()),
	}, nil
}

// validWindow checks NewWindow's limit and window against package window's
// bounds, with package window's words.
func validWindow(limit int, w time.Duration) error {
	if limit < 1 || limit > window.MaxLimit || w < 1 || w > window.MaxWindow {
		_, err := window.New(limit, w)
		return fmt.Errorf("keyed: %w", err)
	}
	return nil
}

// errWindowZero is what the methods of a Window not made by NewWindow panic
// with.
const errWindowZero = "keyed: Window used without NewWindow: make it with keyed.NewWindow"

// mustBeMade panics with a clear message if w was not made by NewWindow.
func (w *Window[K]) mustBeMade() {
	if w == nil || w.keys == nil {
		panic(errWindowZero)
	}
}

// Limit returns the limit each key's window has.
func (w *Window[K]) Limit() int {
	w.mustBeMade()
	return int(w.rule.Limit)
}

// Window returns the length of each key's window.
func (w *Window[K]) Window() time.Duration {
	w.mustBeMade()
	return time.Duration(w.rule.Window)
}

// Len returns the number of keys, as Limiter.Len does.
func (w *Window[K]) Len() int {
	w.mustBeMade()
	return int(w.n.Load())
}

// Allow is shorthand for AllowN(key, time.Now(), 1), reading only the
// monotonic clock.
func (w *Window[K]) Allow(key K) bool {
	w.mustBeMade()
	ok, _ := w.decide(key, w.base.Now(), 1)
	return ok
}

// AllowN reports whether n events may happen for key at now, and records
// them if so, as the key's window.Limiter's AllowN(now, n) would. An absent
// key is created first, unless n == 0 (then AllowN returns true and creates
// nothing, for any key equal to itself). AllowN returns false, creating
// nothing, when n < 0, n > Limit(), key is not equal to itself, or the
// Window is full (see the package documentation); Decide says which. A now
// earlier than the latest sweep's instant is replaced by that instant. It
// allocates nothing for a key that is present. A call that races with the
// eviction of its key decides on the key's new state, so no admission is
// lost with an evicted one.
func (w *Window[K]) AllowN(key K, now time.Time, n int) bool {
	ok, _ := w.allowN(key, now, n)
	return ok
}

// Decide is AllowN, and also says why a refusal was not the key's own limit:
// err is nil when n was admitted or refused by the key's window, and
// otherwise wraps ErrBadKey, ErrNeverReady (n < 0 or n > Limit()) or ErrFull,
// with nothing admitted and no key created. Decide allocates nothing for a
// key that is present, nor when it refuses (except that a refusal which
// starts an automatic sweep records that sweep's instants, two small
// allocations per sweep, and the refusal of a bad key that only comparing
// finds, as Limiter.Decide says).
func (w *Window[K]) Decide(key K, now time.Time, n int) (admitted bool, err error) {
	return w.allowN(key, now, n)
}

// allowN is Decide.
func (w *Window[K]) allowN(key K, now time.Time, n int) (bool, error) {
	w.mustBeMade()
	return w.decide(key, w.base.Offset(now), n)
}

// decide is Decide at offset off from base. A sweep evicts a key's cell by
// retiring its state (one compare-and-swap on the count word, from a state it
// judged idle), and an admission is a compare-and-swap on the same word:
// either the admission lands first, and the sweep finds the state no longer
// as it judged it and judges again, or the sweep lands first, and the
// admission fails, sees the state dead, and decides again on the key's new
// cell. The floor is read after the lookup, as in Limiter.allowN, and
// compared as an offset from base, the measure the state itself uses.
func (w *Window[K]) decide(key K, off int64, n int) (bool, error) {
	if !validKey(w.keyCheck, key) {
		return false, ErrBadKey
	}
	if n <= 0 || int64(n) > w.rule.Limit {
		if n == 0 {
			return true, nil
		}
		return false, errNeverReady
	}
	h := w.keys.hash(key)
	for {
		c := w.keys.find(h, key)
		if c == nil {
			var err error
			if c, err = w.create(h, key, off); err != nil {
				return false, err
			}
		}
		ok, dead := twoword.Allow(&c.at, &c.cnt, &w.rule, w.clampOff(off), n)
		if !dead {
			return ok, nil
		}
	}
}

// clampOff returns off, or the latest sweep's instant as an offset from base
// if that is later.
func (w *Window[K]) clampOff(off int64) int64 {
	if f := w.floor.Load(); f != nil {
		return max(off, w.base.Offset(*f))
	}
	return off
}

// create returns key's cell, creating it if it is still absent, or fails
// with errFull when the Window is full and a sweep (if one may run) frees no
// room.
func (w *Window[K]) create(h uint64, key K, off int64) (*cell[K], error) {
	for swept := false; ; swept = true {
		if w.reserve() {
			c := newCell(key, w.keys.inline)
			got, loaded := w.keys.loadOrInsert(h, c)
			if loaded {
				w.n.Add(-1)
			}
			return got, nil
		}
		// Full. Another call may have created the key meanwhile.
		if c := w.keys.find(h, key); c != nil {
			return c, nil
		}
		if swept || !w.sweepWhenFull(w.base.Time(w.clampOff(off)), w.sweep) {
			return nil, errFull
		}
	}
}

// TokensAt returns the largest n that AllowN(key, now, n) would admit: the
// key's window's, or Limit() for an absent key. It returns 0 for a key not
// equal to itself, and for an absent key when the Window is full. It records
// nothing and creates no key.
func (w *Window[K]) TokensAt(key K, now time.Time) int {
	w.mustBeMade()
	if !validKey(w.keyCheck, key) {
		return 0
	}
	st, ok := w.view(w.keys.hash(key), key, w.base.Offset(now))
	if !ok {
		if w.full() {
			return 0
		}
		return int(w.rule.Limit)
	}
	return int(st.Remaining(&w.rule))
}

// view returns the state of key as a call at offset off from base decides on
// it, and true, or false if key is absent.
func (w *Window[K]) view(h uint64, key K, off int64) (twoword.Seen, bool) {
	for {
		c := w.keys.find(h, key)
		if c == nil {
			return twoword.Seen{}, false
		}
		t, ws, p, q, dead := twoword.View(&c.at, &c.cnt, &w.rule, w.clampOff(off))
		if !dead {
			return twoword.Seen{T: t, Start: ws, Prev: p, Curr: q}, true
		}
	}
}

// ReadyAt returns the earliest instant, not before now, at which
// AllowN(key, at, n) would admit n if nothing else were admitted for key
// meanwhile, and true; or false if n can never be admitted. It is the key's
// window's ReadyAt, or now for an absent key. It returns now and true for
// n == 0 and a key equal to itself, and false for n < 0, n > Limit(), a key
// not equal to itself, an absent key when the Window is full (when room will
// appear is not known), and an n that does not fit at the last instant a
// window can tell apart (about 63 years after NewWindow). It records nothing
// and creates no key.
func (w *Window[K]) ReadyAt(key K, now time.Time, n int) (at time.Time, ok bool) {
	w.mustBeMade()
	if !validKey(w.keyCheck, key) {
		return time.Time{}, false
	}
	at, ok, _ = w.readyAt(key, now, n)
	return at, ok
}

// readyAt is ReadyAt for a valid key, and also reports whether it answered
// false for want of room for the key (absent from a full store), rather
// than because n can never fit.
func (w *Window[K]) readyAt(key K, now time.Time, n int) (at time.Time, ok, absent bool) {
	if n <= 0 || int64(n) > w.rule.Limit {
		if n == 0 {
			return now, true, false
		}
		return time.Time{}, false, false
	}
	off := w.base.Offset(now)
	st, found := w.view(w.keys.hash(key), key, off)
	if !found {
		if w.full() {
			return time.Time{}, false, true
		}
		return now, true, false
	}
	// As window.Limiter.ReadyAt.
	at, ok = st.ReadyAt(&w.rule, w.base, now, off, int64(n))
	return at, ok, false
}

// Wait is shorthand for WaitN(ctx, key, 1).
func (w *Window[K]) Wait(ctx context.Context, key K) error {
	return w.WaitN(ctx, key, 1)
}

// WaitN blocks until AllowN(key, time.Now(), n) admits n, and returns nil,
// with the errors Limiter.WaitN has (ctx's error, ErrDeadline, and what
// Decide reports).
func (w *Window[K]) WaitN(ctx context.Context, key K, n int) error {
	w.mustBeMade()
	if !validKey(w.keyCheck, key) {
		return &waitError{n: n, err: ErrBadKey}
	}
	return waitFor(ctx, w, key, n)
}

// Sweep removes every key whose window is idle at now (nothing admitted in
// the window containing now or in the one before it), and returns how many
// it removed. As Limiter.Sweep, it changes no decision at instants >= now,
// records now as the earliest instant later calls are decided at, and
// replaces a now earlier than an earlier sweep's instant by that instant.
//
// Sweep visits each key once, judging idleness with no lock held, and takes
// a shard's lock only to remove the idle keys it found there. Decisions on
// present keys proceed meanwhile and never wait for it; a call that creates or
// deletes a key waits for that shard's lock while the sweep holds it (for at
// most 32 removals, and a rebuild of the shard's array if they leave it
// sparse). Keys created during the sweep
// may or may not be visited. Sweeps may run concurrently.
func (w *Window[K]) Sweep(now time.Time) int {
	w.mustBeMade()
	return w.sweep(now)
}

// sweep is Sweep.
func (w *Window[K]) sweep(now time.Time) int {
	now = w.raiseFloor(now) // before any removal: see allowN
	off := w.base.Offset(now)
	var (
		idle    [sweepBatch]*cell[K]
		b       int
		removed int
	)
	for i := range w.keys.shards {
		sh := &w.keys.shards[i]
		flush := func() {
			if b == 0 {
				return
			}
			sh.mu.Lock()
			for _, c := range idle[:b] {
				if twoword.Retire(&c.at, &c.cnt, &w.rule, off) && sh.removeLocked(w.keys.hash(c.key), c) {
					removed++
					w.n.Add(-1)
				}
			}
			sh.mu.Unlock()
			clear(idle[:b]) // keep no cell alive longer than the sweep needs
			b = 0
		}
		w.keys.rangeShard(i, func(c *cell[K]) bool {
			if isIdle, _ := twoword.Idle(&c.at, &c.cnt, &w.rule, off); isIdle {
				idle[b] = c
				if b++; b == sweepBatch {
					flush()
				}
			}
			return true
		})
		flush()
	}
	return removed
}

// Delete removes key and its state, forgetting its admissions, as
// Limiter.Delete does: the next call on key starts from a new window. A call
// deciding on key concurrently is decided on the state left in the map
// afterwards. Deleting an absent key, or one not equal to itself, does
// nothing.
func (w *Window[K]) Delete(key K) {
	w.mustBeMade()
	if !validKey(w.keyCheck, key) {
		return
	}
	h := w.keys.hash(key)
	sh := w.keys.shardOf(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	c := w.keys.find(h, key) // under the lock: the current array, no dead cell
	if c != nil && twoword.Kill(&c.cnt) && sh.removeLocked(h, c) {
		w.n.Add(-1)
	}
}

// Range calls f for each key, until f returns false, as Limiter.Range does:
// no consistent snapshot, no key visited twice, no lock held while f runs (f
// may call any method of w). A nil f panics.
func (w *Window[K]) Range(f func(key K) bool) {
	w.mustBeMade()
	if f == nil {
		panic("keyed: Range: f is nil")
	}
	// One shard's cells at a time, copied under its lock, visited with no
	// lock held: a buffer for the largest shard, allocated once per call.
	var buf []*cell[K]
	for i := range w.keys.shards {
		buf = w.keys.liveCells(i, buf[:0])
		for j, c := range buf {
			buf[j] = nil // keep no cell alive longer than this visit
			if c.dead() {
				continue
			}
			if !f(c.key) {
				return
			}
		}
	}
}
