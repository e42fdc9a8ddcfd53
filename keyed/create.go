package keyed

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/slidelimit/slidelimit/internal/nilvalue"
)

// New returns a Limiter whose keys each get a limiter from newLimiter, which
// must return a new, independent limiter on every call, all with the same
// configuration (eviction relies on a fresh limiter deciding as an idle one).
//
// New calls newLimiter twice: it returns an error prefixed with "keyed: " if
// either call fails (wrapping newLimiter's error) or returns a nil limiter,
// if both calls return the same limiter (keys would share one limit), or if
// the new limiter admits nothing. It keeps the first limiter for the life of
// the Limiter, to answer TokensAt and ReadyAt for absent keys (one limiter's
// memory: 8 MB for a ring.Limiter with limit 10^6), and drops the second. It
// also returns an error for a MaxKeys option out of range or given twice.
//
// Later, newLimiter runs when a call needs a new key, with no lock held; if
// it fails or returns a nil limiter, the key is not created and the call is
// refused (Decide says why); if it panics, the panic reaches that call's
// caller and nothing is left behind.
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
	c, err := configure(opts)
	if err != nil {
		return nil, err
	}
	var made [2]L
	for i := range made {
		l, err := newLimiter()
		if err != nil {
			return nil, fmt.Errorf("keyed: newLimiter: %w", err)
		}
		if nilvalue.Is(l) {
			return nil, errNilLimiter
		}
		made[i] = l
	}
	if sameLimiter(made[0], made[1]) {
		return nil, errors.New("keyed: newLimiter returned the same limiter twice: it must return a new one on every call")
	}
	fresh := made[0]
	maxN := fresh.TokensAt(time.Now())
	if maxN < 1 {
		return nil, fmt.Errorf("keyed: newLimiter's limiter admits nothing when new (TokensAt = %d)", maxN)
	}
	return &Limiter[K, L]{
		keys:       newStore[K, *entry[L]](),
		newLimiter: newLimiter,
		fresh:      fresh,
		maxN:       maxN,
		keyCheck:   keyCheckFor(reflect.TypeFor[K]()),
		copyKeys:   stringKeys[K](),
		methods:    methodsOf[L](),
		bound:      bound{maxKeys: int64(c.maxKeys)},
	}, nil
}

// The errors of a refused creation, preallocated so that refusing allocates
// nothing.
var (
	errFull       = fmt.Errorf("%w: key not created", ErrFull)
	errNeverReady = fmt.Errorf("keyed: n is negative or above the limit: %w", ErrNeverReady)
	errNilLimiter = errors.New("keyed: newLimiter returned a nil limiter and no error")
)

// createError is newLimiter's error for a new key.
type createError struct{ err error }

func (e *createError) Error() string { return "keyed: newLimiter: " + e.err.Error() }
func (e *createError) Unwrap() error { return e.err }

// create returns key's entry, creating it if it is still absent. It fails
// with an error wrapping ErrFull when the Limiter is full and a sweep (if one
// may run) frees no room, or with newLimiter's error.
func (k *Limiter[K, L]) create(key K, now time.Time) (*entry[L], error) {
	for swept := false; ; swept = true {
		if k.reserve() {
			return k.insert(key)
		}
		// Full. Another call may have created the key meanwhile.
		if e, ok := k.keys.load(key); ok {
			return e, nil
		}
		if swept || !k.sweepWhenFull(k.clamp(now), k.sweep) {
			return nil, errFull
		}
	}
}

// insert builds a limiter for key and stores it unless another call stored
// one first, and returns the entry in the map. It holds one reservation,
// which it gives back unless its entry was stored, also when newLimiter
// panics (the panic then goes on to the caller).
func (k *Limiter[K, L]) insert(key K) (*entry[L], error) {
	returned, stored := false, false
	defer func() {
		if !returned {
			k.failed.Store(true) // newLimiter panicked
		}
		if !stored {
			k.n.Add(-1)
		}
	}()
	l, err := k.newLimiter() // user code: no lock is held
	returned = true
	if err != nil || nilvalue.Is(l) {
		k.failed.Store(true)
		if err == nil {
			return nil, errNilLimiter
		}
		return nil, &createError{err}
	}
	if k.failed.Load() {
		k.failed.Store(false)
	}
	if k.copyKeys {
		key = cloneString(key)
	}
	e, loaded := k.keys.loadOrStore(key, &entry[L]{lim: l})
	stored = !loaded
	return e, nil
}

// sameLimiter reports whether a and b are the same reference: two pointers
// (maps, channels) to the same object.
func sameLimiter(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Type() != vb.Type() {
		return false
	}
	switch va.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.UnsafePointer:
		return va.Pointer() == vb.Pointer()
	}
	return false
}

// keyCheck is how a key type is checked for keys not equal to themselves.
type keyCheck uint8

const (
	// keyAlwaysEqual: no floating-point number or interface inside (strings,
	// integers, pointers, and arrays and structs of them); nothing to check.
	keyAlwaysEqual keyCheck = iota
	// keyMayBeNaN: a float or complex inside, but no interface: a NaN makes
	// key != key.
	keyMayBeNaN
	// keyMayPanic: an interface inside: its value may hold a NaN, or be of a
	// type that cannot be compared (comparing or hashing it panics).
	keyMayPanic
	// keyInterface: the key type is an interface: as keyMayPanic, but the
	// usual bad key, a value of an uncomparable type, is found from its
	// dynamic type without comparing.
	keyInterface
)

// keyCheckFor returns the check keys of type t need.
func keyCheckFor(t reflect.Type) keyCheck {
	if t.Kind() == reflect.Interface {
		return keyInterface
	}
	return keyCheckIn(t)
}

// keyCheckIn is keyCheckFor for t, the key type or a type inside it.
func keyCheckIn(t reflect.Type) keyCheck {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return keyMayBeNaN
	case reflect.Interface:
		return keyMayPanic
	case reflect.Array:
		if t.Len() == 0 {
			return keyAlwaysEqual
		}
		return keyCheckIn(t.Elem())
	case reflect.Struct:
		c := keyAlwaysEqual
		for i := range t.NumField() {
			c = max(c, keyCheckIn(t.Field(i).Type))
		}
		return c
	}
	return keyAlwaysEqual
}

// validKey reports whether key is equal to itself, without panicking.
func (k *Limiter[K, L]) validKey(key K) bool { return validKey(k.keyCheck, key) }

// validKey reports whether key, of a type that needs check c, is equal to
// itself, without panicking.
func validKey[K comparable](c keyCheck, key K) bool {
	switch c {
	case keyAlwaysEqual:
		return true
	case keyMayBeNaN:
		return equal(key, key)
	case keyInterface:
		// A slice, map or func in the key: refused without the panic
		// (and the allocation of its message) that comparing would
		// cause. K is an interface type: any(key) copies nothing.
		if t := reflect.TypeOf(any(key)); t != nil && !t.Comparable() {
			return false
		}
	}
	return selfEqualNoPanic(key)
}

func equal[K comparable](a, b K) bool { return a == b }

// selfEqualNoPanic reports whether key == key, and false if comparing panics
// (an interface holding an uncomparable value).
func selfEqualNoPanic[K comparable](key K) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return equal(key, key)
}
