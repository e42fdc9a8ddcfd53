package multi

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/internal/twocount"
)

// Approx is the approximate flavour: every rule is a two-counter window that
// decides exactly as package window does. Rule i splits time into
// back-to-back windows of length Window_i and keeps the cost admitted in the
// current one (curr) and in the one before (prev). At instant t, elapsed = t
// minus the start of t's window, it admits n iff
//
//	prev*(Window-elapsed) + (curr+n)*Window <= Limit*Window
//
// computed exactly in integers. A call is admitted iff every rule admits it,
// and then every rule counts it, in one step. A rule admits at most Limit in
// each of its windows and at most 2*Limit-1 in any window of its length. An
// Approx with one rule decides every call as a window.Limiter with the same
// limit and window.
//
// A rule's windows are aligned on its first admission, and again on the first
// admission after both counters have fallen to zero. So decisions depend only
// on the calls, never on when the limiter was created, and an idle limiter
// (IdleAt) decides exactly as a new one. Each rule records the start of its
// current window: an instant before it is decided at that start (never more
// permissive than a later instant of the window), and an instant inside the
// window is decided as given. Instants more than about 63 years before or
// after NewApprox are treated as that bound.
//
// An Approx is safe for concurrent use by multiple goroutines; decisions are
// lock-free and allocation-free once its internal table has grown to the
// number of callers admitting at the same moment (NewApprox allocates two
// entries; contention adds at most 10 more parts to the table over the
// limiter's life, and a few more allocations when goroutines grow it at the
// same moment: the losers' are dropped), and a refused call writes nothing
// shared. The zero value refuses
// every call of cost 1 or more; use NewApprox. An Approx must not be copied
// after first use.
type Approx struct {
	// The state is a series of immutable snapshots of every rule's
	// counters, the current one named by head and replaced by one
	// compare-and-swap per admission; the comments in slots.go and
	// docs/multi.md give the protocol.
	//
	// head is tag<<idxBits | idx: slot idx holds the current snapshot,
	// written with version tag. Written only by compare-and-swap.
	head atomic.Uint64
	// chunks[c] holds 2<<c slots of stride words each; slot indices run
	// through the chunks in order. A nil chunk is grown by compare-and-swap.
	chunks [maxChunks]atomic.Pointer[[]atomic.Uint64]
	// Immutable after NewApprox.
	stride    uint64
	rules     []twocount.Rule
	cfg       []Rule
	minLimit  int
	maxWindow time.Duration
	base      clock.Base
}

// NewApprox returns an approximate limiter for the rules: a two-counter window
// for each. It allocates a few words per rule; decisions allocate nothing.
// It returns an error naming the rule when there is no rule or more than
// MaxRules, or when a rule's limit is outside [1, MaxApproxLimit] or its
// window outside [1ns, MaxApproxWindow].
func NewApprox(rules ...Rule) (*Approx, error) {
	minLimit, maxWindow, err := validate(rules, MaxApproxLimit, MaxApproxWindow)
	if err != nil {
		return nil, err
	}
	a := &Approx{
		cfg:       append([]Rule(nil), rules...),
		rules:     make([]twocount.Rule, len(rules)),
		minLimit:  minLimit,
		maxWindow: maxWindow,
		base:      clock.NewBase(),
	}
	for i, r := range rules {
		a.rules[i] = twocount.Rule{Limit: int64(r.Limit), Window: int64(r.Window)}
	}
	a.stride = (ruleW + 2*uint64(len(rules)) + 7) &^ 7
	c0 := make([]atomic.Uint64, 2*a.stride)
	c0[stateW].Store(1<<1 | owned)
	start := int64(twocount.StartNew)
	for i := range rules {
		c0[ruleW+2*i].Store(uint64(start))
	}
	a.chunks[0].Store(&c0)
	a.head.Store(1 << idxBits)
	return a, nil
}

// Rules returns a copy of the rules, in the order given to NewApprox.
func (a *Approx) Rules() []Rule { return append([]Rule(nil), a.cfg...) }

// MaxN returns the largest cost a single call can ever be admitted for: the
// smallest limit of the rules. AllowN refuses any n above it at once, and
// ReadyAt reports never for it. It is a bound, not a rule: use Rules for the
// rules themselves.
func (a *Approx) MaxN() int { return a.minLimit }

// LongestWindow returns the longest window of the rules: the limiter is idle
// (see IdleAt) at the latest two of these windows after its last admission.
// It is a bound, not a rule: use Rules for the rules themselves.
func (a *Approx) LongestWindow() time.Duration { return a.maxWindow }

// view returns the instant rule i decides the clamped offset t0
// (twocount.Clamp) at, and the window start and counters in effect then, from
// the snapshot in slot s. The caller validates the slot afterwards. (It is
// twocount.Rule.View with the clamp hoisted out of the callers' loops.)
func (a *Approx) view(s []atomic.Uint64, i int, t0 int64) (t, ws, p, c int64) {
	start, pc := int64(s[ruleW+2*i].Load()), s[ruleW+2*i+1].Load()
	t = max(t0, start)
	ws, p, c, _ = a.rules[i].Step(start, int64(pc>>32), int64(pc&lowMask), t)
	return t, ws, p, c
}

// Allow is shorthand for AllowN(time.Now(), 1), reading only the monotonic
// clock.
func (a *Approx) Allow() bool {
	if a.minLimit == 0 { // the zero Approx
		return false
	}
	return a.allowN(a.base.Now(), 1, nil)
}

// AllowN reports whether n units of cost are admitted at instant now, and if
// so counts them in every rule. It admits iff every rule's two-counter
// estimate admits it. All-or-nothing: a refused call changes no rule's state.
//
// n == 0 is always admitted and records nothing. n < 0 and n > MaxN() (the
// smallest limit) are always refused.
func (a *Approx) AllowN(now time.Time, n int) bool {
	if n <= 0 {
		return n == 0
	}
	if n > a.minLimit { // also the zero Approx: minLimit 0
		return false
	}
	return a.allowN(a.base.Offset(now), int64(n), nil)
}

// hookAllowRule is the testHook point in allowN after each rule's words are
// read and admit, before the next rule's: calls made there can free the
// snapshot's slot and leave a losing writer's snapshot in it, which only
// valid tells apart (TestHookAllowLoserSlot).
const hookAllowRule = 2

// stackRules is how many rules' next counters allowN keeps on the stack
// between deciding and writing; with more rules it reads them twice.
const stackRules = 8

// allowN decides n at the offset off. When seen is not nil (len(a.rules)
// long), it also fills seen with every rule's view of the state the
// decision leaves: the snapshot it was refused on, or the one it installed.
func (a *Approx) allowN(off, n int64, seen []ruleView) bool {
	off = twocount.Clamp(off)
	var (
		mine    []atomic.Uint64 // scratch slot, once the call looks admissible
		mineIdx uint64
		next    [stackRules][2]uint64 // each rule's next start, prev<<32|curr
	)
	onStack := len(a.rules) <= stackRules
	for {
		h, s := a.load()
		// Decide, reading only: a refused call writes nothing.
		ok := true
		for i := range a.rules {
			// a.view, written out: it is over the inlining budget.
			start, pc := int64(s[ruleW+2*i].Load()), s[ruleW+2*i+1].Load()
			t := max(off, start)
			ws, p, c, _ := a.rules[i].Step(start, int64(pc>>32), int64(pc&lowMask), t)
			if !a.rules[i].Fits(p, c, t-ws, n) {
				ok = false
				break
			}
			if onStack {
				next[i] = [2]uint64{uint64(ws), uint64(p)<<32 | uint64(c+n)}
			}
			testHook(hookAllowRule)
		}
		// With seen (DecideRules), every rule's view of the same snapshot,
		// validated with it below; a pass of its own keeps AllowN's loop as
		// it was.
		for i := range seen {
			v := &seen[i]
			v.t, v.ws, v.p, v.c = a.view(s, i, off)
		}
		if !valid(h, s) {
			continue // the slot was reused: the head has moved on
		}
		if !ok {
			if mine != nil {
				mine[stateW].Store(mine[stateW].Load() &^ owned)
			}
			return false
		}
		tag := nextTag(h >> idxBits)
		// Tag the scratch slot with the tag of the snapshot it will hold,
		// before writing it. No reader can validate against that tag
		// until the compare-and-swap below pairs it with this slot: tags
		// grow, so no earlier head had it.
		if mine == nil {
			if mineIdx, mine = a.acquire(tag); mine == nil {
				continue // the head has moved on: start again from it
			}
		} else if mine[stateW].Load() != tag<<1|owned {
			mine[stateW].Store(tag<<1 | owned) // a retry, on a newer head
		}
		if onStack {
			for i := range a.rules {
				if mine[ruleW+2*i].Load() != next[i][0] {
					mine[ruleW+2*i].Store(next[i][0]) // windows change rarely
				}
				mine[ruleW+2*i+1].Store(next[i][1])
			}
		} else {
			for i := range a.rules {
				_, ws, p, c := a.view(s, i, off)
				if mine[ruleW+2*i].Load() != uint64(ws) {
					mine[ruleW+2*i].Store(uint64(ws))
				}
				mine[ruleW+2*i+1].Store(uint64(p)<<32 | uint64(c+n))
			}
			if !valid(h, s) {
				continue
			}
		}
		// The linearization point: the head still names the snapshot
		// everything above was computed from, and now names the next one,
		// for every rule at once.
		if a.head.CompareAndSwap(h, tag<<idxBits|mineIdx) {
			// The superseded slot is ours to free (only one
			// compare-and-swap can replace h); it keeps its tag, so
			// readers of h still validate.
			s[stateW].Store(h >> idxBits << 1)
			for i := range seen {
				seen[i].c += n
			}
			return true
		}
	}
}

// hookTokensRule is the testHook point in TokensAt after each rule's words are
// read, before the next rule's: calls made there can reuse and rewrite the
// snapshot's slot, which only valid tells apart (TestHookTokensSlotReuse).
const hookTokensRule = 1

// TokensAt returns the largest cost AllowN(now, n) would admit at now: the
// smallest over the rules. It is a snapshot: under concurrent admissions it
// may be stale by the time it returns.
func (a *Approx) TokensAt(now time.Time) int {
	if a.minLimit == 0 {
		return 0
	}
	off := twocount.Clamp(a.base.Offset(now))
	for {
		h, s := a.load()
		best := int64(a.minLimit)
		for i := range a.rules {
			t, ws, p, c := a.view(s, i, off)
			best = min(best, a.rules[i].Tokens(p, c, t-ws))
			testHook(hookTokensRule)
		}
		if valid(h, s) {
			return int(best)
		}
	}
}

// RemainingAt appends to dst, for each rule in the order given to NewApprox,
// the largest cost that rule alone would admit at now, and returns the
// extended slice: what an HTTP 429 reports per policy. All values come from
// one snapshot. With room in dst it allocates nothing.
func (a *Approx) RemainingAt(now time.Time, dst []int) []int {
	if a.minLimit == 0 {
		return dst
	}
	off := twocount.Clamp(a.base.Offset(now))
	n0 := len(dst)
	for {
		dst = dst[:n0]
		h, s := a.load()
		for i := range a.rules {
			t, ws, p, c := a.view(s, i, off)
			dst = append(dst, int(a.rules[i].Tokens(p, c, t-ws)))
		}
		if valid(h, s) {
			return dst
		}
	}
}

// ResetsAt appends to dst, for each rule in the order given to NewApprox, the
// earliest instant, not before now, at which that rule's estimate alone
// would admit its whole limit if nothing else were admitted: now itself when
// it would at now, the zero Time when it would not even at the last instant
// the limiter tells apart. It returns the extended slice: with RemainingAt,
// what the RateLimit field reports per policy. All values come from one
// snapshot. With room in dst and at most 8 rules it allocates nothing.
func (a *Approx) ResetsAt(now time.Time, dst []time.Time) []time.Time {
	if a.minLimit == 0 {
		return dst
	}
	var buf [stackRules]ruleView
	seen := a.views(&buf)
	off := a.base.Offset(now)
	a.viewAll(twocount.Clamp(off), seen)
	for i := range seen {
		r, v := &a.rules[i], &seen[i]
		at, fits := readyOf(r, v, r.Limit, r.Tokens(v.p, v.c, v.t-v.ws))
		dst = append(dst, a.instant(now, off, at, fits))
	}
	return dst
}

// ReadyAt returns the earliest instant, not before now, at which AllowN would
// admit n if nothing else were admitted meanwhile: the latest of the instants
// at which each rule would admit it, and now itself when n fits now. ok is
// false when n can never be admitted: n < 0 or n > MaxN(), or n does not fit
// at the last instant the limiter can tell apart (about 63 years after
// NewApprox), after which time no longer moves for it. n == 0 is ready at
// now.
func (a *Approx) ReadyAt(now time.Time, n int) (at time.Time, ok bool) {
	if n == 0 {
		return now, true
	}
	if n < 0 || n > a.minLimit {
		return time.Time{}, false
	}
	raw := a.base.Offset(now)
	off := twocount.Clamp(raw)
	for {
		h, s := a.load()
		var ready int64 = twocount.OffMin
		fits := true
		for i := range a.rules {
			t, ws, p, c := a.view(s, i, off)
			if r := a.rules[i].ReadyAt(ws, p, c, t, int64(n)); r != t {
				fits = false
				ready = max(ready, r)
			}
		}
		if !valid(h, s) {
			continue
		}
		switch {
		case fits:
			return now, true
		case ready > twocount.OffMax:
			return time.Time{}, false
		default:
			return a.base.At(now, raw, ready), true
		}
	}
}

// IdleAt reports whether the limiter carries no information at now: for
// every rule, nothing was admitted in the window that contains now or in the
// one before it. An idle limiter decides every call at an instant at or after
// now exactly as a new limiter would.
func (a *Approx) IdleAt(now time.Time) bool {
	if a.minLimit == 0 {
		return true
	}
	off := a.base.Offset(now)
	for {
		h, s := a.load()
		idle := true
		for i := range a.rules {
			if !a.rules[i].Idle(int64(s[ruleW+2*i].Load()), off) {
				idle = false
				break
			}
		}
		if valid(h, s) {
			return idle
		}
	}
}

// Wait is shorthand for WaitN(ctx, 1).
func (a *Approx) Wait(ctx context.Context) error { return a.WaitN(ctx, 1) }

// WaitN blocks until n units are admitted by every rule at once, and returns
// nil. It returns an error, having admitted nothing, when ctx ends first
// (ctx.Err()), at once when ctx's deadline falls before the instant n could
// be admitted (wrapping ErrDeadline), and at once when n can never be
// admitted (wrapping ErrNeverReady). A waiter does not queue.
func (a *Approx) WaitN(ctx context.Context, n int) error {
	return clock.Wait(ctx, "multi", a, n)
}
