package keyed

import (
	"reflect"
	"runtime"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/internal/clock"
)

// Allow is shorthand for AllowN(key, time.Now(), 1).
func (k *Limiter[K, L]) Allow(key K) bool {
	return k.AllowN(key, time.Now(), 1)
}

// AllowN reports whether n events may happen for key at now, and records
// them if so; it is the key's limiter's AllowN(now, n). An absent key is
// created first, unless n == 0 (then AllowN returns true and creates
// nothing, for any key equal to itself). AllowN returns false, creating
// nothing, when n < 0, n is above what a new limiter admits, key is not
// equal to itself, the Limiter is full (see the package documentation), or
// the key's limiter cannot be created; Decide says which. A now earlier than
// the latest sweep's instant is replaced by that instant.
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

// Decide is AllowN, and also says why a refusal was not the key's own limit:
// admitted is AllowN(key, now, n), and err is nil when n was admitted or
// refused by the key's limiter. Otherwise nothing was admitted and err wraps
// ErrBadKey (key is not equal to itself), ErrNeverReady (n < 0, or n above
// what a new limiter admits), ErrFull (the key is absent and no room could be
// made for it), or the error of the function given to New (the key's limiter
// could not be created; a nil limiter is an error too). In every one of those
// cases no key is created. Decide allocates nothing for a key that is
// present, nor when it refuses with ErrBadKey, ErrNeverReady or ErrFull
// (except that a refusal which starts an automatic sweep records that
// sweep's instants: two small allocations per sweep; and that a key of a
// comparable type holding an uncomparable value deeper inside, such as a
// struct whose interface field holds a slice, is found bad by the panic that
// comparing it raises, whose message is allocated).
func (k *Limiter[K, L]) Decide(key K, now time.Time, n int) (admitted bool, err error) {
	return k.allowN(key, now, n)
}

// statusLimiter is a per-key limiter that reports, with each decision, what
// remains and when to retry from the state the decision was made on:
// *ring.Limiter, *window.Limiter, *multi.Limiter and *multi.Approx.
type statusLimiter interface {
	DecideStatus(now time.Time, n int) slidelimit.Status
}

// DecideStatus is Decide, and also returns what remains for the key and when
// the cost and the whole limit (the most a new limiter admits) would fit,
// with one lookup of the key. When the key's limiter has a DecideStatus
// method (ring, window and multi limiters), these are what it reports: read
// from the state the decision was made on, so another goroutine's admission
// landing in between does not show in them. Otherwise they are the
// limiter's TokensAt and ReadyAt asked right after its AllowN. It has
// Decide's errors and edges, and creates a key only when Decide would. When
// no decision is made (n outside [1, what a new limiter admits]), Remaining
// and ResetAt are what TokensAt and ReadyAt(key, now, that most) answer;
// after ErrBadKey, ErrFull and a failed creation they are zero. It allocates
// nothing for a key that is present.
func (k *Limiter[K, L]) DecideStatus(key K, now time.Time, n int) (Status, error) {
	s, _, err := k.decide(key, now, n, nil, false)
	return s, err
}

// rulesLimiter is a per-key limiter that also reports each of its rules'
// status with a decision: *multi.Limiter and *multi.Approx.
type rulesLimiter interface {
	DecideRules(now time.Time, n int, rules []slidelimit.Status) (slidelimit.Status, []slidelimit.Status)
}

// DecideRules is DecideStatus, and also appends to rules, when the key's
// limiter has a DecideRules method (multi limiters), what that method
// appends for the decision: one Status per rule, that rule alone on the
// state the decision was made on. When no decision is made (n outside
// [1, what a new limiter admits]) the Status and the rules' are that
// method's answer for n, which records nothing (a new limiter's for an
// absent key, unless the Limiter is full or the last creation failed: then
// it appends nothing and reports no room, as TokensAt and ReadyAt do). For
// any other limiter, and after ErrBadKey, ErrFull or a failed creation, it
// appends nothing. It returns the extended slice. It allocates nothing for a
// key that is present when rules has room.
func (k *Limiter[K, L]) DecideRules(key K, now time.Time, n int, rules []Status) (Status, []Status, error) {
	return k.decide(key, now, n, rules, true)
}

// decide is DecideRules, appending to rules only if each.
func (k *Limiter[K, L]) decide(key K, now time.Time, n int, rules []Status, each bool) (Status, []Status, error) {
	k.mustBeMade()
	if !k.validKey(key) {
		return Status{}, rules, ErrBadKey
	}
	if n <= 0 || n > k.maxN {
		var s Status
		var ok bool
		if each {
			s, rules, ok = k.queryRules(key, now, n, rules)
		}
		if !ok {
			s = Status{Admitted: n == 0, Remaining: k.TokensAt(key, now)}
			s.ResetAt, _ = k.ReadyAt(key, now, k.maxN)
		}
		if n == 0 {
			return s, rules, nil
		}
		return s, rules, errNeverReady
	}
	n0 := len(rules)
	for {
		e, ok := k.keys.load(key)
		if ok && e.state.Load() == dead {
			runtime.Gosched() // as in allowN
			continue
		}
		if !ok {
			var err error
			if e, err = k.create(key, now); err != nil {
				// Nothing appended: a round before this one may have
				// appended for a limiter a sweep or Delete then took.
				return Status{}, rules[:n0], err
			}
		}
		// Decided at the floor when now is before it, as AllowN is.
		var s Status
		var rl rulesLimiter
		if each { // DecideStatus, the hot one, makes no second type assertion
			rl, _ = k.rulesOf(&e.lim)
		}
		t := k.clamp(now)
		if rl != nil {
			s, rules = rl.DecideRules(t, n, rules[:n0])
		} else {
			s = k.decideStatus(&e.lim, t, n)
		}
		if e.state.Load() == live || e.settle() {
			atNow(now, t, &s, rules[n0:])
			return s, rules, nil
		}
	}
}

// atNow maps the instants of s and of each of rules, read at the clamped
// instant t, back to the caller's now with readyAt. Without it, a rule of
// DecideRules with room at a sweep's floor said it would fit again only at
// that floor, later than now.
func atNow(now, t time.Time, s *Status, rules []Status) {
	if t.Equal(now) {
		return
	}
	mapBack := func(x *Status) {
		x.RetryAt, _ = readyAt(now, t, x.RetryAt, !x.RetryAt.IsZero())
		x.ResetAt, _ = readyAt(now, t, x.ResetAt, !x.ResetAt.IsZero())
	}
	mapBack(s)
	for i := range rules {
		mapBack(&rules[i])
	}
}

// queryRules is decide for an n that decides nothing (n <= 0, or above what
// a new limiter admits), when the key's limiter, or for an absent key a new
// one, has DecideRules: its answer at now, which records nothing. ok is
// false, with nothing appended, when it has none, or when the key is absent
// and could not be created.
func (k *Limiter[K, L]) queryRules(key K, now time.Time, n int, rules []Status) (s Status, _ []Status, ok bool) {
	n0 := len(rules)
	for {
		e, present := k.keys.load(key)
		lim := &k.fresh
		if present {
			lim = &e.lim
		} else if k.full() || k.failed.Load() {
			return Status{}, rules[:n0], false
		}
		rl, has := k.rulesOf(lim)
		if !has {
			return Status{}, rules[:n0], false
		}
		t := k.clamp(now)
		s, rules = rl.DecideRules(t, n, rules[:n0])
		if !present || e.state.Load() != dead {
			atNow(now, t, &s, rules[n0:])
			return s, rules, true
		}
	}
}

// decideStatus decides n at t on *lim and reports its Status, from its
// DecideStatus if it has one.
func (k *Limiter[K, L]) decideStatus(lim *L, t time.Time, n int) Status {
	if sl, ok := k.statusOf(lim); ok {
		return sl.DecideStatus(t, n)
	}
	l := *lim
	s := Status{Admitted: l.AllowN(t, n), Remaining: l.TokensAt(t)}
	if !s.Admitted {
		s.RetryAt, _ = l.ReadyAt(t, n)
	}
	s.ResetAt, _ = l.ReadyAt(t, k.maxN)
	return s
}

// methods reaches a PerKey type's optional methods (DecideStatus,
// DecideRules) through a type assertion that allocates nothing. Converting
// a value of L to an interface copies it to the heap unless L is
// pointer-shaped (a pointer, map, channel or func) or an interface; for any
// other L the assertion is made on a *L, whose method set has L's methods,
// and only when L itself has them (a method on *L alone is not L's, and is
// not called).
type methods struct {
	// byValue: L is neither pointer-shaped nor an interface.
	byValue bool
	// hasStatus, hasRules: for a byValue L, whether L has the method.
	hasStatus, hasRules bool
}

func methodsOf[L PerKey]() methods {
	switch reflect.TypeFor[L]().Kind() {
	case reflect.Pointer, reflect.UnsafePointer, reflect.Map, reflect.Chan, reflect.Func, reflect.Interface:
		return methods{}
	}
	var zero L
	_, status := any(zero).(statusLimiter)
	_, rules := any(zero).(rulesLimiter)
	return methods{byValue: true, hasStatus: status, hasRules: rules}
}

// statusOf returns *lim's DecideStatus, if L has one.
func (k *Limiter[K, L]) statusOf(lim *L) (statusLimiter, bool) {
	return methodOf[statusLimiter](k.methods.byValue, k.methods.hasStatus, lim)
}

// rulesOf returns *lim's DecideRules, if L has one.
func (k *Limiter[K, L]) rulesOf(lim *L) (rulesLimiter, bool) {
	return methodOf[rulesLimiter](k.methods.byValue, k.methods.hasRules, lim)
}

// methodOf asserts *lim to the interface I without allocating: on lim itself
// when L is byValue (and has I's method, has), else on *lim.
func methodOf[I any, L PerKey](byValue, has bool, lim *L) (I, bool) {
	if byValue {
		if !has {
			var none I
			return none, false
		}
		i, ok := any(lim).(I)
		return i, ok
	}
	i, ok := any(*lim).(I)
	return i, ok
}

// allowN is Decide.
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
// call cannot decide at an instant before the sweep's on the new limiter. An
// entry found dead is still in the map only until its remover, which marked
// it dead under the map's lock for the key, finishes removing it: the call
// looks again instead of deciding on a limiter that no longer counts.
func (k *Limiter[K, L]) allowN(key K, now time.Time, n int) (bool, error) {
	k.mustBeMade()
	if !k.validKey(key) {
		return false, ErrBadKey
	}
	if n <= 0 || n > k.maxN {
		if n == 0 {
			return true, nil
		}
		return false, errNeverReady
	}
	for {
		e, ok := k.keys.load(key)
		if ok && e.state.Load() == dead {
			// Marked dead, and about to leave the map (the remover holds
			// the map's lock for the key, running no user code): a
			// decision on it would be void. Look again.
			runtime.Gosched()
			continue
		}
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
// live. A sweep holds the sweeping state for one IdleAt call and, for an idle
// key, its removal, which waits out a resize of the map in progress; it gives
// the state back if IdleAt panics.
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

// TokensAt returns the largest n that AllowN(key, now, n) would admit: the
// key's limiter's TokensAt, or a new limiter's for an absent key. It returns
// 0 when a call would be refused without asking a limiter: for a key not
// equal to itself, and for an absent key when the Limiter is full or the
// latest attempt to create a key failed. It records nothing and creates no
// key.
func (k *Limiter[K, L]) TokensAt(key K, now time.Time) int {
	k.mustBeMade()
	if !k.validKey(key) {
		return 0
	}
	for {
		e, ok := k.keys.load(key)
		t := k.clamp(now)
		if !ok {
			if k.full() || k.failed.Load() {
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
// limiter's ReadyAt, or a new limiter's for an absent key. It returns now and
// true for n == 0 and a key equal to itself. It returns false when a call
// would be refused without asking a limiter: for a key not equal to itself,
// n < 0 or n above what a new limiter admits, and for an absent key when the
// Limiter is full or the latest attempt to create a key failed (when room
// will appear, or the creation will succeed, is not known). It records
// nothing and creates no key.
func (k *Limiter[K, L]) ReadyAt(key K, now time.Time, n int) (at time.Time, ok bool) {
	k.mustBeMade()
	if !k.validKey(key) {
		return time.Time{}, false
	}
	at, ok, _ = k.readyAt(key, now, n)
	return at, ok
}

// readyAt is ReadyAt for a valid key, and also reports whether it answered
// false for want of a limiter (the key absent from a full store, or after a
// failed creation), rather than because n can never fit.
func (k *Limiter[K, L]) readyAt(key K, now time.Time, n int) (at time.Time, ok, absent bool) {
	if n <= 0 || n > k.maxN {
		if n == 0 {
			return now, true, false
		}
		return time.Time{}, false, false
	}
	for {
		e, present := k.keys.load(key)
		t := k.clamp(now)
		if !present {
			if k.full() || k.failed.Load() {
				return time.Time{}, false, true
			}
			at, ready := k.fresh.ReadyAt(t, n)
			at, ready = readyAt(now, t, at, ready)
			return at, ready, false
		}
		at, ready := e.lim.ReadyAt(t, n)
		if e.state.Load() != dead {
			at, ready = readyAt(now, t, at, ready)
			return at, ready, false
		}
	}
}

// readyAt maps a limiter's answer for the clamped instant t back to the
// caller's now: if n fits at t, AllowN(key, now, n) admits it (deciding at t),
// so the answer is now, as a limiter answers for a now it clamps itself.
// A later answer is put on now's clock (clock.OnClockOf): t, and so the
// limiter's answer, may be a sweep's floor, on the sweeper's clock.
func readyAt(now, t, at time.Time, ready bool) (time.Time, bool) {
	if ready && !at.After(t) {
		return now, true
	}
	if ready && t != now {
		at = clock.OnClockOf(now, at)
	}
	return at, ready
}
