package keyed_test

import (
	"context"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/conformance"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/ring"
)

// fixedKey is a keyed limiter over rings seen through one key: the contract
// of a ring must hold through the store.
type fixedKey struct {
	k   *keyed.Limiter[string, *ring.Limiter]
	key string
}

func (f fixedKey) AllowN(now time.Time, n int) bool { return f.k.AllowN(f.key, now, n) }
func (f fixedKey) TokensAt(now time.Time) int       { return f.k.TokensAt(f.key, now) }
func (f fixedKey) ReadyAt(now time.Time, n int) (time.Time, bool) {
	return f.k.ReadyAt(f.key, now, n)
}
func (f fixedKey) WaitN(ctx context.Context, n int) error { return f.k.WaitN(ctx, f.key, n) }

func newFixedKey(limit int, window time.Duration) (conformance.Limiter, error) {
	k, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(limit, window) })
	if err != nil {
		return nil, err
	}
	return fixedKey{k: k, key: "client-1"}, nil
}

// keyedRingOptions describes keyed over ring, for one key, to the shared
// suite. keyed has no (limit, window) constructor of its own, so the
// constructor checks are ring's.
var keyedRingOptions = conformance.Options{
	Pkg:  "keyed",
	New:  newFixedKey,
	Kind: conformance.Exact,
}

// TestConformance runs the shared contract through the store, for one key.
func TestConformance(t *testing.T) { conformance.Run(t, keyedRingOptions) }

// TestOutsideConformance runs the shared outside-view concurrency check
// through the store, for one key.
func TestOutsideConformance(t *testing.T) { conformance.RunOutside(t, keyedRingOptions) }
