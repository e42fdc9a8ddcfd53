package fuzz

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/window"
)

// FuzzKeyedWindow replays a decoded sequence of operations through a
// keyed.Window and through a keyed.Limiter over window.Limiter with the same
// limit, window and MaxKeys, and requires every answer to be the same:
// Decide (admission and the reason for a refusal), DecideStatus (against
// the Limiter's Decide, TokensAt and ReadyAt), TokensAt, ReadyAt,
// Sweep's count, Delete, Len and Range's keys. The Window is that Limiter
// with each key's state laid out inline, so nothing may tell them apart.
//
// Whether a full store sweeps on its own depends on how long its last
// automatic sweep took on the wall clock. So before a call for an absent key
// into a full store, both are swept explicitly at the call's instant (or
// later, if that is stale): an automatic sweep at that instant then has
// nothing left to remove, whether it runs or not, and both decide the same.
func FuzzKeyedWindow(f *testing.F) {
	f.Add([]byte{2, 5, 3, 0, 0, 0, 8, 0, 0, 16, 0, 0, 24, 0, 0, 1, 8, 0, 72, 0, 0})
	f.Add([]byte{0, 4, 1, 0, 0, 0, 1, 0, 0, 2, 8, 0, 3, 9, 0, 80, 0, 0, 2, 0, 0})
	f.Add([]byte{4, 6, 4, 7, 0, 0, 0, 18, 0, 96, 0, 0, 88, 0, 0, 0, 19, 0, 0, 0, 240})
	f.Add([]byte{1, 5, 3, 0, 0, 235, 0, 0, 245, 0, 0, 252, 0, 0, 248, 80, 10, 0, 1, 20, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		limit, w, _ := ringConfig(data[:2])
		maxKeys := 1 + int(data[2])%6
		kinds, ops := decodeKeyedOps(data[3:], w, limit)
		runKeyedWindow(t, limit, w, maxKeys, kinds, ops)
	})
}

func runKeyedWindow(t *testing.T, limit int, w time.Duration, maxKeys int, kinds []byte, ops []op) {
	got, err := keyed.NewWindow[int](limit, w, keyed.MaxKeys(maxKeys))
	if err != nil {
		t.Fatal(err)
	}
	want, err := keyed.New[int](func() (*window.Limiter, error) { return window.New(limit, w) }, keyed.MaxKeys(maxKeys))
	if err != nil {
		t.Fatal(err)
	}
	now := epoch
	latest := now // the latest instant given to a sweep
	for i, o := range ops {
		now = now.Add(o.dt)
		kind := kinds[i]
		key := int(kind>>4) % (maxKeys + 2)
		where := fmt.Sprintf("op %d (kind %d, key %d, n %d, t=%v)", i, kind%8, key, o.n, now.Sub(epoch))
		switch kind % 8 {
		case 0, 1, 2:
			if absent(want, key) && want.Len() >= maxKeys {
				at := now
				if at.Before(latest) {
					at = latest
				}
				if g, wn := got.Sweep(at), want.Sweep(at); g != wn {
					t.Fatalf("%s: Sweep before a new key into a full store removed %d, want %d", where, g, wn)
				}
				latest = at
			}
			if kind%8 == 2 {
				gs, gerr := got.DecideStatus(key, now, o.n)
				ws, werr := limiterStatus(want, limit, key, now, o.n)
				if !sameStatus(gs, ws) || !sameReason(gerr, werr) {
					t.Fatalf("%s: DecideStatus = %+v, %v; want %+v, %v", where, gs, gerr, ws, werr)
				}
				break
			}
			gok, gerr := got.Decide(key, now, o.n)
			wok, werr := want.Decide(key, now, o.n)
			if gok != wok || !sameReason(gerr, werr) {
				t.Fatalf("%s: Decide = %v, %v; want %v, %v", where, gok, gerr, wok, werr)
			}
		case 3:
			if g, wn := got.TokensAt(key, now), want.TokensAt(key, now); g != wn {
				t.Fatalf("%s: TokensAt = %d, want %d", where, g, wn)
			}
		case 4:
			g, gok := got.ReadyAt(key, now, o.n)
			wn, wok := want.ReadyAt(key, now, o.n)
			if gok != wok || !g.Round(0).Equal(wn.Round(0)) {
				t.Fatalf("%s: ReadyAt = %v, %v; want %v, %v", where, g, gok, wn, wok)
			}
		case 5:
			if g, wn := got.Sweep(now), want.Sweep(now); g != wn {
				t.Fatalf("%s: Sweep removed %d, want %d", where, g, wn)
			}
			if now.After(latest) {
				latest = now
			}
		case 6:
			got.Delete(key)
			want.Delete(key)
		case 7:
			var g, wn []int
			got.Range(func(k int) bool { g = append(g, k); return true })
			want.Range(func(k int) bool { wn = append(wn, k); return true })
			if !sameSet(g, wn) {
				t.Fatalf("%s: Range visited %v, want %v", where, g, wn)
			}
		}
		if got.Len() != want.Len() {
			t.Fatalf("%s: Len = %d, want %d", where, got.Len(), want.Len())
		}
	}
}

// limiterStatus is the Status a keyed.Window with l's limit must return from
// DecideStatus(key, now, n): l's Decide, then TokensAt and ReadyAt, which
// with no other goroutine see the state the decision left.
func limiterStatus(l *keyed.Limiter[int, *window.Limiter], limit, key int, now time.Time, n int) (keyed.Status, error) {
	ok, err := l.Decide(key, now, n)
	if errors.Is(err, keyed.ErrFull) || errors.Is(err, keyed.ErrBadKey) {
		return keyed.Status{}, err
	}
	s := keyed.Status{Admitted: ok, Remaining: l.TokensAt(key, now)}
	if !ok && err == nil {
		s.RetryAt, _ = l.ReadyAt(key, now, n)
	}
	s.ResetAt, _ = l.ReadyAt(key, now, limit)
	return s, err
}

// sameStatus compares two Statuses, instants by wall clock (the two stores'
// monotonic readings differ).
func sameStatus(a, b keyed.Status) bool {
	return a.Admitted == b.Admitted && a.Remaining == b.Remaining &&
		a.RetryAt.Round(0).Equal(b.RetryAt.Round(0)) && a.ResetAt.Round(0).Equal(b.ResetAt.Round(0))
}

// absent reports whether key is not in l.
func absent(l *keyed.Limiter[int, *window.Limiter], key int) bool {
	found := false
	l.Range(func(k int) bool {
		found = k == key
		return !found
	})
	return !found
}

// sameReason reports whether two Decide errors give the same reason.
func sameReason(a, b error) bool {
	for _, e := range []error{keyed.ErrBadKey, keyed.ErrNeverReady, keyed.ErrFull} {
		if errors.Is(a, e) != errors.Is(b, e) {
			return false
		}
	}
	return (a == nil) == (b == nil)
}

// sameSet reports whether a and b hold the same distinct keys.
func sameSet(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[int]int{}
	for _, k := range a {
		in[k]++
	}
	for _, k := range b {
		if in[k] != 1 {
			return false
		}
		in[k]--
	}
	return true
}
