package httplimit_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/internal/conformance"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// TestWindowMatchesQueries: Window decides from one snapshot of the shared
// limiter (window.Limiter.DecideStatus); the same adapter over a limiter
// that only answers AllowN, TokensAt and ReadyAt assembles its Decision from
// three calls. With one goroutine the two must agree on every field of every
// decision, through idle gaps, stale instants, costs out of range and
// instants past the last one a window tells apart (where a cost that does
// not fit never will: Never, not a Retry-After).
func TestWindowMatchesQueries(t *testing.T) {
	const limit, win = 5, time.Second
	a, err := window.New(limit, win)
	require.NoError(t, err)
	b, err := window.New(limit, win)
	require.NoError(t, err)
	matchesQueries(t, httplimit.Window(a), httplimit.ByQueries(b, true), limit, win)
}

// TestRingMatchesQueries: the same for Ring, which decides and reads its
// quota with ring.Limiter.DecideStatus, at the log's state right after the
// decision.
func TestRingMatchesQueries(t *testing.T) {
	const limit, win = 5, time.Second
	a, err := ring.New(limit, win)
	require.NoError(t, err)
	b, err := ring.New(limit, win)
	require.NoError(t, err)
	matchesQueries(t, httplimit.Ring(a), httplimit.ByQueries(b, true), limit, win)
}

// TestMultiMatchesQueries: Multi and Approx, with the quota wanted, decide
// and read every rule's quota with one call of the limiter's DecideRules;
// the same adapter assembling its Decision from AllowN, ReadyAt, RemainingAt
// and ResetsAt must agree with them on every field of every decision, with
// one goroutine. Two rules, so that Remaining and Reset differ per rule.
func TestMultiMatchesQueries(t *testing.T) {
	rules := []multi.Rule{{Limit: 5, Window: time.Second}, {Limit: 12, Window: 10 * time.Second}}
	t.Run("exact", func(t *testing.T) {
		a, err := multi.New(rules...)
		require.NoError(t, err)
		b, err := multi.New(rules...)
		require.NoError(t, err)
		matchesQueries(t, httplimit.Multi(a), httplimit.ManyByQueries(b), 5, time.Second)
	})
	t.Run("approx", func(t *testing.T) {
		a, err := multi.NewApprox(rules...)
		require.NoError(t, err)
		b, err := multi.NewApprox(rules...)
		require.NoError(t, err)
		matchesQueries(t, httplimit.Approx(a), httplimit.ManyByQueries(b), 5, time.Second)
	})
}

// TestKeyedMultiMatchesMulti: Keyed over multi limiters with two rules
// decides each request and reads every rule's quota with one call of the
// key's limiter's DecideRules (keyed.Limiter.DecideRules); for one key it
// must answer every field of every decision as Multi and Approx do over one
// limiter of the same rules, costs that never fit included.
func TestKeyedMultiMatchesMulti(t *testing.T) {
	rules := []multi.Rule{{Limit: 5, Window: time.Second}, {Limit: 12, Window: 10 * time.Second}}
	policy := []httplimit.Rule{{Limit: 5, Window: time.Second}, {Limit: 12, Window: 10 * time.Second}}
	t.Run("exact", func(t *testing.T) {
		k, err := keyed.New[string](func() (*multi.Limiter, error) { return multi.New(rules...) })
		require.NoError(t, err)
		m, err := multi.New(rules...)
		require.NoError(t, err)
		matchesQueries(t, httplimit.Keyed(k, policy...), httplimit.Multi(m), 5, time.Second)
	})
	t.Run("approx", func(t *testing.T) {
		k, err := keyed.New[string](func() (*multi.Approx, error) { return multi.NewApprox(rules...) })
		require.NoError(t, err)
		m, err := multi.NewApprox(rules...)
		require.NoError(t, err)
		matchesQueries(t, httplimit.Keyed(k, policy...), httplimit.Approx(m), 5, time.Second)
	})
}

// TestKeyedMultiCheckMatchesMulti: Check of Keyed over multi limiters with
// two rules, which records nothing, reports each rule's own quota for one
// key as Multi's and Approx's Check do over one limiter of the same rules,
// between decisions fed to both alike, and Check never changes a decision.
func TestKeyedMultiCheckMatchesMulti(t *testing.T) {
	rules := []multi.Rule{{Limit: 5, Window: time.Second}, {Limit: 12, Window: 10 * time.Second}}
	policy := []httplimit.Rule{{Limit: 5, Window: time.Second}, {Limit: 12, Window: 10 * time.Second}}
	for _, flavour := range []string{"exact", "approx"} {
		t.Run(flavour, func(t *testing.T) {
			var got, want httplimit.Limiter
			if flavour == "exact" {
				k, err := keyed.New[string](func() (*multi.Limiter, error) { return multi.New(rules...) })
				require.NoError(t, err)
				m, err := multi.New(rules...)
				require.NoError(t, err)
				got, want = httplimit.Keyed(k, policy...), httplimit.Multi(m)
			} else {
				k, err := keyed.New[string](func() (*multi.Approx, error) { return multi.NewApprox(rules...) })
				require.NoError(t, err)
				m, err := multi.NewApprox(rules...)
				require.NoError(t, err)
				got, want = httplimit.Keyed(k, policy...), httplimit.Approx(m)
			}
			checker := func(l httplimit.Limiter) httplimit.Checker {
				c, ok := l.(httplimit.Checker)
				require.True(t, ok, "the adapter is a Checker")
				return c
			}
			gc, wc := checker(got), checker(want)
			ctx := context.Background()
			seed := uint64(time.Now().UnixNano())
			r := rand.New(rand.NewPCG(seed, 8))
			now := time.Unix(1_700_000_000, 0)
			for i := range 5000 {
				now = now.Add(time.Duration(r.Int64N(int64(100 * time.Millisecond))))
				cost := 1 + r.IntN(3)
				g, err := gc.Check(ctx, "client", now, cost)
				require.NoError(t, err)
				w, err := wc.Check(ctx, "client", now, cost)
				require.NoError(t, err)
				g.RetryAt, w.RetryAt = g.RetryAt.Round(0), w.RetryAt.Round(0)
				require.Equal(t, w, g, "seed %d, check %d", seed, i)
				gd, err := got.Decide(ctx, "client", now, cost)
				require.NoError(t, err)
				wd, err := want.Decide(ctx, "client", now, cost)
				require.NoError(t, err)
				require.Equal(t, wd.Allowed, gd.Allowed, "seed %d, decision %d", seed, i)
				require.Equal(t, g.Allowed, gd.Allowed, "seed %d: Check said %v, the decision after it %v", seed, g.Allowed, gd.Allowed)
			}
		})
	}
}

// matchesQueries feeds got and want the same 20,000 random requests and
// requires equal Decisions.
func matchesQueries(t *testing.T, got, want httplimit.Limiter, limit int, win time.Duration) {
	t.Helper()
	// A second or so; a limiter that spins past the last instant it tells
	// apart (request 19,000 on) ends the binary with the test's name.
	defer conformance.Watchdog(t.Name(), 30*time.Second)()
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 5))
	require.Equal(t, want.Rules(), got.Rules())
	reasons := map[httplimit.Reason]int{}
	now := time.Unix(1_700_000_000, 0)
	for i := range 20_000 {
		switch {
		case i == 19_000:
			now = now.Add(80 * 365 * 24 * time.Hour) // time stops for both limiters
		case r.IntN(200) == 0:
			now = now.Add(time.Duration(r.Int64N(int64(3 * win))))
		default:
			now = now.Add(time.Duration(r.Int64N(int64(win / time.Duration(4*limit)))))
		}
		at := now
		if r.IntN(10) == 0 {
			at = now.Add(-time.Duration(r.Int64N(int64(win))))
		}
		cost := 1 + r.IntN(limit)
		if r.IntN(20) == 0 {
			cost = r.IntN(limit+3) - 1
		}
		g, gerr := got.Decide(context.Background(), "", at, cost)
		w, werr := want.Decide(context.Background(), "", at, cost)
		require.NoError(t, gerr)
		require.NoError(t, werr)
		// Instants by wall clock: the two limiters' monotonic readings differ.
		g.RetryAt, w.RetryAt = g.RetryAt.Round(0), w.RetryAt.Round(0)
		require.Equal(t, w, g, "seed %d, request %d: at %v, cost %d", seed, i, at, cost)
		reasons[g.Reason]++
	}
	for _, why := range []httplimit.Reason{httplimit.Admitted, httplimit.OverLimit, httplimit.Never} {
		assert.NotZero(t, reasons[why], "no decision with reason %v: the run did not exercise it", why)
	}
}
