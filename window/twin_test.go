package window

import (
	"cmp"
	"context"
	"math/big"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/internal/twocount"
)

// This file holds the mutex twin, the harness that runs every test on both
// implementations, and refModel, a deliberately naive reference for the
// decisions.

// mutexLimiter has the semantics of Limiter, with the state in plain fields
// guarded by a mutex. It is the reference the lock-free protocol is tested
// against and the baseline the benchmarks compare with. It shares the
// arithmetic of internal/twocount with Limiter (checked there against
// math/big), but none of the word encoding.
type mutexLimiter struct {
	rule twocount.Rule
	base clock.Base

	mu sync.Mutex
	// start, prev and curr are guarded by mu: the current window's start and
	// the cost admitted in the window before it and in it.
	start, prev, curr int64
}

func newMutex(limit int, window time.Duration) (*mutexLimiter, error) {
	if err := validate(limit, window); err != nil {
		return nil, err
	}
	r := twocount.Rule{Limit: int64(limit), Window: int64(window)}
	return &mutexLimiter{rule: r, base: clock.NewBase(), start: twocount.StartNew}, nil
}

func (m *mutexLimiter) Limit() int                       { return int(m.rule.Limit) }
func (m *mutexLimiter) Window() time.Duration            { return time.Duration(m.rule.Window) }
func (m *mutexLimiter) Allow() bool                      { return m.allow(m.base.Now(), 1) }
func (m *mutexLimiter) AllowN(now time.Time, n int) bool { return m.allow(m.base.Offset(now), n) }
func (m *mutexLimiter) Wait(ctx context.Context) error   { return m.WaitN(ctx, 1) }
func (m *mutexLimiter) WaitN(ctx context.Context, n int) error {
	return clock.Wait(ctx, "window", m, n)
}

func (m *mutexLimiter) allow(off int64, n int) bool {
	if n <= 0 {
		return n == 0
	}
	k := int64(n)
	if k > m.rule.Limit {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ws, p, c, _ := m.rule.View(m.start, m.prev, m.curr, off)
	if !m.rule.Fits(p, c, t-ws, k) {
		return false
	}
	m.start, m.prev, m.curr = ws, p, c+k
	return true
}

// viewLocked requires m.mu.
func (m *mutexLimiter) viewLocked(off int64) (t, ws, p, c int64) {
	t, ws, p, c, _ = m.rule.View(m.start, m.prev, m.curr, off)
	return t, ws, p, c
}

func (m *mutexLimiter) TokensAt(now time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ws, p, c := m.viewLocked(m.base.Offset(now))
	return int(m.rule.Tokens(p, c, t-ws))
}

func (m *mutexLimiter) ReadyAt(now time.Time, n int) (time.Time, bool) {
	if n == 0 {
		return now, true
	}
	if n < 0 || int64(n) > m.rule.Limit {
		return time.Time{}, false
	}
	m.mu.Lock()
	t, ws, p, c := m.viewLocked(m.base.Offset(now))
	m.mu.Unlock()
	switch r := m.rule.ReadyAt(ws, p, c, t, int64(n)); {
	case r == t:
		return now, true
	case r > twocount.OffMax:
		return time.Time{}, false
	default:
		return m.base.Time(r), true
	}
}

func (m *mutexLimiter) IdleAt(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rule.Idle(m.start, m.base.Offset(now))
}

// limiter is the method set both implementations share (docs/api-contract.md),
// plus setState, a test seam that puts a limiter in a given state.
type limiter interface {
	Allow() bool
	AllowN(now time.Time, n int) bool
	TokensAt(now time.Time) int
	ReadyAt(now time.Time, n int) (time.Time, bool)
	IdleAt(now time.Time) bool
	Wait(ctx context.Context) error
	WaitN(ctx context.Context, n int) error
	Limit() int
	Window() time.Duration

	// setState makes the current window start at instant start with the
	// given counters, as if reached without an admission at start (the
	// state a concurrent race can leave, see docs/window.md).
	setState(start time.Time, prev, curr int64)
}

func (l *Limiter) setState(start time.Time, prev, curr int64) {
	a := l.at.Load()
	l.at.Store(packAt(twocount.Clamp(l.base.Offset(start)), false, a&1))
	gen := l.cnt.Load() >> genShift
	l.cnt.Store(gen<<genShift | uint64(prev)<<countBits | uint64(curr))
}

func (m *mutexLimiter) setState(start time.Time, prev, curr int64) {
	m.mu.Lock()
	m.start, m.prev, m.curr = twocount.Clamp(m.base.Offset(start)), prev, curr
	m.mu.Unlock()
}

var (
	_ limiter = (*Limiter)(nil)
	_ limiter = (*mutexLimiter)(nil)
)

// impl is one implementation under test.
type impl struct {
	name string
	new  func(limit int, window time.Duration) (limiter, error)
}

var impls = []impl{
	{"cas", func(limit int, window time.Duration) (limiter, error) {
		l, err := New(limit, window)
		if err != nil {
			return nil, err
		}
		return l, nil
	}},
	{"mutex", func(limit int, window time.Duration) (limiter, error) {
		m, err := newMutex(limit, window)
		if err != nil {
			return nil, err
		}
		return m, nil
	}},
}

// forEachImpl runs f as a subtest on every implementation.
func forEachImpl(t *testing.T, f func(t *testing.T, mk func(limit int, window time.Duration) limiter)) {
	t.Helper()
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			f(t, func(limit int, window time.Duration) limiter {
				t.Helper()
				l, err := im.new(limit, window)
				if err != nil {
					t.Fatalf("New(%d, %v): %v", limit, window, err)
				}
				return l
			})
		})
	}
}

// refModel is the naive reference: the admitted stamps in a slice, the
// formula evaluated in math/big, windows counted by scanning the slice. Its
// alignment rule is stated directly: windows are [anchor+k*W,
// anchor+(k+1)*W); when both the current and the previous window are empty
// (or nothing was ever admitted) the limiter is idle, and an admission at t
// sets anchor = t. An instant earlier than the start of the window of the
// latest admission is treated as that start.
type refModel struct {
	limit, window int64
	anchored      bool
	anchor        int64
	floor         int64 // start of the window of the latest admission
	stamps        []refStamp
}

type refStamp struct{ at, cost int64 }

// costIn returns the cost stamped in [lo, hi).
func (r *refModel) costIn(lo, hi int64) int64 {
	var c int64
	for _, s := range r.stamps {
		if s.at >= lo && s.at < hi {
			c += s.cost
		}
	}
	return c
}

// state returns the clamped instant, the start of its window and the two
// counts, with ws = t and zero counts when the limiter is idle at t.
func (r *refModel) state(now int64) (t, ws, prev, curr int64, idle bool) {
	t = now
	if !r.anchored {
		return t, t, 0, 0, true
	}
	t = max(t, r.floor)
	k := (t - r.anchor) / r.window // t >= floor >= anchor
	ws = r.anchor + k*r.window
	prev, curr = r.costIn(ws-r.window, ws), r.costIn(ws, ws+r.window)
	if prev == 0 && curr == 0 {
		return t, t, 0, 0, true
	}
	return t, ws, prev, curr, false
}

func (r *refModel) fits(prev, curr, el, n int64) bool {
	lhs := new(big.Int).Mul(big.NewInt(prev), big.NewInt(r.window-el))
	lhs.Add(lhs, new(big.Int).Mul(big.NewInt(curr+n), big.NewInt(r.window)))
	rhs := new(big.Int).Mul(big.NewInt(r.limit), big.NewInt(r.window))
	return lhs.Cmp(rhs) <= 0
}

func (r *refModel) allowN(now int64, n int) bool {
	if n == 0 {
		return true
	}
	if n < 0 || int64(n) > r.limit {
		return false
	}
	t, ws, prev, curr, idle := r.state(now)
	if !r.fits(prev, curr, t-ws, int64(n)) {
		return false
	}
	if idle {
		r.anchored, r.anchor = true, t
	}
	r.floor = ws
	r.stamps = append(r.stamps, refStamp{t, int64(n)})
	return true
}

func (r *refModel) tokensAt(now int64) int64 {
	t, ws, prev, curr, _ := r.state(now)
	lo, hi := int64(0), r.limit // fits(lo) holds or lo == 0; find the largest
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if r.fits(prev, curr, t-ws, mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// maxInAnyWindow returns the largest cost stamped in any (t-w, t]. The
// maximum is reached by a window ending at a stamp.
func maxInAnyWindow(stamps []refStamp, w int64) int64 {
	s := slices.Clone(stamps)
	slices.SortFunc(s, func(a, b refStamp) int { return cmp.Compare(a.at, b.at) })
	var best, sum int64
	lo := 0
	for hi := range s {
		sum += s[hi].cost
		for s[lo].at <= s[hi].at-w {
			sum -= s[lo].cost
			lo++
		}
		best = max(best, sum)
	}
	return best
}
