package fuzz

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/ring"
)

// FuzzKeyed replays a decoded sequence of operations through a keyed Limiter
// over ring and through a naive model, and requires every answer to agree:
// Decide (admission and the reason for a refusal), TokensAt, ReadyAt, Sweep's
// count, Range's keys and Len. The factory fails, returns nil or panics when
// an operation says so.
//
// The model is a per-key naive sliding log (oracle.Log) that a sweep never
// clears, only Delete, since evicting an idle key must change no decision;
// the set of keys present; the MaxKeys bound; and the floor every sweep
// raises. One thing the model cannot know is whether a full Limiter skipped
// its automatic sweep (the pacing depends on how long the last one took on
// the wall clock): when the Limiter answers ErrFull, both it and the model
// are swept explicitly at the call's instant, which brings them to the same
// state whatever happened; when it creates the key, the model requires that
// a sweep at that instant frees a slot.
func FuzzKeyed(f *testing.F) {
	f.Add([]byte{2, 5, 3, 0, 0, 0, 8, 0, 0, 16, 0, 0, 24, 0, 0, 1, 8, 0, 72, 0, 0})
	f.Add([]byte{0, 4, 1, 0, 0, 0, 1, 0, 0, 2, 8, 0, 3, 9, 0, 80, 0, 0, 2, 0, 0})      // MaxKeys 1: full, automatic sweeps
	f.Add([]byte{3, 5, 2, 104, 0, 0, 0, 0, 0, 112, 0, 0, 1, 0, 0, 120, 0, 0, 1, 0, 0}) // failing, panicking, nil factory
	f.Add([]byte{4, 6, 4, 7, 0, 0, 0, 18, 0, 96, 0, 0, 88, 0, 0, 0, 19, 0, 0, 0, 240}) // NaN key, stale instants, Range
	f.Add([]byte{1, 5, 3, 0, 0, 235, 0, 0, 245, 0, 0, 252, 0, 0, 248, 80, 10, 0, 1, 20, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		limit, window, _ := ringConfig(data[:2])
		maxKeys := 1 + int(data[2])%4
		kinds, ops := decodeKeyedOps(data[3:], window, limit)
		runKeyed(t, limit, window, maxKeys, kinds, ops)
	})
}

// decodeKeyedOps turns fuzzer bytes into keyed operations: three bytes each,
// the first the operation's kind and key, the other two a call as decodeOps
// decodes it.
func decodeKeyedOps(data []byte, window time.Duration, limit int) (kinds []byte, ops []op) {
	if len(data) > 3*maxOps {
		data = data[:3*maxOps]
	}
	kinds = make([]byte, 0, len(data)/3)
	pairs := make([]byte, 0, 2*len(data)/3)
	for i := 0; i+2 < len(data); i += 3 {
		kinds = append(kinds, data[i])
		pairs = append(pairs, data[i+1], data[i+2])
	}
	return kinds, decodeOps(pairs, window, limit)
}

// factory modes, set by an operation for the next creation only.
const (
	makeOK = iota
	makeFail
	makePanic
	makeNil
)

var errFactory = errors.New("factory failed")

// keyedModel is the naive model of a keyed Limiter.
type keyedModel struct {
	limit   int
	window  int64
	maxKeys int
	logs    map[int]*oracle.Log // kept across sweeps, dropped by Delete
	present map[int]bool
	floor   int64
	swept   bool // floor is set
	failed  bool // the latest creation failed
}

func (m *keyedModel) clamp(now int64) int64 {
	if m.swept && now < m.floor {
		return m.floor
	}
	return now
}

func (m *keyedModel) log(key int) *oracle.Log {
	o := m.logs[key]
	if o == nil {
		o = oracle.NewLog(oracle.Rule{Limit: int64(m.limit), Window: m.window})
		m.logs[key] = o
	}
	return o
}

// sweep is Sweep(now): it raises the floor and removes the idle keys.
func (m *keyedModel) sweep(now int64) int {
	s := m.clamp(now)
	m.floor, m.swept = s, true
	removed := 0
	for key := range m.present {
		if m.log(key).IdleAt(s) {
			delete(m.present, key)
			removed++
		}
	}
	return removed
}

func runKeyed(t *testing.T, limit int, window time.Duration, maxKeys int, kinds []byte, ops []op) {
	mode := makeOK
	k, err := keyed.New[float64](func() (*ring.Limiter, error) {
		md := mode
		mode = makeOK
		switch md {
		case makeFail:
			return nil, errFactory
		case makePanic:
			panic("factory panic")
		case makeNil:
			return nil, nil
		}
		return ring.New(limit, window)
	}, keyed.MaxKeys(maxKeys))
	if err != nil {
		t.Fatal(err)
	}
	m := &keyedModel{limit: limit, window: int64(window), maxKeys: maxKeys, logs: map[int]*oracle.Log{}, present: map[int]bool{}}
	at := func(off int64) time.Time { return epoch.Add(time.Duration(off)) }
	now := int64(0)
	for i, c := range ops {
		now += int64(c.dt)
		b := kinds[i]
		key := int(b&7) % 5
		fkey := float64(key)
		if b&7 == 7 {
			fkey = math.NaN()
		}
		where := func() string { return fmt.Sprintf("op %d (kind byte %d, key %v, now %d, n %d)", i, b, fkey, now, c.n) }
		switch kind := b >> 3; {
		case kind < 9:
			// The factory resets mode when it runs.
			checkDecide(t, k, m, mode, key, fkey, now, c.n, at, where)
		case kind == 9:
			if got, want := k.Sweep(at(now)), m.sweep(now); got != want {
				t.Fatalf("%s: Sweep removed %d, model %d", where(), got, want)
			}
		case kind == 10:
			k.Delete(fkey)
			if fkey == fkey {
				delete(m.present, key)
				delete(m.logs, key)
			}
		case kind == 11:
			var got []int
			k.Range(func(key float64) bool { got = append(got, int(key)); return true })
			var want []int
			for key := range m.present {
				want = append(want, key)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: Range visited %v, model %v", where(), got, want)
			}
		case kind == 12:
			checkQueries(t, k, m, key, fkey, now, c.n, at, where)
		case kind == 13:
			mode = makeFail
		case kind == 14:
			mode = makePanic
		default:
			mode = makeNil
		}
		if got, want := k.Len(), len(m.present); got != want || got > maxKeys {
			t.Fatalf("%s: Len = %d, model %d (MaxKeys %d)", where(), got, want, maxKeys)
		}
	}
}

// checkDecide makes one Decide call and the model's, and compares them.
func checkDecide(t *testing.T, k *keyed.Limiter[float64, *ring.Limiter], m *keyedModel, mode int, key int, fkey float64, now int64, n int, at func(int64) time.Time, where func() string) {
	t.Helper()
	var got bool
	var err error
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		got, err = k.Decide(fkey, at(now), n)
	}()
	fail := func(want string) {
		t.Helper()
		t.Fatalf("%s: Decide = %v, %v (panic %v); model: %s", where(), got, err, panicked, want)
	}
	switch {
	case fkey != fkey:
		if got || !errors.Is(err, keyed.ErrBadKey) || panicked != nil {
			fail("refused with ErrBadKey")
		}
		return
	case n == 0:
		if !got || err != nil || panicked != nil {
			fail("admitted (n == 0)")
		}
		return
	case n < 0 || n > m.limit:
		if got || !errors.Is(err, keyed.ErrNeverReady) || panicked != nil {
			fail("refused with ErrNeverReady")
		}
		return
	}
	if !m.present[key] {
		if len(m.present) >= m.maxKeys {
			if panicked == nil && errors.Is(err, keyed.ErrFull) {
				// The automatic sweep may or may not have run: sweep both
				// explicitly at the same instant.
				if got {
					fail("refused (ErrFull)")
				}
				if r, w := k.Sweep(at(now)), m.sweep(now); r != w {
					t.Fatalf("%s: Sweep after ErrFull removed %d, model %d", where(), r, w)
				}
				return
			}
			if m.sweep(now) == 0 {
				fail(fmt.Sprintf("refused with ErrFull: no key is idle at %d", m.clamp(now)))
			}
		}
		// The key is created now: the factory runs in the given mode.
		md := mode
		switch {
		case md == makePanic:
			if panicked != "factory panic" {
				fail("the factory's panic")
			}
		case md == makeFail:
			if got || !errors.Is(err, errFactory) || panicked != nil {
				fail("refused with the factory's error")
			}
		case md == makeNil:
			if got || err == nil || errors.Is(err, keyed.ErrFull) || panicked != nil {
				fail("refused: the factory returned a nil limiter")
			}
		}
		if md != makeOK {
			m.failed = true
			return
		}
		m.present[key] = true
		m.failed = false
	}
	if panicked != nil || err != nil {
		fail("a decision by the key's limiter")
	}
	if want := m.log(key).AllowN(m.clamp(now), n); got != want {
		fail(fmt.Sprint(want))
	}
}

// checkQueries compares TokensAt and ReadyAt with the model.
func checkQueries(t *testing.T, k *keyed.Limiter[float64, *ring.Limiter], m *keyedModel, key int, fkey float64, now int64, n int, at func(int64) time.Time, where func() string) {
	t.Helper()
	tokens := k.TokensAt(fkey, at(now))
	ready, ok := k.ReadyAt(fkey, at(now), n)
	var wantTokens int
	var wantReady int64
	var wantOK bool
	s := m.clamp(now)
	switch {
	case fkey != fkey:
	case !m.present[key] && (len(m.present) >= m.maxKeys || m.failed):
		wantOK = n == 0
		wantReady = now
	default:
		o := m.log(key)
		wantTokens = o.TokensAt(s)
		wantReady, wantOK = o.ReadyAt(s, n)
		if wantOK && wantReady <= s {
			wantReady = now
		}
	}
	if tokens != wantTokens {
		t.Fatalf("%s: TokensAt = %d, model %d", where(), tokens, wantTokens)
	}
	if ok != wantOK || (ok && ready.Sub(epoch) != time.Duration(wantReady)) {
		t.Fatalf("%s: ReadyAt = %d, %v; model %d, %v", where(), ready.Sub(epoch), ok, wantReady, wantOK)
	}
}
