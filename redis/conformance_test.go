package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/internal/conformance"
	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// The shared conformance suite drives limiters with windows and steps of a few
// nanoseconds, so that its random histories cross many windows; Redis counts
// in whole microseconds. The adapter below runs the suite at a scale of one
// microsecond in Redis for each nanosecond of the suite: an instant x of the
// suite is sent as suiteBase + (x - suiteAnchor) microseconds, a window of w
// nanoseconds becomes w microseconds, and the instants Redis answers map back
// exactly. Every decision, TokensAt and ReadyAt is then compared at the
// suite's full resolution, "refused one nanosecond before ReadyAt" included
// (one microsecond in Redis). What truncation to microseconds does to
// instants a caller gives with nanoseconds is checked by
// TestMicrosecondInstants.
//
// Each limiter the suite asks for is a fresh key, so one server serves the
// whole run.

var (
	suiteAnchor = time.Now()
	suiteBase   = suiteAnchor.UnixMicro()
)

// suiteReach is how far (in suite nanoseconds, so Redis microseconds) from
// the anchor an instant can be sent: forty years either side of now, well
// inside the Redis limiters' range (1970 to 2112).
const suiteReach = 40 * 365 * 24 * time.Hour / time.Microsecond

// toRedis maps an instant of the suite to the instant sent to Redis; ok is
// false when it lies beyond suiteReach. The zero Time is such an instant
// (it must never reach the limiter, where it means the server's clock).
func toRedis(x time.Time) (time.Time, bool) {
	d := x.Sub(suiteAnchor) // saturates far away
	if x.IsZero() || d < -suiteReach || d > suiteReach {
		return time.Time{}, false
	}
	return time.UnixMicro(suiteBase + int64(d)), true
}

// fromRedis is toRedis's inverse on the instants Redis answers, on the clock
// of the suite's instant now (clock.OnClockOf: the suite checks that answers
// are in the caller's location, with a monotonic reading only when the
// caller's instant has one; TestCallerLocation checks the limiter's own).
func fromRedis(now, r time.Time) time.Time {
	return clock.OnClockOf(now, suiteAnchor.Add(time.Duration(r.UnixMicro()-suiteBase)))
}

// outOfRange returns an instant the Redis limiters reject, on the side of x.
func outOfRange(x time.Time) time.Time {
	if x.Before(suiteAnchor) {
		return time.Unix(0, 0)
	}
	return time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
}

// adapter binds a Redis limiter to one key and a context, in the shape the
// suite drives. Errors the contract does not allow are reported on t (from
// any goroutine) and answered as a refusal.
type adapter struct {
	t   testing.TB
	ctx context.Context
	l   *redis.Limiter
	key string
}

var _ conformance.Remainer = (*adapter)(nil)

// call runs AllowN (or CheckN when dry) at the suite's instant x. An instant
// beyond suiteReach, or n < 0, must be an error that writes nothing (the
// Redis limiters' documented answer, where the in-process ones refuse); the
// answer is then "never": refused, no room, no ReadyAt.
func (a *adapter) call(x time.Time, n int, dry bool) (redis.Decision, bool) {
	rx, ok := toRedis(x)
	if !ok {
		rx = outOfRange(x)
	}
	var d redis.Decision
	var err error
	if dry {
		d, err = a.l.CheckN(a.ctx, a.key, rx, n)
	} else {
		d, err = a.l.AllowN(a.ctx, a.key, rx, n)
	}
	if !ok || n < 0 {
		if err == nil {
			a.t.Errorf("key %q: at %v, n %d: want an error (instant out of range or n < 0), got %+v", a.key, rx, n, d)
		}
		return redis.Decision{}, false
	}
	if err != nil {
		a.t.Errorf("key %q: at %v, n %d: %v", a.key, rx, n, err)
		return redis.Decision{}, false
	}
	if d.Source != redis.FromRedis {
		a.t.Errorf("key %q: decision from %v, want from Redis", a.key, d.Source)
	}
	return d, true
}

func (a *adapter) AllowN(now time.Time, n int) bool {
	d, _ := a.call(now, n, false)
	return d.Allowed
}

// TokensAt is the room of the tightest rule: CheckN(now, 0)'s smallest
// Remaining.
// TokensAt is the limiter's TokensAt; an instant out of range must be an
// error, answered as no room.
func (a *adapter) TokensAt(now time.Time) int {
	rx, ok := toRedis(now)
	if !ok {
		rx = outOfRange(now)
	}
	got, err := a.l.TokensAt(a.ctx, a.key, rx)
	if !ok {
		if err == nil {
			a.t.Errorf("key %q: TokensAt at %v: want an error (instant out of range), got %d", a.key, rx, got)
		}
		return 0
	}
	if err != nil {
		a.t.Errorf("key %q: TokensAt at %v: %v", a.key, rx, err)
		return 0
	}
	return got
}

// ReadyAt is the limiter's ReadyAt, mapped back to the suite's instants: now
// itself when n fits (the limiter answers the instant it was given), never
// when it says so. An instant out of range or n < 0 must be an error,
// answered as never.
func (a *adapter) ReadyAt(now time.Time, n int) (time.Time, bool) {
	rx, inRange := toRedis(now)
	if !inRange {
		rx = outOfRange(now)
	}
	at, ok, err := a.l.ReadyAt(a.ctx, a.key, rx, n)
	if !inRange || n < 0 {
		if err == nil {
			a.t.Errorf("key %q: ReadyAt at %v, n %d: want an error (instant out of range or n < 0), got %v %v", a.key, rx, n, at, ok)
		}
		return time.Time{}, false
	}
	switch {
	case err != nil:
		a.t.Errorf("key %q: ReadyAt at %v, n %d: %v", a.key, rx, n, err)
		return time.Time{}, false
	case !ok:
		return time.Time{}, false
	case at.Equal(rx):
		return now, true
	}
	return fromRedis(now, at), true
}

func (a *adapter) RemainingAt(now time.Time, dst []int) []int {
	d, ok := a.call(now, 0, true)
	if !ok {
		return dst
	}
	return append(dst, d.Remaining...)
}

// WaitN is never called: the options set NoWait.
func (a *adapter) WaitN(context.Context, int) error {
	return errors.New("redis: the suite does not drive the Redis limiters' WaitN")
}

// suiteKeys numbers the keys of the suite's limiters across every run.
var suiteKeys atomic.Int64

// suiteOptions describes a Redis limiter kind to the suite, on client c.
func suiteOptions(t *testing.T, c redis.Client, exact bool) conformance.Options {
	mk := redis.NewWindow
	kind, stale := conformance.Approx, oracle.StaleToStart
	if exact {
		mk, kind = redis.NewLog, conformance.Exact
	}
	newRules := func(rules ...conformance.Rule) (conformance.Limiter, error) {
		rs := make([]redis.Rule, len(rules))
		for i, r := range rules {
			rs[i] = redis.Rule{Limit: r.Limit, Window: r.Window * 1000} // ns of the suite, µs in Redis
		}
		l, err := mk(c, testOptions(redis.Options{Prefix: "conformance"}), rs...)
		if err != nil {
			return nil, err
		}
		return &adapter{t: t, ctx: t.Context(), l: l, key: fmt.Sprint("k", suiteKeys.Add(1))}, nil
	}
	return conformance.Options{
		Pkg:  "redis",
		Kind: kind, Stale: stale,
		New: func(limit int, window time.Duration) (conformance.Limiter, error) {
			return newRules(conformance.Rule{Limit: limit, Window: window})
		},
		NewRules: newRules,
		NoWait: "the Redis limiters' WaitN waits on the server's clock, which the suite's scaled instants " +
			"cannot drive; TestWaitN (on a simulated clock) and TestWaitNServerTime test it",
		Skip: map[string]string{
			"Constructor": "the suite's windows are nanoseconds, scaled to microseconds by the adapter; " +
				"TestNewErrors checks the constructors' errors at Redis's own scale",
			"ExtremeInstants": "Redis instants are microseconds between 1970 and 2112: outside, AllowN and " +
				"CheckN return an error and write nothing (TestBadInput; the adapter checks it for every such instant)",
			"TimeBounds": "as ExtremeInstants: the first and last instants of a time.Time are errors in Redis",
			"Allocs":     "every decision is a network round trip; its allocations are the Redis client's",
		},
	}
}

// TestConformance runs the shared contract on both Redis limiter kinds, with
// one rule and several, against one real server (and the exact log on a
// three-master cluster too).
func TestConformance(t *testing.T) {
	_, _, c := standalone(t)
	t.Run("log", func(t *testing.T) { conformance.Run(t, suiteOptions(t, c, true)) })
	t.Run("window", func(t *testing.T) { conformance.Run(t, suiteOptions(t, c, false)) })
	t.Run("cluster-log", func(t *testing.T) {
		_, cc := clusterClient(t, redistest.StartCluster(t))
		conformance.Run(t, suiteOptions(t, cc, true))
	})
}

// TestOutsideConformance runs the shared outside-view concurrency check on
// both kinds, on caller-given instants: 4 goroutines and a querier per key.
func TestOutsideConformance(t *testing.T) {
	_, _, c := standalone(t)
	t.Run("log", func(t *testing.T) { conformance.RunOutside(t, suiteOptions(t, c, true)) })
	t.Run("window", func(t *testing.T) { conformance.RunOutside(t, suiteOptions(t, c, false)) })
}

// TestMicrosecondInstants: Redis counts time in whole microseconds. Instants
// a caller gives with nanoseconds are truncated: two calls in the same
// microsecond are simultaneous, Decision.At and ReadyAt are whole
// microseconds, and a refused cost fits at ReadyAt and not one nanosecond
// (so one microsecond) before it.
func TestMicrosecondInstants(t *testing.T) {
	_, _, c := standalone(t)
	for _, exact := range []bool{true, false} {
		mk := mustWindow
		if exact {
			mk = mustLog
		}
		l := mk(t, c, redis.Options{Prefix: fmt.Sprint("us-", exact)}, redis.Rule{Limit: 2, Window: 10 * time.Microsecond})
		base := at(epoch).Add(999) // 999 ns into a microsecond
		for _, k := range []string{"a", "b"} {
			d, err := l.AllowN(t.Context(), k, base, 2)
			require.NoError(t, err)
			require.True(t, d.Allowed, "exact %v key %s: AllowN(t, 2) on a new key", exact, k)
			require.Equal(t, at(epoch), d.At, "exact %v: Decision.At is now truncated to the microsecond", exact)
			d, err = l.CheckN(t.Context(), k, base.Add(-999), 1)
			require.NoError(t, err)
			require.False(t, d.Allowed, "exact %v: the start of the same microsecond is the same instant", exact)
			require.Equal(t, 0, d.ReadyAt.Nanosecond()%1000, "exact %v: ReadyAt %v is a whole microsecond", exact, d.ReadyAt)
			require.True(t, d.ReadyAt.After(base), "exact %v: ReadyAt %v after now", exact, d.ReadyAt)
			before, err := l.CheckN(t.Context(), k, d.ReadyAt.Add(-1), 1)
			require.NoError(t, err)
			require.False(t, before.Allowed, "exact %v: CheckN(ReadyAt-1ns) admits", exact)
			if k == "a" {
				got, err := l.AllowN(t.Context(), k, d.ReadyAt, 1)
				require.NoError(t, err)
				require.True(t, got.Allowed, "exact %v: AllowN(ReadyAt) refused", exact)
			} else {
				got, err := l.AllowN(t.Context(), k, d.ReadyAt.Add(999), 1)
				require.NoError(t, err)
				require.True(t, got.Allowed, "exact %v: AllowN(ReadyAt+999ns) refused", exact)
				require.Equal(t, d.ReadyAt, got.At, "exact %v: ReadyAt+999ns is decided at ReadyAt", exact)
			}
		}
	}
}

// TestCallerLocation: a caller who passes instants of its own location
// gets Decision.At and ReadyAt in that location, so they compare with ==
// to the instants it computes itself (the log's ReadyAt after a full window
// at t0 is t0 plus the window); on the server's clock they are in
// time.Local. Neither carries a monotonic reading.
func TestCallerLocation(t *testing.T) {
	_, _, c := standalone(t)
	loc := time.FixedZone("UTC+5", 5*3600)
	t0 := at(epoch).In(loc)
	const w = time.Second
	for _, exact := range []bool{true, false} {
		mk := mustWindow
		if exact {
			mk = mustLog
		}
		l := mk(t, c, redis.Options{Prefix: fmt.Sprint("loc-", exact)}, redis.Rule{Limit: 2, Window: w})
		d, err := l.AllowN(t.Context(), "k", t0, 2)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		require.True(t, d.At == t0, "exact %v: At %v, want == %v", exact, d.At, t0)
		d, err = l.CheckN(t.Context(), "k", t0, 1)
		require.NoError(t, err)
		require.False(t, d.Allowed)
		require.Equal(t, loc, d.ReadyAt.Location(), "exact %v: ReadyAt %v", exact, d.ReadyAt)
		require.True(t, d.ReadyAt == d.ReadyAt.Round(0), "exact %v: no monotonic reading", exact)
		if exact {
			require.True(t, d.ReadyAt == t0.Add(w), "ReadyAt %v, want == %v", d.ReadyAt, t0.Add(w))
		}
		d, err = l.AllowN(t.Context(), "server", time.Time{}, 1)
		require.NoError(t, err)
		require.Equal(t, time.Local, d.At.Location(), "exact %v: the server's clock", exact)
	}
}

// TestWindowZeroCost: a cost of 0 is admitted (and ReadyAt is now) even at
// an instant where the estimate is above the limit: a stale instant early in
// a window whose previous one was full. The conformance suite found the
// window script refusing it.
func TestWindowZeroCost(t *testing.T) {
	_, _, c := standalone(t)
	const w = time.Second
	l := mustWindow(t, c, redis.Options{}, redis.Rule{Limit: 3, Window: w})
	t0 := at(epoch)
	for _, s := range []struct {
		at   time.Time
		n    int
		want bool
	}{{t0, 3, true}, {t0.Add(w + w/2), 1, true}} { // prev = 3 weighs 1.5, curr = 1
		d, err := l.AllowN(t.Context(), "k", s.at, s.n)
		require.NoError(t, err)
		require.Equal(t, s.want, d.Allowed, "AllowN(%v, %d)", s.at.Sub(t0), s.n)
	}
	// At the start of that window, prev weighs 3: the estimate is 4.
	now := t0.Add(w)
	for _, dry := range []bool{true, false} {
		f := l.AllowN
		if dry {
			f = l.CheckN
		}
		d, err := f(t.Context(), "k", now, 0)
		require.NoError(t, err)
		require.True(t, d.Allowed, "dry %v: n = 0 refused", dry)
		require.Equal(t, now, d.ReadyAt, "dry %v: ReadyAt for n = 0", dry)
		require.Equal(t, []int{0}, d.Remaining, "dry %v: Remaining", dry)
		d, err = f(t.Context(), "k", now, 1)
		require.NoError(t, err)
		require.False(t, d.Allowed, "dry %v: n = 1 admitted on an estimate of 4", dry)
	}
}
