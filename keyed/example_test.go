package keyed_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// Each key gets its own limiter, created on first use. The instants are fixed
// so that the output does not depend on the clock; a server calls
// Allow(key), which reads time.Now.
func ExampleLimiter_AllowN() {
	k, err := keyed.New[string](func() (*ring.Limiter, error) {
		return ring.New(2, time.Second) // 2 calls per second, per key
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	show := func(key string, at time.Time) {
		fmt.Printf("%s at +%v: %v\n", key, at.Sub(now), k.AllowN(key, at, 1))
	}
	show("alice", now)
	show("alice", now)
	show("alice", now) // alice's third call in the same second
	show("bob", now)   // bob has his own limit
	show("alice", now.Add(time.Second))
	fmt.Println("keys:", k.Len())
	// Output:
	// alice at +0s: true
	// alice at +0s: true
	// alice at +0s: false
	// bob at +0s: true
	// alice at +1s: true
	// keys: 2
}

// What an HTTP 429 response needs: how many calls remain, and when the next
// one will be admitted (for Retry-After).
func ExampleLimiter_ReadyAt() {
	k, err := keyed.New[string](func() (*ring.Limiter, error) {
		return ring.New(3, time.Minute)
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	k.AllowN("203.0.113.7", now, 1)
	k.AllowN("203.0.113.7", now.Add(10*time.Second), 2)

	at := now.Add(20 * time.Second)
	fmt.Println("allowed:", k.AllowN("203.0.113.7", at, 1))
	fmt.Println("remaining:", k.TokensAt("203.0.113.7", at))
	ready, ok := k.ReadyAt("203.0.113.7", at, 1)
	fmt.Println("retry after:", ready.Sub(at), ok)
	// Output:
	// allowed: false
	// remaining: 0
	// retry after: 40s true
}

// Sweep removes the keys whose limiters carry no information any more; a
// removed key starts again from a fresh limiter, which decides exactly as
// the removed one would have. A server runs Sweep(time.Now()) periodically.
func ExampleLimiter_Sweep() {
	k, err := keyed.New[string](func() (*window.Limiter, error) {
		return window.New(10, time.Second)
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	k.AllowN("a", now, 1)
	k.AllowN("b", now.Add(time.Second), 1)
	// A window limiter is idle two windows after its last admission.
	fmt.Println("removed at +1s:", k.Sweep(now.Add(time.Second)))
	fmt.Println("removed at +2s:", k.Sweep(now.Add(2*time.Second)))
	fmt.Println("removed at +3s:", k.Sweep(now.Add(3*time.Second)))
	fmt.Println("keys:", k.Len())
	// Output:
	// removed at +1s: 0
	// removed at +2s: 1
	// removed at +3s: 1
	// keys: 0
}

// With a bound on the number of keys, a new key is refused while the Limiter
// is full and no key is idle; keys already present keep working.
func ExampleMaxKeys() {
	k, err := keyed.New[string](func() (*ring.Limiter, error) {
		return ring.New(5, time.Minute)
	}, keyed.MaxKeys(2))
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	fmt.Println("a:", k.AllowN("a", now, 1))
	fmt.Println("b:", k.AllowN("b", now, 1))
	fmt.Println("c:", k.AllowN("c", now, 1), "(full)")
	fmt.Println("a:", k.AllowN("a", now, 1))
	// A minute later a and b are idle: c's call sweeps them out first.
	fmt.Println("c:", k.AllowN("c", now.Add(time.Minute), 1), "keys:", k.Len())
	// Output:
	// a: true
	// b: true
	// c: false (full)
	// a: true
	// c: true keys: 1
}

// Range visits the keys; it may run alongside other calls (see its
// documentation for what it sees then).
func ExampleLimiter_Range() {
	k, err := keyed.New[int](func() (*ring.Limiter, error) {
		return ring.New(1, time.Second)
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for id := range 5 {
		k.AllowN(id, now, 1)
	}
	sum := 0
	k.Range(func(id int) bool {
		sum += id
		return true
	})
	fmt.Println("keys:", k.Len(), "sum of ids:", sum)
	// Output:
	// keys: 5 sum of ids: 10
}

// Decide says why a call was refused when the key's own limit is not the
// reason: a full Limiter, a cost that can never fit, a key that can never be
// found again (a NaN), or the factory's error.
func ExampleLimiter_Decide() {
	k, err := keyed.New[string](func() (*ring.Limiter, error) {
		return ring.New(2, time.Second)
	}, keyed.MaxKeys(1))
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	show := func(key string, n int) {
		ok, err := k.Decide(key, now, n)
		switch {
		case ok:
			fmt.Printf("%s n=%d: admitted\n", key, n)
		case err == nil:
			fmt.Printf("%s n=%d: over the key's limit\n", key, n)
		case errors.Is(err, keyed.ErrFull):
			fmt.Printf("%s n=%d: no room for a new key\n", key, n)
		case errors.Is(err, keyed.ErrNeverReady):
			fmt.Printf("%s n=%d: can never fit\n", key, n)
		default:
			fmt.Printf("%s n=%d: %v\n", key, n, err)
		}
	}
	show("alice", 2)
	show("alice", 1)
	show("alice", 3)
	show("bob", 1)
	// Output:
	// alice n=2: admitted
	// alice n=1: over the key's limit
	// alice n=3: can never fit
	// bob n=1: no room for a new key
}

// Wait blocks until the key's limiter admits the call, or the context ends;
// it fails at once when the context's deadline comes before the call could
// be admitted.
func ExampleLimiter_Wait() {
	k, err := keyed.New[string](func() (*ring.Limiter, error) {
		return ring.New(1, time.Hour)
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	fmt.Println("first:", k.Wait(ctx, "job-42"))
	err = k.Wait(ctx, "job-42") // the next one fits in about an hour
	fmt.Println("second fails at once:", errors.Is(err, keyed.ErrDeadline))
	// Output:
	// first: <nil>
	// second fails at once: true
}

// A Window keeps a two-counter window per key with its state inline: 75 bytes
// per key with a short key (its bytes included), for limits of any size.
// Here 10 per minute per client; the previous minute's admissions count in
// proportion to how much of it is still inside the last minute.
func ExampleNewWindow() {
	w, err := keyed.NewWindow[string](10, time.Minute, keyed.MaxKeys(100_000))
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	admitted := 0
	for range 12 {
		if w.AllowN("203.0.113.7", now, 1) {
			admitted++
		}
	}
	fmt.Println("admitted in the first minute:", admitted)
	// 90 s later: the first minute (10 admitted) still weighs half.
	later := now.Add(90 * time.Second)
	fmt.Println("room at +90s:", w.TokensAt("203.0.113.7", later))
	// The next minute starts with the full one weighing 10: one more call
	// fits once a tenth of it has passed.
	at, _ := w.ReadyAt("203.0.113.7", now, 1)
	fmt.Println("next call fits at:", at.Sub(now))
	// All idle two windows after the last admission: a sweep removes the key.
	fmt.Println("swept:", w.Sweep(now.Add(2*time.Minute)), "keys left:", w.Len())
	// Output:
	// admitted in the first minute: 10
	// room at +90s: 5
	// next call fits at: 1m6s
	// swept: 1 keys left: 0
}
