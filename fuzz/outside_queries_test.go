package fuzz

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/slidelimit/slidelimit"
)

// Checking answers from the outside (runOutside's queries and refusals).
//
// The exact limiters promise that every call is linearizable: it takes effect
// at one point p during the call, and answers what the naive sliding log
// answers for the state S the limiter was in at p (the admissions linearized
// before p, each with its stamp), at the clamped instant t = max(u, last(S)),
// u the instant passed and last(S) the latest stamp (none: t = u). The checks
// below accept every answer some such S and t could give, and nothing a state
// the outside view rules out would need. All they use is what callers saw:
//
//   - A shared sequence counter, incremented just before and just after each
//     call, orders calls in real time. An admission that returned before a
//     query began (ret < qs) is in S: C, the certain ones. One that began
//     after the query returned (call > qe) is not: S lies between C and P,
//     the admissions with call < qe.
//   - An admission's stamp s is its caller's instant clamped forward, so it
//     lies in [lo, hi]: lo the instant passed, hi the shared clock read after
//     it returned (every instant it can be clamped to was read before its
//     linearization). Stamps never decrease in linearization order, and an
//     admission that returned before another began was linearized first, so
//     lo rises to the largest lo of the admissions that returned before it
//     began, and hi falls to the smallest hi of those that began after it
//     returned (tighten). That pins stale calls, clamped forward an hour, to
//     the stamps around them.
//   - t: last(S) >= lo of every admission of C, so t >= tlo = max(u, max lo
//     over C). Every stamp is at most the shared clock at its linearization,
//     so last(S) is at most ce, the clock read after the query returned, and
//     at most the largest hi over P: t <= thi = max(u, min(ce, max hi over P)).
//
// With those, for each rule (limit L, window W) the cost of S in (t-W, t]:
//
//   - is at least minCost, the cost of the admissions of C whose lo > thi-W:
//     in S, stamped after thi-W >= t-W, and at most last(S) <= t;
//   - is at most maxCost = max over m of the cost of the admissions a of P
//     with hi > m-W that are in C or have lo <= m, m ranging over tlo and the
//     lo of the admissions of P not in C above it. For the actual S, take
//     m = max(u, max lo over S) (one of those values, and <= t): every a
//     counted has a stamp in (t-W, t], so hi >= s > t-W >= m-W, and a is in C
//     or in S, and then lo <= m.
//
// So a rule's room, L minus that cost, lies in [max(0, L-maxCost), L-minCost];
// RemainingAt answers each rule's, and TokensAt (and DecideStatus's Remaining)
// their minimum capped at the smallest limit, which is monotone, so it lies
// between the same function of the bounds. maxCost is what makes a reader
// that mixes slots of two laps fail: it sets later stamps against an early
// clamped instant, a cost no single window of any state holds.
//
// ReadyAt(u, n) answers u iff n fits at t (TokensAt >= n), else need =
// max over rules of sigma+W, where sigma is the stamp of the unit L-n+1 places
// back (the K-th latest unit, K = L-n+1; none: the rule does not bind), and
// need > t >= tlo. So: the answer is never before u; it must be u if the
// lower bound of TokensAt is >= n; it must not be u if the upper bound is < n;
// and otherwise it lies in (tlo, max over rules of H+W], H the K-th largest
// hi over the units of P (counting an admission of cost c as c units): more
// than K-1 units of S stamped after H would need K units of P with hi above
// it. Where P has fewer than K units with hi above tlo-maxW, sigma is at most
// that and the rule cannot be the one that binds; the answer is also at
// least max over rules of G+W, G the K-th largest lo over the units of C
// (where C has K units), since then K units of S are stamped at G or later.
// DecideStatus(u, 0) and DecideStatus(u, minLimit+1) describe the limiter at u
// as TokensAt and ReadyAt(u, minLimit) do.
//
// IdleAt(u) (not clamped) is last(S) <= u-maxW or nothing admitted: it must
// be false if C is not empty and max lo over C > u-maxW, true if P is empty or
// min(ce, max hi over P) <= u-maxW.
//
// A refusal of n at u (1 <= n <= smallest limit) is the state's verdict that
// n does not fit at t: it is wrong if the lower bound of TokensAt is >= n.
//
// Every admission must be recorded for the upper bounds on cost to hold
// (runOutside records all of them, the queriers' too); the lower bounds need
// only that the recorded ones are real.

// stamped is one admission seen from the outside: interval (its stamp lies in
// [lo, hi], for cost n) and the sequence numbers taken just before the call
// and just after it returned.
type stamped struct {
	interval
	call, ret uint64
}

// seenKind is what a seen call was.
type seenKind uint8

const (
	seenTokens    seenKind = iota // TokensAt(u) = tokens
	seenReady                     // ReadyAt(u, n) = ready, ok
	seenIdle                      // IdleAt(u) = ok
	seenRemaining                 // RemainingAt(u) = rem[:len(rules)]
	seenStatus                    // DecideStatus(u, n), n 0 or minLimit+1: Admitted ok, Remaining tokens, ResetAt ready (resetOK), RetryAt zero retryZero
	seenRefused                   // AllowN(u, n) = false
	seenNone                      // nothing to check
)

// maxOutsideRules is the most rules a subject of runOutside may have
// (seen.rem's length).
const maxOutsideRules = 4

// seen is one call that admitted nothing, with its answer: the instant u
// passed (an offset from t0, like every instant here), the sequence numbers
// qs (before the call) and qe (after it), and ce, the shared clock read after
// qe.
type seen struct {
	kind      seenKind
	ok        bool
	retryZero bool
	resetOK   bool
	n         int32
	tokens    int32
	rem       [maxOutsideRules]int32
	u         int64
	qs, qe    uint64
	ce        int64
	ready     int64 // an offset; only when ok (ReadyAt, DecideStatus's ResetAt)
}

// maxQuerierSeen is how many answers one querier keeps (see runOutside).
const maxQuerierSeen = 1 << 13

// readyOffset converts a ReadyAt-like answer to an offset from t0.
func readyOffset(t0, at time.Time, ok bool) (int64, bool) {
	if !ok || at.IsZero() {
		return 0, false
	}
	return int64(at.Sub(t0)), true
}

// statusSeen records DecideStatus(u, n)'s answer st in o.
func statusSeen(o *seen, t0 time.Time, st slidelimit.Status) {
	o.ok = st.Admitted
	o.tokens = int32(st.Remaining)
	o.ready, o.resetOK = readyOffset(t0, st.ResetAt, !st.ResetAt.IsZero())
	o.retryZero = st.RetryAt.IsZero()
}

// admView is an admission with its interval tightened (see tighten).
type admView struct {
	lo, hi    int64
	n         int
	call, ret uint64
}

// tighten narrows every admission's interval by the order of stamps: lo rises
// to the largest lo of the admissions that returned before it was called, hi
// falls to the smallest hi of those called after it returned. The admissions
// come in groups, in any order; sequence numbers are at most maxSeq.
//
//go:norace
func tighten(groups [][]stamped, maxSeq uint64) []admView {
	var v []admView
	// ev[seq] is i+1 if seq is the call of admission i, -(i+1) its return.
	ev := make([]int32, maxSeq+1)
	for _, g := range groups {
		for k := range g {
			a := &g[k]
			v = append(v, admView{lo: a.lo, hi: a.hi, n: a.n, call: a.call, ret: a.ret})
			ev[a.call], ev[a.ret] = int32(len(v)), -int32(len(v))
		}
	}
	runMax := int64(math.MinInt64)
	for _, e := range ev {
		switch {
		case e > 0:
			v[e-1].lo = max(v[e-1].lo, runMax)
		case e < 0:
			runMax = max(runMax, v[-e-1].lo)
		}
	}
	runMin := int64(math.MaxInt64)
	for k := len(ev) - 1; k >= 0; k-- {
		switch e := ev[k]; {
		case e < 0:
			v[-e-1].hi = min(v[-e-1].hi, runMin)
		case e > 0:
			runMin = min(runMin, v[e-1].hi)
		}
	}
	return v
}

// intervalsOf returns the tightened intervals, for certainOverLimit.
//
//go:norace
func intervalsOf(views []admView) []interval {
	all := make([]interval, len(views))
	for i := range views {
		all[i] = interval{lo: views[i].lo, hi: views[i].hi, n: views[i].n}
	}
	return all
}

// seenChecker holds the admissions of one run, indexed for the checks.
//
// The checks run once every goroutine of the run has stopped, on data no other
// goroutine touches, so the functions that make them are marked //go:norace:
// under the race detector's instrumentation they took longer than the run
// they check (the outside tests run under -race in CI). For the same reason
// they work on indices, not copies of structs, and sort without closures.
type seenChecker struct {
	s        subject
	minLimit int
	maxW     int64
	windows  []int64
	limits   []int
	width    int64     // admissions wider than this are in wide, else in byLo
	adm      []admView // narrow ones sorted by lo, then the wide ones
	loKey    []int64   // lo of the narrow ones
	wide     int       // index of the first wide one
	// Sorted by ret: ret and the running max of lo (max lo over C).
	retSeq   []uint64
	retMaxLo []int64
	// Sorted by call: call and the running max of hi (max hi over P).
	callSeq   []uint64
	callMaxHi []int64
	// Scratch for one call: its candidates (indices in adm), whether each
	// is in C, and their units' lo (in C, not in C) and hi, sorted.
	cand               []int32
	inC                []bool
	loC, loNotC, hiAll []int64
}

//go:norace
func newSeenChecker(s subject, adms []admView, maxSeq uint64) *seenChecker {
	c := &seenChecker{s: s, minLimit: s.minLimit(), maxW: s.maxWindow()}
	for _, r := range s.rules {
		c.windows = append(c.windows, int64(r.Window))
		c.limits = append(c.limits, r.Limit)
	}
	// The narrow ones by lo, then the wide ones.
	c.width = c.maxW / 2
	var narrow, wide []int32
	key := make([]int64, len(adms))
	for i := range adms {
		key[i] = adms[i].lo
		if adms[i].hi-adms[i].lo > c.width {
			wide = append(wide, int32(i))
		} else {
			narrow = append(narrow, int32(i))
		}
	}
	sortByKey(narrow, key)
	c.adm = make([]admView, 0, len(adms))
	for _, i := range narrow {
		c.adm = append(c.adm, adms[i])
		c.loKey = append(c.loKey, adms[i].lo)
	}
	c.wide = len(c.adm)
	for _, i := range wide {
		c.adm = append(c.adm, adms[i])
	}
	// By ret and by call: sequence numbers are distinct, at most maxSeq.
	ev := make([]int32, maxSeq+1)
	for i := range adms {
		ev[adms[i].call], ev[adms[i].ret] = int32(i+1), -int32(i+1)
	}
	loMax, hiMax := int64(math.MinInt64), int64(math.MinInt64)
	for seq, e := range ev {
		switch {
		case e < 0:
			loMax = max(loMax, adms[-e-1].lo)
			c.retSeq = append(c.retSeq, uint64(seq))
			c.retMaxLo = append(c.retMaxLo, loMax)
		case e > 0:
			hiMax = max(hiMax, adms[e-1].hi)
			c.callSeq = append(c.callSeq, uint64(seq))
			c.callMaxHi = append(c.callMaxHi, hiMax)
		}
	}
	return c
}

// sortInt64s sorts a, by insertion when it is short (the usual case here).
//
//go:norace
func sortInt64s(a []int64) {
	if len(a) > 32 {
		slices.Sort(a)
		return
	}
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// sortByKey sorts idx by key[idx[i]] (a merge sort: the race detector makes
// the standard library's sorts, with their comparison closures, slow here).
//
//go:norace
func sortByKey(idx []int32, key []int64) {
	orig, buf := idx, make([]int32, len(idx))
	for w := 1; w < len(idx); w *= 2 {
		for lo := 0; lo < len(idx); lo += 2 * w {
			mid, hi := min(lo+w, len(idx)), min(lo+2*w, len(idx))
			i, j, k := lo, mid, lo
			for ; i < mid && j < hi; k++ {
				if key[idx[j]] < key[idx[i]] {
					buf[k], j = idx[j], j+1
				} else {
					buf[k], i = idx[i], i+1
				}
			}
			k += copy(buf[k:], idx[i:mid])
			copy(buf[k:], idx[j:hi])
		}
		idx, buf = buf, idx
	}
	copy(orig, idx) // a no-op after an even number of passes
}

// countBelow returns how many of the sorted keys are below k.
//
//go:norace
func countBelow[T int64 | uint64](keys []T, k T) int {
	lo, hi := 0, len(keys)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if keys[mid] < k {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// bounds is what the outside view allows for one call.
type bounds struct {
	tlo, thi     int64
	tokLo, tokHi int
	roomLo       [maxOutsideRules]int
	roomHi       [maxOutsideRules]int
	nC, nP       int // admissions in C, in P
}

// bound computes o's bounds, and leaves its candidates (the admissions of P
// with hi > tlo-maxW) in c.cand, with c.inC.
//
//go:norace
func (c *seenChecker) bound(o *seen) (b bounds) {
	b.nC = countBelow(c.retSeq, o.qs)
	b.nP = countBelow(c.callSeq, o.qe)
	b.tlo, b.thi = o.u, o.u
	if b.nC > 0 {
		b.tlo = max(b.tlo, c.retMaxLo[b.nC-1])
	}
	if b.nP > 0 {
		b.thi = max(b.thi, min(o.ce, c.callMaxHi[b.nP-1]))
	}
	x := b.tlo - c.maxW
	c.cand, c.inC = c.cand[:0], c.inC[:0]
	keep := func(i int) {
		if a := &c.adm[i]; a.call < o.qe && a.hi > x {
			c.cand = append(c.cand, int32(i))
			c.inC = append(c.inC, a.ret < o.qs)
		}
	}
	for i := countBelow(c.loKey, x-c.width+1); i < c.wide && c.adm[i].lo <= o.ce; i++ {
		keep(i)
	}
	for i := c.wide; i < len(c.adm); i++ {
		keep(i)
	}
	// The candidates' units: the lo of those not in C and of those in C,
	// and the hi of all, each sorted.
	c.loNotC, c.loC, c.hiAll = c.loNotC[:0], c.loC[:0], c.hiAll[:0]
	for k, i := range c.cand {
		a := &c.adm[i]
		for range a.n {
			if c.inC[k] {
				c.loC = append(c.loC, a.lo)
			} else {
				c.loNotC = append(c.loNotC, a.lo)
			}
			c.hiAll = append(c.hiAll, a.hi)
		}
	}
	sortInt64s(c.loNotC)
	sortInt64s(c.loC)
	sortInt64s(c.hiAll)
	b.tokLo, b.tokHi = c.minLimit, c.minLimit
	for r, w := range c.windows {
		// minCost: the units of C with lo > thi-w.
		minCost := len(c.loC) - countBelow(c.loC, b.thi-w+1)
		// maxCost: the largest, over m in tlo and the lo of the units not
		// in C above it, of the units in C or with lo <= m, less those
		// with hi <= m-w (all of which have lo <= m).
		maxCost := 0
		j, h := 0, 0
		for e := -1; e < len(c.loNotC); e++ {
			m := b.tlo
			if e >= 0 {
				if c.loNotC[e] <= m {
					continue
				}
				m = c.loNotC[e]
			}
			for j < len(c.loNotC) && c.loNotC[j] <= m {
				j++
			}
			for h < len(c.hiAll) && c.hiAll[h] <= m-w {
				h++
			}
			maxCost = max(maxCost, len(c.loC)+j-h)
		}
		b.roomLo[r] = max(0, c.limits[r]-maxCost)
		b.roomHi[r] = c.limits[r] - minCost
		b.tokLo = min(b.tokLo, b.roomLo[r])
		b.tokHi = min(b.tokHi, b.roomHi[r])
	}
	return b
}

// readyWrong returns why ReadyAt(u, n) = at, ok cannot be, or "".
//
//go:norace
func (c *seenChecker) readyWrong(o *seen, b *bounds, n int, at int64, ok bool) string {
	if !ok {
		return "never ready"
	}
	if at < o.u {
		return "before u"
	}
	if at == o.u {
		if b.tokHi < n {
			return fmt.Sprintf("ready at u, but TokensAt <= %d < n in every state", b.tokHi)
		}
		return ""
	}
	if b.tokLo >= n {
		return fmt.Sprintf("not ready at u, but TokensAt >= %d >= n in every state", b.tokLo)
	}
	if at <= b.tlo {
		return fmt.Sprintf("not ready at u, but at %d <= the clamped instant's lower bound %d", at, b.tlo)
	}
	hiAt, loAt := int64(math.MinInt64), int64(math.MinInt64)
	x := b.tlo - c.maxW
	for r, w := range c.windows {
		k := c.limits[r] - n + 1
		// H: the k-th largest hi over the candidates' units, or x if
		// fewer; G: the k-th largest lo over those of C.
		h := x
		if len(c.hiAll) >= k {
			h = c.hiAll[len(c.hiAll)-k]
		}
		hiAt = max(hiAt, h+w)
		if len(c.loC) >= k {
			loAt = max(loAt, c.loC[len(c.loC)-k]+w)
		}
	}
	if at > hiAt {
		return fmt.Sprintf("later than every state allows (%d)", hiAt)
	}
	if at < loAt {
		return fmt.Sprintf("earlier than every state allows (%d)", loAt)
	}
	return ""
}

// wrong returns why o's answer cannot be, or "".
//
//go:norace
func (c *seenChecker) wrong(o *seen) string {
	b := c.bound(o)
	n, tokens := int(o.n), int(o.tokens)
	var why string
	switch o.kind {
	case seenTokens:
		if tokens < b.tokLo || tokens > b.tokHi {
			why = fmt.Sprintf("TokensAt(%d) = %d, every possible state gives [%d, %d]", o.u, tokens, b.tokLo, b.tokHi)
		}
	case seenRemaining:
		for r := range c.s.rules {
			if int(o.rem[r]) < b.roomLo[r] || int(o.rem[r]) > b.roomHi[r] {
				why = fmt.Sprintf("RemainingAt(%d) = %v, every possible state gives rule %d [%d, %d]",
					o.u, o.rem[:len(c.s.rules)], r, b.roomLo[r], b.roomHi[r])
				break
			}
		}
	case seenReady:
		if w := c.readyWrong(o, &b, n, o.ready, o.ok); w != "" {
			why = fmt.Sprintf("ReadyAt(%d, %d) = %d, %v: %s (TokensAt in [%d, %d])", o.u, o.n, o.ready, o.ok, w, b.tokLo, b.tokHi)
		}
	case seenStatus:
		switch {
		case o.ok != (n == 0) || !o.retryZero:
			why = fmt.Sprintf("DecideStatus(%d, %d): admitted %v, RetryAt zero %v", o.u, o.n, o.ok, o.retryZero)
		case tokens < b.tokLo || tokens > b.tokHi:
			why = fmt.Sprintf("DecideStatus(%d, %d).Remaining = %d, every possible state gives [%d, %d]", o.u, o.n, tokens, b.tokLo, b.tokHi)
		default:
			if w := c.readyWrong(o, &b, c.minLimit, o.ready, o.resetOK); w != "" {
				why = fmt.Sprintf("DecideStatus(%d, %d).ResetAt = %d: %s (TokensAt in [%d, %d])", o.u, o.n, o.ready, w, b.tokLo, b.tokHi)
			}
		}
	case seenIdle:
		lastLo, lastHi := int64(math.MinInt64), int64(math.MinInt64)
		if b.nC > 0 {
			lastLo = c.retMaxLo[b.nC-1]
		}
		if b.nP > 0 {
			lastHi = min(o.ce, c.callMaxHi[b.nP-1])
		}
		switch {
		case o.ok && b.nC > 0 && lastLo > o.u-c.maxW:
			why = fmt.Sprintf("IdleAt(%d) = true, but an admission certainly before it is stamped at %d or later", o.u, lastLo)
		case !o.ok && (b.nP == 0 || lastHi <= o.u-c.maxW):
			why = fmt.Sprintf("IdleAt(%d) = false, but every admission possibly before it is stamped at %d or earlier", o.u, lastHi)
		}
	case seenRefused:
		if b.tokLo >= n {
			why = fmt.Sprintf("AllowN(%d, %d) refused, but TokensAt >= %d in every possible state", o.u, o.n, b.tokLo)
		}
	}
	if why == "" {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s; clamped instant in [%d, %d], clock after %d, seq [%d, %d]; admissions that matter (lo, hi, n, certainly before):",
		why, b.tlo, b.thi, o.ce, o.qs, o.qe)
	for k, i := range c.cand {
		if k == 40 {
			fmt.Fprintf(&sb, " ... (%d in all)", len(c.cand))
			break
		}
		a := &c.adm[i]
		fmt.Fprintf(&sb, " (%d, %d, %d, %v)", a.lo, a.hi, a.n, c.inC[k])
	}
	return sb.String()
}

// checkSeen returns the first call among seen (in groups) whose answer no
// state the limiter may have been in gives, or "".
func checkSeen(s subject, adms []admView, seen [][]seen, maxSeq uint64) string {
	if len(s.rules) > maxOutsideRules {
		panic("checkSeen: too many rules")
	}
	c := newSeenChecker(s, adms, maxSeq)
	for _, g := range seen {
		for i := range g {
			if w := c.wrong(&g[i]); w != "" {
				return w
			}
		}
	}
	return ""
}
