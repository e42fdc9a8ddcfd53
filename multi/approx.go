package multi

import (
	"context"
	"math"
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/slidelimit/slidelimit/internal/clock"
)

// Approx is the approximate flavour: a two-counter window for every rule,
// with the formula of package window. Rule i splits time into back-to-back windows of length
// Window_i and keeps the cost admitted in the current one (curr) and in the
// one before (prev). At instant t, elapsed = t minus the start of t's window,
// it admits n iff
//
//	prev*(Window-elapsed) + (curr+n)*Window <= Limit*Window
//
// computed exactly in integers. A call is admitted iff every rule admits it,
// and then every rule counts it, in one step. A rule admits at most Limit in
// each of its windows and at most 2*Limit-1 in any window of its length.
//
// A rule's windows are aligned on its first admission, and again on the first
// admission after a whole window has passed with nothing admitted (when both
// counters are zero, where the windows fall is free). So decisions depend
// only on the calls, never on when the limiter was created, and an idle
// limiter (IdleAt) decides exactly as a new one. As in Limiter, and unlike
// package window (which only records the start of its window), an instant
// before the latest admitted one is treated as that latest instant.
//
// # Protocol
//
// The counters of all rules, with the latest admitted instant, form a
// snapshot that lives in a slot of a preallocated slot table. One 64-bit head
// word names the current slot and carries a tag that grows with every
// admission. A caller reads the head, reads the slot, and checks that the
// slot still holds that tag (the tag in the slot's state word works as a
// seqlock: a slot taken for reuse gets a new tag first). A refused
// call stops there: it has written nothing. An admitted call takes a free
// slot, writes the next snapshot into it, and installs it with one
// compare-and-swap on the head: the linearization point of the whole
// decision, for every rule at once. The superseded slot is then released.
// Nobody ever waits for another caller: a failed compare-and-swap means
// another admission succeeded, and when every slot is taken (callers
// suspended mid-admission) the table grows, up to 4094 slots; only with 4093
// callers suspended mid-admission would a caller yield until one resumes.
// docs/multi.md has the details.
//
// An Approx is safe for concurrent use by multiple goroutines; decisions are
// lock-free and allocation-free once the slot table has grown to the number
// of callers admitting at the same moment (NewApprox allocates two slots;
// contention adds at most 10 more allocations over the limiter's life). The
// zero value refuses every call of cost 1 or more; use NewApprox. An Approx
// must not be copied after first use.
type Approx struct {
	// head is tag<<idxBits | idx: slot idx holds the current snapshot,
	// written with version tag. Written only by compare-and-swap.
	head atomic.Uint64
	// chunks[c] holds 2<<c slots of stride words each; slot indices run
	// through the chunks in order. A nil chunk is grown by compare-and-swap.
	chunks [maxChunks]atomic.Pointer[[]atomic.Uint64]
	// Immutable after NewApprox.
	stride    uint64
	rules     []arule
	cfg       []Rule
	minLimit  int
	maxWindow time.Duration
	base      clock.Base
}

// arule is one rule in the units the decision uses.
type arule struct {
	limit  uint64
	window uint64
}

// Head word layout (high to low):
//
//	bits 12..63  tag: version of the current snapshot, never 0 (0 marks a
//	             slot being written); grows by one per admission
//	bits 0..11   idx: the slot holding it
//
// Slot layout, stride words (a multiple of 8, so that two slots share at
// most one cache line):
//
//	word 0          state: tag<<1 | owned. tag is the version of the snapshot
//	                the slot holds or, while its owner writes it, the version
//	                it will hold (no head pairs that tag with this slot before
//	                the owner's compare-and-swap); owned is 1 while the slot is
//	                the head's or a caller's scratch, 0 when it is free
//	word 1          last: the latest admitted instant (int64); noneYet before
//	                the first admission
//	word 2+2i       start: the instant rule i's current window starts
//	word 3+2i       prev<<32 | curr of rule i (both <= MaxLimit < 1<<32)
const (
	idxBits   = 12
	idxMask   = 1<<idxBits - 1
	tagMask   = 1<<(64-idxBits) - 1
	maxChunks = 11 // 2+4+...+2048 = 4094 slots < 1<<idxBits

	stateW = 0
	lastW  = 1
	ruleW  = 2
	owned  = 1

	lowMask = 1<<32 - 1
	noneYet = math.MinInt64
)

// NewApprox returns an approximate limiter for the rules: a two-counter window
// for each. It allocates a few words per rule; decisions allocate nothing.
// It returns an error naming the rule when there is no rule, or when a rule's
// limit is outside [1, MaxLimit] or its window outside [1ns, MaxWindow].
func NewApprox(rules ...Rule) (*Approx, error) {
	minLimit, maxWindow, err := validate(rules)
	if err != nil {
		return nil, err
	}
	a := &Approx{
		cfg:       append([]Rule(nil), rules...),
		rules:     make([]arule, len(rules)),
		minLimit:  minLimit,
		maxWindow: maxWindow,
		base:      clock.NewBase(),
	}
	for i, r := range rules {
		a.rules[i] = arule{limit: uint64(r.Limit), window: uint64(r.Window)}
	}
	a.stride = (ruleW + 2*uint64(len(rules)) + 7) &^ 7
	c0 := make([]atomic.Uint64, 2*a.stride)
	c0[stateW].Store(1<<1 | owned)
	none := int64(noneYet)
	c0[lastW].Store(uint64(none))
	a.chunks[0].Store(&c0)
	a.head.Store(1 << idxBits)
	return a, nil
}

// Rules returns a copy of the rules, in the order given to NewApprox.
func (a *Approx) Rules() []Rule { return append([]Rule(nil), a.cfg...) }

// Limit returns the smallest limit of the rules: the largest n a single call
// can ever be admitted for.
func (a *Approx) Limit() int { return a.minLimit }

// Window returns the longest window of the rules.
func (a *Approx) Window() time.Duration { return a.maxWindow }

// slot returns the words of slot idx. Its chunk exists: idx came from the
// head or from acquire.
func (a *Approx) slot(idx uint64) []atomic.Uint64 {
	c := uint(bits.Len64(idx+2)) - 2
	off := idx + 2 - 2<<c
	words := *a.chunks[c].Load()
	return words[off*a.stride : (off+1)*a.stride]
}

// acquire takes a free slot as scratch for the next snapshot, tagging it
// with tag (the tag the next snapshot will have), and grows the table when
// every slot is taken. It never waits for another caller, except
// when all 4094 slots are taken, which needs that many callers suspended in
// the middle of an admission.
func (a *Approx) acquire(tag uint64) (uint64, []atomic.Uint64) {
	for {
		first := uint64(0)
		for c := range maxChunks {
			p := a.chunks[c].Load()
			size := uint64(2) << c
			if p == nil {
				words := make([]atomic.Uint64, size*a.stride)
				words[stateW].Store(tag<<1 | owned)
				if a.chunks[c].CompareAndSwap(nil, &words) {
					return first, words[:a.stride]
				}
				p = a.chunks[c].Load()
			}
			words := *p
			for off := range size {
				s := words[off*a.stride : (off+1)*a.stride]
				// Taking a free slot also replaces its tag, so a
				// reader still looking at its old snapshot sees it go.
				if v := s[stateW].Load(); v&owned == 0 && s[stateW].CompareAndSwap(v, tag<<1|owned) {
					return first + off, s
				}
			}
			first += size
		}
		runtime.Gosched()
	}
}

// clamp returns the instant a call at now decides at, given the latest
// admitted instant last: time never goes back.
func clamp(now, last int64) int64 { return max(now, last) }

// at returns rule r's window start, elapsed time, prev and curr at the
// clamped instant t, from the stored start and prev<<32|curr. seen is false
// before the first admission. A stored state has curr >= 1 (it was written
// by an admission), so once two windows have passed both counters are zero
// and a new series of windows starts at t.
func (r *arule) at(t int64, seen bool, start, pc uint64) (s uint64, el, p, c uint64) {
	if seen {
		d := uint64(t) - start // t >= start: instants never go back
		if d < r.window {
			return start, d, pc >> 32, pc & lowMask
		}
		if d-r.window < r.window {
			// start+window <= t: no overflow.
			return start + r.window, d - r.window, pc & lowMask, 0
		}
	}
	return uint64(t), 0, 0, 0
}

// admits reports whether prev*(W-el) + (curr+n)*W <= L*W, exactly.
func (r *arule) admits(el, p, c, n uint64) bool {
	cn := c + n
	if cn > r.limit {
		return false
	}
	if p == 0 {
		return true
	}
	h1, l1 := bits.Mul64(p, r.window-el)
	h2, l2 := bits.Mul64(r.limit-cn, r.window)
	return h1 < h2 || h1 == h2 && l1 <= l2
}

// tokens returns the largest m with prev*(W-el) + (curr+m)*W <= L*W, or 0.
func (r *arule) tokens(el, p, c uint64) uint64 {
	h, l := bits.Mul64(p, r.window-el)
	q, rem := bits.Div64(h, l, r.window) // h < window because p < 1<<32
	if rem != 0 {
		q++
	}
	if c+q >= r.limit {
		return 0
	}
	return r.limit - c - q
}

// wait returns how long after the clamped instant (elapsed el into its
// window) rule r first admits n, if nothing else is admitted. n <= limit.
func (r *arule) wait(el, p, c, n uint64) uint64 {
	w := r.window
	// In the current window: p*(W-e) <= R*W with R = L-c-n, for e >= el.
	if c+n <= r.limit {
		R := r.limit - c - n
		if p == 0 || R >= p {
			return 0
		}
		hi, lo := bits.Mul64(R, w)
		q, _ := bits.Div64(hi, lo, p) // R < p, so R*W/p < W
		if q > 0 {
			return max(w-q, el) - el
		}
	}
	// In the next window prev = c, curr = 0: c*(W-e) <= (L-n)*W.
	toNext := w - el
	R := r.limit - n
	if c == 0 || R >= c {
		return toNext
	}
	hi, lo := bits.Mul64(R, w)
	q, _ := bits.Div64(hi, lo, c)
	if q > 0 {
		return toNext + w - q
	}
	// The window after: prev = curr = 0.
	return toNext + w
}

// load reads the head and returns its tag, its slot and the latest admitted
// instant. The caller reads the rules' words and then calls a.valid.
func (a *Approx) load() (h uint64, s []atomic.Uint64, last int64) {
	for {
		h = a.head.Load()
		s = a.slot(h & idxMask)
		last = int64(s[lastW].Load())
		if s[stateW].Load()>>1 == h>>idxBits {
			return h, s, last
		}
	}
}

// valid reports whether slot s still holds the snapshot of head h: every
// word read from it between load and valid belongs to that snapshot.
func valid(h uint64, s []atomic.Uint64) bool {
	return s[stateW].Load()>>1 == h>>idxBits
}

// Allow is shorthand for AllowN(time.Now(), 1), reading only the monotonic
// clock.
func (a *Approx) Allow() bool {
	if a.minLimit == 0 { // the zero Approx
		return false
	}
	return a.allowN(a.base.Now(), 1)
}

// AllowN reports whether n units of cost are admitted at instant now, and if
// so counts them in every rule. It admits iff every rule's two-counter
// estimate admits it. All-or-nothing: a refused call changes no rule's state.
//
// n == 0 is always admitted and records nothing. n < 0 and n > Limit() (the
// smallest limit) are always refused.
func (a *Approx) AllowN(now time.Time, n int) bool {
	if n <= 0 {
		return n == 0
	}
	if n > a.minLimit { // also the zero Approx: minLimit 0
		return false
	}
	return a.allowN(a.base.Offset(now), uint64(n))
}

// stackRules is how many rules' next counters allowN keeps on the stack
// between deciding and writing; with more rules it reads them twice.
const stackRules = 8

func (a *Approx) allowN(now int64, n uint64) bool {
	var (
		mine    []atomic.Uint64 // scratch slot, once the call looks admissible
		mineIdx uint64
		next    [stackRules][2]uint64 // each rule's next start, prev<<32|curr
	)
	onStack := len(a.rules) <= stackRules
	for {
		h, s, last := a.load()
		t := clamp(now, last)
		seen := last != noneYet
		// Decide, reading only: a refused call writes nothing.
		ok := true
		for i := range a.rules {
			r := &a.rules[i]
			st, el, p, c := r.at(t, seen, s[ruleW+2*i].Load(), s[ruleW+2*i+1].Load())
			if !r.admits(el, p, c, n) {
				ok = false
				break
			}
			if onStack {
				next[i] = [2]uint64{st, p<<32 | (c + n)}
			}
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
		tag := (h>>idxBits + 1) & tagMask
		if tag == 0 {
			tag = 1
		}
		// Tag the scratch slot with the tag of the snapshot it will hold,
		// before writing it. No reader can validate against that tag
		// until the compare-and-swap below pairs it with this slot: tags
		// grow, so no earlier head had it.
		if mine == nil {
			mineIdx, mine = a.acquire(tag)
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
				r := &a.rules[i]
				st, _, p, c := r.at(t, seen, s[ruleW+2*i].Load(), s[ruleW+2*i+1].Load())
				if mine[ruleW+2*i].Load() != st {
					mine[ruleW+2*i].Store(st)
				}
				mine[ruleW+2*i+1].Store(p<<32 | (c + n))
			}
			if !valid(h, s) {
				continue
			}
		}
		if mine[lastW].Load() != uint64(t) {
			mine[lastW].Store(uint64(t))
		}
		// The linearization point: the head still names the snapshot
		// everything above was computed from, and now names the next one,
		// for every rule at once.
		if a.head.CompareAndSwap(h, tag<<idxBits|mineIdx) {
			// The superseded slot is ours to free (only one
			// compare-and-swap can replace h); it keeps its tag, so
			// readers of h still validate.
			s[stateW].Store(h >> idxBits << 1)
			return true
		}
	}
}

// TokensAt returns the largest cost AllowN(now, n) would admit at now: the
// smallest over the rules. It is a snapshot: under concurrent admissions it
// may be stale by the time it returns.
func (a *Approx) TokensAt(now time.Time) int {
	if a.minLimit == 0 {
		return 0
	}
	off := a.base.Offset(now)
	for {
		h, s, last := a.load()
		t := clamp(off, last)
		best := uint64(a.minLimit)
		for i := range a.rules {
			r := &a.rules[i]
			_, el, p, c := r.at(t, last != noneYet, s[ruleW+2*i].Load(), s[ruleW+2*i+1].Load())
			best = min(best, r.tokens(el, p, c))
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
	off := a.base.Offset(now)
	n0 := len(dst)
	for {
		dst = dst[:n0]
		h, s, last := a.load()
		t := clamp(off, last)
		for i := range a.rules {
			r := &a.rules[i]
			_, el, p, c := r.at(t, last != noneYet, s[ruleW+2*i].Load(), s[ruleW+2*i+1].Load())
			dst = append(dst, int(r.tokens(el, p, c)))
		}
		if valid(h, s) {
			return dst
		}
	}
}

// ReadyAt returns the earliest instant, not before now, at which AllowN would
// admit n if nothing else were admitted meanwhile: the latest of the instants
// at which each rule would admit it, and now itself when n fits now. ok is
// false when n can never be admitted (n < 0 or n > Limit()); n == 0 is ready
// at now. Instants past the end of the int64 nanosecond range saturate.
func (a *Approx) ReadyAt(now time.Time, n int) (at time.Time, ok bool) {
	if n == 0 {
		return now, true
	}
	if n < 0 || n > a.minLimit {
		return time.Time{}, false
	}
	off := a.base.Offset(now)
	for {
		h, s, last := a.load()
		t := clamp(off, last)
		var wait uint64
		for i := range a.rules {
			r := &a.rules[i]
			_, el, p, c := r.at(t, last != noneYet, s[ruleW+2*i].Load(), s[ruleW+2*i+1].Load())
			wait = max(wait, r.wait(el, p, c, uint64(n)))
		}
		if !valid(h, s) {
			continue
		}
		if wait == 0 {
			return now, true
		}
		// wait <= 2*MaxWindow, so it fits an int64; t+wait may not.
		if uint64(math.MaxInt64-t) < wait {
			return a.base.Time(math.MaxInt64), true
		}
		return a.base.Time(t + int64(wait)), true
	}
}

// IdleAt reports whether the limiter carries no information at now: nothing
// was ever admitted, or now is not before the latest admission and every
// rule's counters have fallen out of its two windows. An idle limiter decides
// every call at an instant at or after now exactly as a new limiter would.
func (a *Approx) IdleAt(now time.Time) bool {
	if a.minLimit == 0 {
		return true
	}
	off := a.base.Offset(now)
	for {
		h, s, last := a.load()
		idle := true
		if last != noneYet {
			if off < last {
				idle = false
			} else {
				t := off
				for i := range a.rules {
					r := &a.rules[i]
					_, _, p, c := r.at(t, true, s[ruleW+2*i].Load(), s[ruleW+2*i+1].Load())
					if p != 0 || c != 0 {
						idle = false
						break
					}
				}
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
