package conformance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// oneRuleConfigs are the (limit, window) pairs the random checks run on:
// windows in nanoseconds, so that sequences cross many windows, from the
// shortest window on.
var oneRuleConfigs = []Rule{
	{1, 10}, {2, 1}, {3, 100}, {5, 7}, {8, 1000}, {4, time.Second},
}

// severalRuleConfigs are the rule sets the random checks add when the type
// takes several rules: nested, coprime and duplicate windows.
var severalRuleConfigs = []ruleSet{
	{{2, 10}, {3, 100}},
	{{1, 7}, {4, 64}, {8, 1000}},
	{{3, 100}, {3, 100}},
	{{5, 1000}, {2, 10}},
}

// ruleSet is the configuration of one limiter under test.
type ruleSet []Rule

func (rs ruleSet) minLimit() int {
	return slices.MinFunc(rs, func(a, b Rule) int { return a.Limit - b.Limit }).Limit
}

func (rs ruleSet) maxLimit() int {
	return slices.MaxFunc(rs, func(a, b Rule) int { return a.Limit - b.Limit }).Limit
}

func (rs ruleSet) maxWindow() time.Duration {
	return slices.MaxFunc(rs, func(a, b Rule) int { return int(a.Window - b.Window) }).Window
}

// calls returns count random calls for the set: steps scaled to its first
// window, costs up to its largest limit.
func (rs ruleSet) calls(rng *rand.Rand, count int) []call {
	return randomCalls(rng, count, rs[0].Window, rs.maxLimit())
}

// ruleSets returns the configurations the random checks run on: one rule
// each, and several when the type takes several.
func (s *suite) ruleSets() []ruleSet {
	var out []ruleSet
	for _, r := range oneRuleConfigs {
		out = append(out, ruleSet{r})
	}
	if s.NewRules != nil {
		out = append(out, severalRuleConfigs...)
	}
	return out
}

// trial is one random history: its number, its configuration, its generator
// and the seed to report, and the instant its offsets count from.
type trial struct {
	num  int
	cfg  ruleSet
	rng  *rand.Rand
	seed uint64
	t0   time.Time
}

func (tr trial) String() string { return fmt.Sprintf("seed %d trial %d %v", tr.seed, tr.num, tr.cfg) }

// trials runs f count times, cycling through the rule sets, with a generator
// for stream seeded from a logged seed.
func (s *suite) trials(t *testing.T, stream uint64, count int, f func(tr trial)) {
	t.Helper()
	seed := newSeed(t)
	rng := newRand(seed, stream)
	sets := s.ruleSets()
	if count == 0 {
		count = len(sets)
	}
	for i := range count {
		f(trial{num: i, cfg: sets[i%len(sets)], rng: rng, seed: seed, t0: time.Now()})
	}
}

// newSet returns a new limiter for rs or stops the test.
func (s *suite) newSet(t testing.TB, rs ruleSet) Limiter {
	t.Helper()
	if len(rs) == 1 {
		return s.newLimiter(t, rs[0].Limit, rs[0].Window)
	}
	l, err := s.NewRules(rs...)
	if err != nil || l == nil {
		t.Fatalf("NewRules(%v) = %v, %v; want a limiter", rs, l, err)
	}
	return l
}

// newSeed returns a random seed and logs it, so that a failure can be
// replayed.
func newSeed(t *testing.T) uint64 {
	t.Helper()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	return seed
}

// newRand returns a generator for seed and stream.
func newRand(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

// call is one AllowN: an instant (offset from the sequence's t0) and a cost.
type call struct {
	off int64
	n   int
}

func (c call) String() string { return fmt.Sprintf("AllowN(t0%+dns, %d)", c.off, c.n) }

// randomCalls returns count calls whose instants move by steps biased towards
// the interesting distances for window w (0, exactly w, one nanosecond either
// side of it, small steps, backwards steps, idle gaps), and whose costs are
// mostly 1, with some up to the limit, 0, negative and above the limit.
func randomCalls(rng *rand.Rand, count int, w time.Duration, limit int) []call {
	W := int64(w)
	steps := []int64{0, 0, 0, 1, 1, 2, 3, 7, W, W - 1, W + 1, W / 2, W / 3, W / 7, W / 100,
		-1, -W / 10, -W, 2 * W, 2*W + 1, 5 * W, W/2 + 1, W/2 - 1, W / 10, W / 10, W / 20, 13, W / 4}
	calls := make([]call, count)
	var off int64
	for i := range calls {
		if rng.IntN(4) == 0 {
			off += W * rng.Int64N(128) / 128
		} else {
			off += steps[rng.IntN(len(steps))]
		}
		var n int
		switch r := rng.IntN(100); {
		case r < 60:
			n = 1
		case r < 85:
			n = 1 + rng.IntN(limit)
		case r < 90:
			n = limit
		case r < 94:
			n = limit + 1 + rng.IntN(2)
		case r < 97:
			n = 0
		default:
			n = -1 - rng.IntN(2)
		}
		calls[i] = call{off: off, n: n}
	}
	return calls
}

// replay returns a new limiter (from mk) fed calls, and checks that it
// decides each as recorded in admitted.
func replay(t *testing.T, mk func() Limiter, t0 time.Time, calls []call, admitted []bool) Limiter {
	t.Helper()
	l := mk()
	for i, c := range calls {
		got := l.AllowN(t0.Add(time.Duration(c.off)), c.n)
		require.Equalf(t, admitted[i], got, "twin replay, call %d: %v (a twin fed the same calls must decide the same)", i, c)
	}
	return l
}

// tokensAt checks that AllowN(now, n) admits iff n <= TokensAt(now).
func (s *suite) tokensAt(t *testing.T) {
	s.trials(t, 2, 0, func(tr trial) {
		l := s.newSet(t, tr.cfg)
		for i, c := range tr.cfg.calls(tr.rng, 200) {
			x := tr.t0.Add(time.Duration(c.off))
			tokens := l.TokensAt(x)
			require.Truef(t, tokens >= 0 && tokens <= tr.cfg.minLimit(), "%v call %d: TokensAt(%s) = %d, outside [0, %d]", tr, i, at(tr.t0, x), tokens, tr.cfg.minLimit())
			want := c.n == 0 || c.n >= 1 && c.n <= tokens
			require.Equalf(t, want, l.AllowN(x, c.n), "%v call %d: AllowN(%s, %d) with TokensAt = %d", tr, i, at(tr.t0, x), c.n, tokens)
		}
	})
}

// readyAt checks ReadyAt on random histories: ok for every n in [1, limit]
// (the instants stay far inside every representable range), never before
// now, now itself when n fits now, otherwise an instant at which a twin with
// the same history admits n and one nanosecond before which another twin
// refuses it.
func (s *suite) readyAt(t *testing.T) {
	s.trials(t, 3, 60, func(tr trial) {
		t0 := tr.t0
		mk := func() Limiter { return s.newSet(t, tr.cfg) }
		l := mk()
		calls := tr.cfg.calls(tr.rng, 1+tr.rng.IntN(25))
		admitted := make([]bool, len(calls))
		for i, c := range calls {
			admitted[i] = l.AllowN(t0.Add(time.Duration(c.off)), c.n)
		}
		w := int64(tr.cfg.maxWindow())
		q := calls[len(calls)-1].off + tr.rng.Int64N(3*w+1) - w
		now := t0.Add(time.Duration(q))
		tokens := l.TokensAt(now)
		for n := 1; n <= tr.cfg.minLimit(); n++ {
			where := fmt.Sprintf("%v after %v: ReadyAt(%s, %d)", tr, calls, at(t0, now), n)
			r, ok := l.ReadyAt(now, n)
			require.Truef(t, ok, "%s: not ok", where)
			require.Falsef(t, r.Before(now), "%s = %s: before now", where, at(t0, r))
			if n <= tokens {
				require.Truef(t, r == now, "%s = %s with TokensAt = %d: want now unchanged", where, at(t0, r), tokens)
				continue
			}
			require.Truef(t, r.After(now), "%s = %s with TokensAt = %d: want an instant after now", where, at(t0, r), tokens)
			require.Truef(t, replay(t, mk, t0, calls, admitted).AllowN(r, n), "%s = %s: a twin with the same history refuses n there", where, at(t0, r))
			require.Falsef(t, replay(t, mk, t0, calls, admitted).AllowN(r.Add(-1), n), "%s = %s: a twin with the same history admits n one nanosecond before", where, at(t0, r))
		}
	})
}

// idleAt checks that IdleAt is true after a gap of two windows beyond every
// instant used, and that once IdleAt(x) is true the limiter decides every
// call at an instant >= x as a new limiter does. It checks that from the
// first x at which IdleAt turns true (found by bisection), where an IdleAt
// that turns true too early (which would let keyed evict a key that still
// counts) decides differently from a new limiter: first a call of the whole
// limit at x itself.
func (s *suite) idleAt(t *testing.T) {
	if _, ok := s.newLimiter(t, 1, 1).(Idler); !ok {
		t.Skip("the type does not implement IdleAt")
	}
	s.trials(t, 4, 40, func(tr trial) {
		t0 := tr.t0
		l := s.newSet(t, tr.cfg)
		var hi int64 // the latest instant used
		for round := range 4 {
			for _, c := range tr.cfg.calls(tr.rng, 1+tr.rng.IntN(20)) {
				c.off += hi
				l.AllowN(t0.Add(time.Duration(c.off)), c.n)
				hi = max(hi, c.off)
			}
			idle := func(x int64) bool { return l.(Idler).IdleAt(t0.Add(time.Duration(x))) }
			x := hi + 2*int64(tr.cfg.maxWindow()) + tr.rng.Int64N(3)
			where := fmt.Sprintf("%v round %d", tr, round)
			require.Truef(t, idle(x), "%s: IdleAt(t0%+dns), two windows after every instant used", where, x)
			if lo := hi; idle(lo) {
				x = lo
			} else {
				for x-lo > 1 { // IdleAt(lo) false, IdleAt(x) true
					if mid := lo + (x-lo)/2; idle(mid) {
						x = mid
					} else {
						lo = mid
					}
				}
			}
			fresh := s.newSet(t, tr.cfg)
			sameAnswers(t, l, fresh, t0, t0.Add(time.Duration(x)), tr.cfg.minLimit(), fmt.Sprintf("%s: at the first instant IdleAt is true, t0%+dns", where, x))
			for i, c := range tr.cfg.calls(tr.rng, 20) {
				c.off = x + max(c.off, 0)
				now := t0.Add(time.Duration(c.off))
				sameAnswers(t, l, fresh, t0, now, c.n, fmt.Sprintf("%s: after IdleAt(t0%+dns), call %d", where, x, i))
				hi = max(hi, c.off)
			}
		}
	})
}

// sameAnswers checks that a and b give the same TokensAt, ReadyAt and AllowN
// at now for n (and makes the AllowN on both).
func sameAnswers(t *testing.T, a, b Limiter, t0, now time.Time, n int, where string) {
	t.Helper()
	require.Equalf(t, b.TokensAt(now), a.TokensAt(now), "%s: TokensAt(%s) (want: the twin's)", where, at(t0, now))
	ra, oka := a.ReadyAt(now, n)
	rb, okb := b.ReadyAt(now, n)
	require.Equalf(t, fmt.Sprint(at(t0, rb), okb), fmt.Sprint(at(t0, ra), oka), "%s: ReadyAt(%s, %d) (want: the twin's)", where, at(t0, now), n)
	require.Equalf(t, b.AllowN(now, n), a.AllowN(now, n), "%s: AllowN(%s, %d) (want: the twin's)", where, at(t0, now), n)
}

// refusalWritesNothing feeds one limiter random calls with their refusals and
// queries, a twin only the calls the first admitted, and checks that both
// then answer every call alike.
func (s *suite) refusalWritesNothing(t *testing.T) {
	s.trials(t, 5, 40, func(tr trial) {
		t0 := tr.t0
		l := s.newSet(t, tr.cfg)
		twin := s.newSet(t, tr.cfg)
		calls := tr.cfg.calls(tr.rng, 60)
		var last int64
		for _, c := range calls {
			now := t0.Add(time.Duration(c.off))
			l.TokensAt(now)
			l.ReadyAt(now, c.n)
			if id, ok := l.(Idler); ok {
				id.IdleAt(now)
			}
			if l.AllowN(now, c.n) {
				twin.AllowN(now, c.n)
			}
			last = c.off
		}
		for i, c := range tr.cfg.calls(tr.rng, 30) {
			now := t0.Add(time.Duration(last + c.off))
			sameAnswers(t, l, twin, t0, now, c.n, fmt.Sprintf("%v, continuation call %d", tr, i))
		}
	})
}

// oracleOneRule replays random sequences through the limiter and the oracle
// and compares every answer.
func (s *suite) oracleOneRule(t *testing.T) {
	seed := newSeed(t)
	rng := newRand(seed, 6)
	for _, cfg := range oneRuleConfigs {
		for range 3 {
			l := s.newLimiter(t, cfg.Limit, cfg.Window)
			s.replayOracle(t, seed, []Rule{cfg}, l, randomCalls(rng, 150, cfg.Window, cfg.Limit))
		}
	}
}

// ruleWindows are the windows a random rule set draws from: tiny, coprime
// and nested ones, so that the rules' windows interleave.
var ruleWindows = []time.Duration{7, 10, 64, 100, 333, 1000, 10_000, 1_000_000}

// oracleRules replays random sequences on random sets of one to four rules.
func (s *suite) oracleRules(t *testing.T) {
	if s.NewRules == nil {
		t.Skip("the type takes one rule; Options.NewRules is nil")
	}
	seed := newSeed(t)
	rng := newRand(seed, 7)
	for range 40 {
		rules := make([]Rule, 1+rng.IntN(4))
		for i := range rules {
			rules[i] = Rule{1 + rng.IntN(8), ruleWindows[rng.IntN(len(ruleWindows))]}
		}
		l, err := s.NewRules(rules...)
		require.NoErrorf(t, err, "NewRules(%v)", rules)
		maxLimit := slices.MaxFunc(rules, func(a, b Rule) int { return a.Limit - b.Limit }).Limit
		s.replayOracle(t, seed, rules, l, randomCalls(rng, 150, rules[0].Window, maxLimit))
	}
}

// replayOracle plays calls on l and on the oracle for rules, and before each
// AllowN compares TokensAt, RemainingAt (if l has it), ReadyAt and IdleAt (if
// l has it).
func (s *suite) replayOracle(t *testing.T, seed uint64, rules []Rule, l Limiter, calls []call) {
	t.Helper()
	m := s.newModel(rules...)
	t0 := time.Now()
	var buf []int
	for i, c := range calls {
		now := t0.Add(time.Duration(c.off))
		where := fmt.Sprintf("seed %d rules %v call %d", seed, rules, i)
		if r, ok := l.(Remainer); ok && len(rules) > 1 {
			buf = r.RemainingAt(now, buf[:0])
			require.Equalf(t, m.RemainingAt(c.off), buf, "%s: RemainingAt(%s) (want: the oracle's)", where, at(t0, now))
		}
		require.Equalf(t, m.TokensAt(c.off), l.TokensAt(now), "%s: TokensAt(%s) (want: the oracle's)", where, at(t0, now))
		wantAt, wantOK := m.ReadyAt(c.off, c.n)
		gotAt, gotOK := l.ReadyAt(now, c.n)
		want := fmt.Sprint(wantAt, wantOK)
		if !wantOK {
			want = fmt.Sprint(0, false)
		}
		got := fmt.Sprint(int64(gotAt.Sub(t0)), gotOK)
		if !gotOK {
			got = fmt.Sprint(gotAt, false)
			if gotAt.IsZero() {
				got = fmt.Sprint(0, false)
			}
		}
		require.Equalf(t, want, got, "%s: ReadyAt(%s, %d) as offset from t0 (want: the oracle's)", where, at(t0, now), c.n)
		if id, ok := l.(Idler); ok {
			require.Equalf(t, m.IdleAt(c.off), id.IdleAt(now), "%s: IdleAt(%s) (want: the oracle's)", where, at(t0, now))
		}
		require.Equalf(t, m.AllowN(c.off, c.n), l.AllowN(now, c.n), "%s: AllowN(%s, %d) (want: the oracle's)", where, at(t0, now), c.n)
	}
}
