package conformance

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/internal/nilvalue"
)

// constructor checks that bad configuration is rejected with a nil limiter and
// an error naming the argument and the bad value, and that the extreme good
// configurations are accepted.
func (s *suite) constructor(t *testing.T) {
	if s.Construct == nil {
		t.Skip("the type has no (limit, window) constructor of its own; Options.Construct is nil")
	}
	const w = time.Second
	bad := []struct {
		limit  int
		window time.Duration
		arg    string // the argument the error must name
		value  string // and the bad value
	}{
		{0, w, "limit", "0"},
		{-1, w, "limit", "-1"},
		{math.MinInt, w, "limit", strconv.Itoa(math.MinInt)},
		{s.MaxLimit + 1, w, "limit", strconv.Itoa(s.MaxLimit + 1)},
		{1, 0, "window", time.Duration(0).String()},
		{1, -1, "window", time.Duration(-1).String()},
		{1, -time.Hour, "window", (-time.Hour).String()},
		{1, s.MaxWindow + 1, "window", (s.MaxWindow + 1).String()},
	}
	if s.MaxLimit == math.MaxInt {
		bad = bad[:3]
	}
	for _, b := range bad {
		v, err := s.Construct(b.limit, b.window)
		call := "New(" + strconv.Itoa(b.limit) + ", " + b.window.String() + ")"
		require.Errorf(t, err, "%s: want an error naming %s", call, b.arg)
		assert.Truef(t, nilvalue.Is(v), "%s returned limiter %v with its error, want nil", call, v)
		msg := err.Error()
		assert.Regexpf(t, "^"+s.Pkg+": ", msg, "%s: the error must start with the package name", call)
		assert.Containsf(t, msg, b.arg, "%s: the error must name the argument", call)
		assert.Containsf(t, msg, b.value, "%s: the error must give the bad value", call)
	}
	for _, g := range []struct {
		limit  int
		window time.Duration
	}{{1, 1}, {1, s.MaxWindow}, {2, time.Second}} {
		v, err := s.Construct(g.limit, g.window)
		require.NoErrorf(t, err, "New(%d, %v)", g.limit, g.window)
		assert.Falsef(t, nilvalue.Is(v), "New(%d, %v) returned a nil limiter", g.limit, g.window)
	}
}

// edges checks n == 0, n < 0 and n > limit in every method, and that they
// write nothing.
func (s *suite) edges(t *testing.T) {
	const limit = 3
	const w = time.Second
	l := s.newLimiter(t, limit, w)
	t0 := time.Now()
	if c, ok := l.(Configured); ok {
		assert.Equal(t, limit, c.Limit(), "Limit()")
		assert.Equal(t, w, c.Window(), "Window()")
	}
	if id, ok := l.(Idler); ok {
		assert.True(t, id.IdleAt(t0), "IdleAt(t0) on a new limiter")
		assert.True(t, id.IdleAt(time.Time{}), "IdleAt(time.Time{}) on a new limiter")
	}
	if _, ok := l.(interface{ Allow() bool }); ok {
		one := s.newLimiter(t, 1, time.Hour)
		a := one.(interface{ Allow() bool })
		assert.True(t, a.Allow(), "Allow() on a new limiter of 1 per hour")
		assert.False(t, a.Allow(), "Allow() after Allow() on a limiter of 1 per hour")
		assert.Equal(t, 0, one.TokensAt(time.Now()), "TokensAt(time.Now()) after Allow() on a limiter of 1 per hour")
	}
	for round := range 2 {
		tokens := l.TokensAt(t0)
		assert.Equalf(t, []int{limit, 0}[round], tokens, "round %d: TokensAt(t0)", round)
		assert.Truef(t, l.AllowN(t0, 0), "round %d: AllowN(t0, 0)", round)
		at, ok := l.ReadyAt(t0, 0)
		assert.Truef(t, ok && at == t0, "round %d: ReadyAt(t0, 0) = %v, %v; want t0 unchanged, true", round, at, ok)
		for _, n := range []int{-1, -limit, math.MinInt, limit + 1, math.MaxInt} {
			assert.Falsef(t, l.AllowN(t0, n), "round %d: AllowN(t0, %d)", round, n)
			at, ok := l.ReadyAt(t0, n)
			assert.Equalf(t, time.Time{}, at, "round %d: ReadyAt(t0, %d) instant", round, n)
			assert.Falsef(t, ok, "round %d: ReadyAt(t0, %d) ok", round, n)
			if s.NoWait != "" {
				continue
			}
			err := l.WaitN(context.Background(), n)
			assert.ErrorIsf(t, err, clock.ErrNeverReady, "round %d: WaitN(ctx, %d)", round, n)
			if err != nil {
				assert.Regexpf(t, "^"+s.Pkg+": ", err.Error(), "round %d: WaitN(ctx, %d) error prefix", round, n)
			}
		}
		if s.NoWait == "" {
			assert.NoErrorf(t, l.WaitN(context.Background(), 0), "round %d: WaitN(ctx, 0)", round)
		}
		assert.Equalf(t, tokens, l.TokensAt(t0), "round %d: TokensAt(t0) after the edge calls: they must write nothing", round)
		if round == 0 {
			require.True(t, l.AllowN(t0, limit), "AllowN(t0, limit) on a new limiter")
		}
	}
	// At an instant where the limiter is idle the edge calls must not start
	// anything either (a window anchored there, say): afterwards it answers
	// as a twin that got only the admission above.
	twin := s.newLimiter(t, limit, w)
	require.True(t, twin.AllowN(t0, limit), "AllowN(t0, limit) on a new twin")
	t1 := t0.Add(5 * w)
	for _, n := range []int{0, -1, math.MinInt, limit + 1, math.MaxInt} {
		l.AllowN(t1, n)
		l.ReadyAt(t1, n)
	}
	l.TokensAt(t1)
	for i, d := range []time.Duration{w / 2, w + w/4, 2*w - 1, 2 * w, 3*w + w/2} {
		n := []int{limit, 1, 1, limit, 1}[i]
		sameAnswers(t, l, twin, t0, t1.Add(d), n, fmt.Sprintf("after the edge calls at an idle instant t1 = t0+5W, at t1%+v", d))
	}
}

// timeBackwards checks that a stale instant never lets more through than the
// latest admitted instant, and that it moves no state backwards.
func (s *suite) timeBackwards(t *testing.T) {
	const limit = 4
	const w = time.Second
	l := s.newLimiter(t, limit, w)
	t0 := time.Now()
	require.True(t, l.AllowN(t0.Add(w), limit), "AllowN(t0+W, limit)")
	for _, x := range []time.Time{t0, t0.Add(w - 1), t0.Add(-w), t0.Add(-100 * 365 * 24 * time.Hour), {}} {
		assert.Falsef(t, l.AllowN(x, 1), "AllowN(%s, 1) after AllowN(t0+W, limit)", at(t0, x))
		assert.Equalf(t, 0, l.TokensAt(x), "TokensAt(%s) after AllowN(t0+W, limit)", at(t0, x))
	}
	assert.False(t, l.AllowN(t0.Add(w), 1), "AllowN(t0+W, 1): a stale call moved state backwards")

	// Random histories: before each call at an instant q earlier than the
	// latest admitted one L, TokensAt(q) <= TokensAt(L), and an admission at
	// q fits TokensAt(L).
	s.trials(t, 1, 40, func(tr trial) {
		l := s.newSet(t, tr.cfg)
		latest, admitted := int64(0), false
		for i, c := range tr.cfg.calls(tr.rng, 60) {
			x := tr.t0.Add(time.Duration(c.off))
			if admitted && c.off < latest {
				L := tr.t0.Add(time.Duration(latest))
				room := l.TokensAt(L)
				assert.LessOrEqualf(t, l.TokensAt(x), room, "%v call %d: TokensAt(%s) must not exceed TokensAt(%s), the latest admission", tr, i, at(tr.t0, x), at(tr.t0, L))
				if l.AllowN(x, c.n) && c.n > 0 {
					require.LessOrEqualf(t, c.n, room, "%v call %d: AllowN(%s, %d) admitted a stale call above TokensAt(%s) = %d", tr, i, at(tr.t0, x), c.n, at(tr.t0, L), room)
				}
				continue
			}
			if l.AllowN(x, c.n) && c.n > 0 {
				latest, admitted = max(latest, c.off), true
			}
		}
	})
}

// extremeInstants checks that AllowN, TokensAt and ReadyAt agree at the
// zero instant and at instants far in the past and the future, before and
// after admissions there, in both orders.
func (s *suite) extremeInstants(t *testing.T) {
	const limit = 3
	const w = time.Second
	year := 365 * 24 * time.Hour
	t0 := time.Now()
	past := []time.Time{{}, time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC), t0.Add(-200 * year)}
	future := []time.Time{t0.Add(80 * year), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), t0.Add(290 * year), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)}
	for _, order := range []string{"past first", "future first"} {
		l := s.newLimiter(t, limit, w)
		xs := append(append([]time.Time(nil), past...), future...)
		if order == "future first" {
			xs = append(append([]time.Time(nil), future...), past...)
		}
		// canAdvance: nothing was admitted far in the future yet, so a full
		// window empties at a representable instant.
		canAdvance := true
		for _, x := range xs {
			s.agreeAt(t, l, t0, x, limit, order, false)
		}
		require.Truef(t, l.AllowN(t0, 1), "%s: AllowN(t0, 1)", order)
		for i, x := range xs {
			if i >= len(past) && order == "past first" || i < len(future) && order == "future first" {
				canAdvance = false
			}
			s.agreeAt(t, l, t0, x, limit, order, canAdvance)
			l.AllowN(x, limit)
			s.agreeAt(t, l, t0, x, limit, order, canAdvance)
		}
	}
}

// timeBounds checks limiters filled at the first and at the last instant a
// time.Time can hold, both past every limiter's representable range.
//
// At the first (time.Time{}), the admissions count like any other: the
// limiter is full there, and room comes back at the instant ReadyAt gives.
// At the last, time cannot advance any more: ReadyAt must say never, for
// that instant and for every earlier one (decided there), and WaitN must
// fail at once with ErrNeverReady instead of waiting or spinning.
func (s *suite) timeBounds(t *testing.T) {
	const limit = 2
	for _, start := range []time.Time{{}, time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)} {
		l := s.newLimiter(t, limit, time.Second)
		require.Truef(t, l.AllowN(start, limit), "AllowN(%v, limit) on a new limiter", start)
		assert.Equalf(t, 0, l.TokensAt(start), "TokensAt(%v) after AllowN(%v, limit)", start, start)
		assert.Falsef(t, l.AllowN(start, 1), "AllowN(%v, 1) after AllowN(%v, limit)", start, start)
		r, ok := l.ReadyAt(start, 1)
		require.Truef(t, ok, "ReadyAt(%v, 1) after AllowN(%v, limit): not ok", start, start)
		require.Truef(t, r.After(start), "ReadyAt(%v, 1) = %v after AllowN(%v, limit): not after now", start, r, start)
		assert.Truef(t, l.AllowN(r, 1), "AllowN(ReadyAt(%v, 1) = %v, 1) refused", start, r)
	}

	end := time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	l := s.newLimiter(t, limit, time.Second)
	require.True(t, l.AllowN(end, limit), "AllowN(year 9999, limit) on a new limiter")
	for _, x := range []time.Time{end, end.Add(-time.Hour), time.Now(), {}} {
		assert.Equalf(t, 0, l.TokensAt(x), "TokensAt(%v) after AllowN(year 9999, limit)", x)
		assert.Falsef(t, l.AllowN(x, 1), "AllowN(%v, 1) after AllowN(year 9999, limit)", x)
		r, ok := l.ReadyAt(x, 1)
		assert.Falsef(t, ok, "ReadyAt(%v, 1) after AllowN(year 9999, limit): ok (at %v), but time cannot advance", x, r)
		assert.Equalf(t, time.Time{}, r, "ReadyAt(%v, 1) after AllowN(year 9999, limit): the instant with ok=false", x)
		if id, ok := l.(Idler); ok {
			assert.Falsef(t, id.IdleAt(x), "IdleAt(%v) after AllowN(year 9999, limit)", x)
		}
	}
	if s.NoWait != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	assert.ErrorIs(t, l.WaitN(ctx, 1), clock.ErrNeverReady, "WaitN(ctx, 1) after AllowN(year 9999, limit)")
}

// agreeAt checks at x: TokensAt in [0, limit]; ReadyAt(x, n) is x itself for
// every n it admits, and for the next n either ok=false or an instant after
// x at which AllowN admits (that AllowN is made). mustBeOK says ReadyAt must
// answer ok.
func (s *suite) agreeAt(t *testing.T, l Limiter, t0, x time.Time, limit int, order string, mustBeOK bool) {
	t.Helper()
	tokens := l.TokensAt(x)
	require.Truef(t, tokens >= 0 && tokens <= limit, "%s: TokensAt(%s) = %d, outside [0, %d]", order, at(t0, x), tokens, limit)
	if rm, ok := l.(Remainer); ok {
		rem := rm.RemainingAt(x, nil)
		require.Lenf(t, rem, 1, "%s: RemainingAt(%s) of a one-rule limiter", order, at(t0, x))
		assert.Equalf(t, tokens, rem[0], "%s: RemainingAt(%s) = %v with TokensAt = %d", order, at(t0, x), rem, tokens)
	}
	r, ok := l.ReadyAt(x, 0)
	assert.Truef(t, ok && r == x, "%s: ReadyAt(%s, 0) = %v, %v; want now unchanged, true", order, at(t0, x), r, ok)
	if tokens >= 1 {
		r, ok := l.ReadyAt(x, tokens)
		assert.Truef(t, ok && r == x, "%s: ReadyAt(%s, %d) = %s, %v with TokensAt = %d; want now unchanged, true", order, at(t0, x), tokens, at(t0, r), ok, tokens)
	}
	if tokens == limit {
		return
	}
	n := tokens + 1
	require.Falsef(t, l.AllowN(x, n), "%s: AllowN(%s, %d) admitted with TokensAt = %d", order, at(t0, x), n, tokens)
	r, ok = l.ReadyAt(x, n)
	if mustBeOK {
		require.Truef(t, ok, "%s: ReadyAt(%s, %d) not ok, though every admission is at most at t0", order, at(t0, x), n)
	}
	if !ok {
		assert.Equalf(t, time.Time{}, r, "%s: ReadyAt(%s, %d) instant with ok=false", order, at(t0, x), n)
		return
	}
	require.Truef(t, r.After(x), "%s: ReadyAt(%s, %d) = %s, not after now though n does not fit now", order, at(t0, x), n, at(t0, r))
	require.Truef(t, l.AllowN(r, n), "%s: AllowN(ReadyAt(%s, %d) = %s, %d) refused: ReadyAt must answer ok=false where time cannot advance", order, at(t0, x), n, at(t0, r), n)
}
