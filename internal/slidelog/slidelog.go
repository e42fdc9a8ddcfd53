// Package slidelog is the lock-free exact sliding log behind ring (one rule)
// and multi's exact flavour (several rules). docs/ring.md has the proofs.
//
// # Model
//
// The log records one timestamp (a stamp) per unit of admitted cost, in
// admission order: an admission of cost n at instant t appends n stamps equal
// to t. Stamps never decrease along the log. Rule i (limit L_i, window W_i)
// admits n at t iff the cost stamped in (t-W_i, t] plus n is at most L_i.
// Because stamps are sorted, that is one comparison: with h stamps so far,
// the rule admits iff the stamp at index h+n-1-L_i (the one L_i-n+1 places
// back) is at most t-W_i, or does not exist. Only the last L = max(L_i)
// stamps can ever be consulted, so they live in a ring of L words.
//
// # Concurrency protocol
//
// State is a head counter and the ring. The head holds the index of the next
// stamp as (cycle<<32 | pos), pos in [0, L): slot pos of the ring holds the
// stamp of index cycle*L+pos. Every slot word carries, beside its stamp, the
// parity of the cycle that wrote it (the lap bit), so a reader that expects
// index j in slot j%L can tell whether the slot holds j or a stamp one lap
// older; the tag is enough because a slot is only consulted within one lap of
// the head, and a stale reader is caught by a compare-and-swap (stamps in one
// slot strictly increase from lap to lap, so no value ever repeats).
//
// An admission of cost 1 at head h is one compare-and-swap on slot h%L, from
// the stamp of index h-L to (lap(h), t): it claims the index and publishes
// its stamp in one step, which is the linearization point. The caller reads
// the head again after loading slot h, so the value it will replace is slot
// h's while the head is h. The CAS can then only succeed while the head is
// still h, so everything the caller read after loading the head (the predecessor's stamp that t is clamped to, the stamps
// the rules check) was read in that same state. The head is then advanced by
// anyone: the owner, or any caller that finds slot h%L already claimed.
//
// An admission of cost n >= 2 cannot claim n slots and publish a stamp in one
// step, and one word cannot hold a stamp, a cost and a unique tag. So the
// claimant, once its checks pass at head h, publishes a batch descriptor
// (h, n, its clamped instant t) in the log's pending pointer; only one batch
// can be in flight. Then anyone (the claimant or any caller that meets the
// descriptor) places a busy marker (busy bit, lap, cycle, n) in slot h%L, which
// is valid while the head is h and slot h is unclaimed, because nothing can
// have been admitted since the claimant's check. The marker's CAS is the
// batch's linearization point. A unit admission that claims slot h first
// makes the batch fail instead, and its claimant starts again. Whoever sees
// the outcome records it in the descriptor, writes t into slots h+1 ..
// h+n-1, advances the head by n, replaces the marker by t and clears pending.
// Every step can be done by anyone, so a claimant descheduled anywhere stalls
// nobody, and every admission is stamped with its own claimant's instant,
// whoever completes it. Readers treat a marker behind the head as its batch's
// stamp, read from the next slot. Descriptors are pooled; a helper holds a
// reference while it uses one, and a descriptor is reused only when no helper
// holds it (see batch).
//
// A refused call records nothing: its own path only loads. The one write a
// refusing caller (or a reader) can make is to finish someone else's
// admission first (advance a lagging head, mark, complete or unmark a stalled
// batch), which every caller does, with the values its claimant chose, so it
// changes no decision. With no admission in flight, a refusal leaves every
// word as it was (TestRefusalWritesNothing).
package slidelog

import (
	"sync"
	"sync/atomic"
)

// Rule is one (limit, window) pair; window is in nanoseconds. Callers validate
// rules: 1 <= Limit <= MaxLimit and 1 <= Window <= MaxWindow.
type Rule struct {
	Limit  int64
	Window int64
}

// MaxLimit is the largest limit (and ring size) the log supports: 2^30 on
// 64-bit platforms (8 GiB of slots), 2^26 on 32-bit ones (512 MiB), so that
// the ring always fits the address space.
const MaxLimit = 1 << (26 + 4*(^uint(0)>>63))

// MaxWindow is the largest window in nanoseconds (about 36 years).
const MaxWindow = 1 << 60

// Slot word layout (high to low):
//
//	bit 63      busy: the slot holds a batch marker, not a stamp
//	bit 62      lap: parity of the cycle of the index the slot holds
//	bits 0..61  the stamp; for a busy marker, the low 32 bits of the cycle
//	            of the batch's first index (bits 30..61) and n-1 (bits 0..29)
//
// The cycle in a marker makes every marker unique to its index (a later batch
// in the same slot, whatever its cost, carries another cycle), so markers,
// like stamps, never repeat in a slot and compare-and-swap on them is free of
// ABA.
//
// Stamps are instants shifted by stampBias and clamped to [1, maxStamp]:
// offsets in [1-2^61, 2^61-1] ns (about 73 years either side of the owner's
// base) map one to one; earlier ones all read as the earliest, later ones as
// the latest, so every int64 instant gets a decision, and AllowN, TokensAt
// and ReadyAt agree at it. Stamp 0 means "no admission ever", which is
// outside every window.
const (
	busyBit   = uint64(1) << 63
	lapBit    = uint64(1) << 62
	valueMask = lapBit - 1
	stampBias = int64(1) << 61
	maxStamp  = int64(valueMask)

	posMask    = uint64(1)<<32 - 1
	costBits   = 30
	costMask   = uint64(1)<<costBits - 1
	markCycles = uint64(1)<<32 - 1
)

// markerFor returns the busy marker of a batch of cost n claimed at index h.
func markerFor(h uint64, n int64) uint64 {
	return busyBit | lapOf(h) | (h>>32&markCycles)<<costBits | uint64(n-1)
}

// isMarkerOf reports whether slot value v is the marker of a batch at index j.
func isMarkerOf(v, j uint64) bool {
	return v&busyBit != 0 && (v&valueMask)>>costBits == j>>32&markCycles
}

// Log is the shared state. Instants are int64 nanosecond offsets from the
// owner's clock.Base; any int64 is accepted (out-of-range values saturate).
// A Log is safe for concurrent use; it must not be copied after first use.
type Log struct {
	// head is the index of the next stamp, as cycle<<32 | pos. It only
	// grows; it is advanced with compare-and-swap by whoever finds the slot
	// at head already claimed.
	head atomic.Uint64
	// size is the ring length L, the largest limit. Immutable.
	size uint64
	// minLimit is the smallest limit: no n above it can ever be admitted.
	minLimit int64
	// window is the window of the only rule when there is one (then the
	// check slot of a unit admission is its claim slot: allowN's fast path),
	// else 0.
	window int64
	// maxWindow is the longest window, for IdleAt. Immutable.
	maxWindow int64
	// rules are immutable after New.
	rules []Rule
	// slots holds the stamps of the last size indices; see the layout above.
	// A slot is written only by compare-and-swap.
	slots []atomic.Uint64
	// pending is the batch (n >= 2) in flight, nil if none. Set by its
	// claimant with CompareAndSwap(nil, d) after its checks pass; cleared by
	// anyone with CompareAndSwap(d, nil), only after the batch's outcome is
	// recorded, its head advanced and its marker replaced, and only while
	// holding a reference to d (so d cannot have been reused meanwhile). While
	// slot h holds the marker of a batch at head h, pending is that batch.
	pending atomic.Pointer[batch]
}

// batch describes an admission of cost n >= 2 while it is in flight.
//
// h, n and t are written by the claimant before it publishes the batch in
// Log.pending and never change while it is published; a helper reads them
// only after acquirePending, which holds a reference and has seen the
// descriptor published. A descriptor goes back to the pool only when its
// batch is no longer pending and no helper holds a reference (refs == 0,
// checked after pending stopped naming it; a helper that takes a reference
// later then finds pending not naming it, or naming a new publication whose
// fields were written before it, and reads only those). So a helper never
// acts on fields of another publication, and its CompareAndSwap(d, nil) on
// pending can only clear the publication it helped: pointer reuse (ABA) is
// excluded by the reference count, not by luck. A descriptor that a helper
// still holds is dropped for the garbage collector instead of pooled.
type batch struct {
	h     uint64 // head index of the first unit (cycle<<32 | pos)
	n     uint64 // cost, 2 .. size
	t     int64  // the claimant's clamped instant: the stamp of every unit
	state atomic.Uint32
	refs  atomic.Int32
}

// Batch outcomes (batch.state). Committed is recorded by whoever sees the
// batch's marker in slot h while the head is h, before the head may pass h;
// failed by whoever sees slot h claimed by a unit, or the head past h with
// nothing recorded (then no marker was ever placed: a marker is placed only
// while the head is h, and the head passes a marker only after committed is
// recorded). The two are exclusive.
const (
	undecided uint32 = iota
	committed
	failed
)

var batchPool = sync.Pool{New: func() any { return new(batch) }}

// releaseBatch gives up a descriptor its claimant owns once pending no longer
// names it: back to the pool if no helper holds it, else to the collector.
func releaseBatch(d *batch) {
	if d.refs.Load() == 0 {
		batchPool.Put(d)
	}
}

// hookAcquire is the testHook point in acquirePending between loading
// pending and taking a reference: calls made there can finish the batch,
// return its descriptor to the pool and have the next claimant take it and
// write its own batch into it; only the re-check of pending after the
// reference keeps the caller from driving that batch
// (TestHookAcquireReused).
const hookAcquire = 3

// acquirePending returns the batch in flight with a reference held, or nil.
// The caller must call d.refs.Add(-1) when done with it.
func (l *Log) acquirePending() *batch {
	for {
		d := l.pending.Load()
		if d == nil {
			return nil
		}
		testHook(hookAcquire)
		d.refs.Add(1)
		// The reference counts only if d was still published after it
		// was taken: otherwise d may have gone back to the pool before
		// it (its claimant saw refs == 0), and a claimant that took it
		// from there may have written another batch's fields into it
		// without publishing them (its own publication failed), which
		// driving d would admit behind that claimant's back.
		if l.pending.Load() == d {
			return d
		}
		d.refs.Add(-1)
	}
}

// Init prepares a zero Log for the rules (owners embed a Log by value). It
// must be called once, before the Log is shared; it panics on no rule or an
// invalid one (see Rule), a programmer error in the calling package. The zero Log,
// never initialized, refuses every n >= 1.
func (l *Log) Init(rules []Rule) {
	if len(rules) == 0 {
		panic("slidelog: no rules")
	}
	l.rules = append([]Rule(nil), rules...)
	l.minLimit = rules[0].Limit
	var size int64
	for _, r := range rules {
		if r.Limit < 1 || r.Limit > MaxLimit || r.Window < 1 || r.Window > MaxWindow {
			panic("slidelog: invalid rule")
		}
		size = max(size, r.Limit)
		l.minLimit = min(l.minLimit, r.Limit)
		l.maxWindow = max(l.maxWindow, r.Window)
	}
	l.size = uint64(size)
	if len(rules) == 1 {
		l.window = rules[0].Window
	}
	l.slots = make([]atomic.Uint64, size)
	// Start at cycle 1, so that the zero slots read as stamps of cycle 0
	// (lap 0, stamp 0: "never"), one lap behind the head.
	l.head.Store(1 << 32)
}

// toStamp converts an offset to a stamp: shifted and clamped, never 0.
func toStamp(now int64) int64 {
	switch {
	case now > maxStamp-stampBias:
		return maxStamp
	case now < 1-stampBias:
		return 1
	}
	return now + stampBias
}

// fromStamp converts a stamp (or a stamp plus a window) back to an offset.
func fromStamp(s int64) int64 { return s - stampBias }

// Index arithmetic on head values (cycle<<32 | pos); d must be <= size.

func (l *Log) add(h, d uint64) uint64 {
	pos, cyc := h&posMask+d, h>>32
	if pos >= l.size {
		pos -= l.size
		cyc++
	}
	return cyc<<32 | pos
}

func (l *Log) sub(h, d uint64) uint64 {
	pos, cyc := h&posMask, h>>32
	if pos < d {
		pos += l.size
		cyc--
	}
	return (cyc << 32) | (pos - d)
}

// lapOf returns the lap bit an index's slot carries once it holds that index.
func lapOf(h uint64) uint64 { return (h >> 32 & 1) << 62 }

func (l *Log) slot(h uint64) *atomic.Uint64 { return &l.slots[h&posMask] }

// stampAt returns the stamp of index j, read while the head is at h > j and
// j is within the last size indices. ok is false when the slot does not hold
// index j any more (the head moved on: the caller must start again).
func (l *Log) stampAt(j uint64) (s int64, ok bool) {
	v := l.slot(j).Load()
	if v&(busyBit|lapBit) == lapOf(j) {
		return int64(v & valueMask), true
	}
	return l.stampSlow(j, v)
}

// stampSlow is stampAt for a slot that holds a marker or another lap.
func (l *Log) stampSlow(j, v uint64) (s int64, ok bool) {
	if v&lapBit != lapOf(j) || !isMarkerOf(v, j) {
		return 0, false
	}
	// The marker of a batch at j < head (the caller saw the head past j,
	// and the marker is unique to j): the batch's stamps were all written
	// before the head passed it, so slot j+1 holds its stamp (index
	// j+1+size cannot be claimed while slot j holds index j). Replace the
	// marker by that stamp on the way.
	next := l.add(j, 1)
	nv := l.slot(next).Load()
	if nv&(busyBit|lapBit) != lapOf(next) {
		return 0, false
	}
	l.slot(j).CompareAndSwap(v, lapOf(j)|nv&valueMask)
	return int64(nv & valueMask), true
}

// AllowN admits n at now iff every rule admits it: all-or-nothing. n == 0 is
// admitted and writes nothing; n < 0 and n above the smallest limit are
// refused.
func (l *Log) AllowN(now int64, n int64) bool {
	ok, _, _ := l.allowN(now, n)
	return ok
}

// Status is what one decision saw, read at the decision's own head and
// instant (DecideStatus): offsets, as the Log's instants are.
type Status struct {
	// Remaining is the largest n AllowN would admit at the decision's
	// instant, right after the decision (TokensAt on that state).
	Remaining int64
	// Retry is, for a refused n, the earliest instant it would be admitted
	// if nothing else were (ReadyAt on that state); RetryOK is false when
	// it never would be, and for admissions.
	Retry   int64
	RetryOK bool
	// Reset is when the smallest limit would be admitted whole (ReadyAt of
	// minLimit on that state); ResetOK is false when never.
	Reset   int64
	ResetOK bool
}

// DecideStatus is AllowN, and also returns the Status right after the
// decision: what remains and when n and the whole limit would fit, with the
// head where the decision left it, at the instant it was decided at. Other
// admissions landing after it are not in it, unless the slots it reads were
// overwritten meanwhile (the next admission replaces the oldest stamp, and
// about size admissions all of them); then it reads the live state at the
// decision's instant instead, whose answers can only be more cautious (less
// remaining, a later retry) and still agree with the decision. For n out of
// [1, minLimit] it is AllowN's answer with the live state at now.
func (l *Log) DecideStatus(now int64, n int64) (admitted bool, st Status) {
	return l.DecideRules(now, n, nil)
}

// RuleStatus is one rule's part of a decision's status, that rule alone, in
// Status's fields: what it would admit at the decision's instant, and when
// it alone would admit n (for a refusal) and its whole limit if nothing else
// were admitted. Offsets, as the Log's instants are; an OK flag is false for
// never, and RetryOK also for admissions and for n out of [1, minLimit].
type RuleStatus Status

// DecideRules is DecideStatus, and also calls rule (when not nil) with each
// rule's index, in Init's order, and its RuleStatus on the state the
// returned Status was read from. A round whose reads went stale is read
// again, so rule may be called more than once for an index: the last call
// for each index is the answer.
func (l *Log) DecideRules(now, n int64, rule func(i int, rs RuleStatus)) (admitted bool, st Status) {
	if n < 1 || n > l.minLimit {
		return n == 0, l.statusNow(now, n, n == 0, rule)
	}
	ok, h, t := l.allowN(now, n)
	if ok {
		h = l.add(h, uint64(n))
	}
	for {
		if st, valid := l.statusAt(h, t, now, n, ok, rule); valid {
			return ok, st
		}
		// The live state, still judged at the decision's instant: it
		// holds the decision's stamps and later ones only, so it says
		// no more remaining and no earlier retry than the decision's
		// own state, and agrees with the decision.
		h, _ = l.snapshot()
	}
}

// statusAt is the Status with the head at h and the clamped instant t (for an
// n out of [1, minLimit], no Retry), and each rule's through rule when not
// nil. valid is false when a slot it read may no longer have held the index
// it was read for.
func (l *Log) statusAt(h uint64, t, now, n int64, admitted bool, rule func(int, RuleStatus)) (st Status, valid bool) {
	retry := !admitted && n >= 1 && n <= l.minLimit
	if rule == nil {
		if st.Remaining, valid = l.tokens(h, t); !valid {
			return st, false
		}
	} else {
		// Each rule's room, and the smallest: the same searches tokens
		// makes (room is monotone: min(room(Limit), bound) is
		// room(bound)).
		st.Remaining = l.minLimit
		for i := range l.rules {
			r := &l.rules[i]
			var rs RuleStatus
			if rs.Remaining, valid = l.room(h, t, r, r.Limit); !valid {
				return st, false
			}
			st.Remaining = min(st.Remaining, rs.Remaining)
			if rs.Reset, rs.ResetOK, valid = l.ruleReadyRoom(h, t, now, r, r.Limit, rs.Remaining); !valid {
				return st, false
			}
			if retry {
				if rs.Retry, rs.RetryOK, valid = l.ruleReadyRoom(h, t, now, r, n, rs.Remaining); !valid {
					return st, false
				}
			}
			rule(i, rs)
		}
	}
	if st.Reset, st.ResetOK, valid = l.readyAt(h, t, now, l.minLimit); !valid {
		return st, false
	}
	if retry {
		if st.Retry, st.RetryOK, valid = l.readyAt(h, t, now, n); !valid {
			return st, false
		}
	}
	return st, l.fresh(h)
}

// statusNow is the Status of the live state at now, from one snapshot, for a
// decision on n that was (or was not) admitted, and each rule's through rule
// when not nil.
func (l *Log) statusNow(now, n int64, admitted bool, rule func(int, RuleStatus)) Status {
	if l.size == 0 {
		// The zero Log: its whole limit, 0, is there now; nothing else
		// ever fits. It has no rules.
		return Status{Reset: now, ResetOK: true}
	}
	stampNow := toStamp(now)
	for {
		h, last := l.snapshot()
		if st, valid := l.statusAt(h, max(stampNow, last), now, n, admitted, rule); valid {
			return st
		}
	}
}

// fresh reports whether every slot read for an index in [h-size, h-1] since
// the head was seen at h held that index, given that stampAt accepted it. A
// slot's lap bit tells its index from the next lap's but not from the one
// two laps later, and an index that far on is claimed only once the head has
// moved size places past h. Reads validated by fresh are therefore those of
// the state with the head at h, whatever happened meanwhile. The distance is
// taken modulo the cycle counter's 32 bits, so a head that wraps does not
// pass for one that stayed.
func (l *Log) fresh(h uint64) bool {
	now := l.head.Load()
	laps := uint64(uint32(now>>32) - uint32(h>>32))
	return laps*l.size+now&posMask < l.size+h&posMask
}

// allowN is AllowN that also returns the head index and the stamp of the
// decision, for 1 <= n <= minLimit: on admission the index of the first unit
// claimed and the stamp the units carry (the caller's clamped instant); on
// refusal the head the rules were checked at and the clamped instant they
// were checked for. Tests use both to check every stamp; DecideStatus reads
// the decision's status at them. For n out of range both are 0.
func (l *Log) allowN(now int64, n int64) (admitted bool, first uint64, stamp int64) {
	if n <= 0 {
		return n == 0, 0, 0
	}
	if n > l.minLimit {
		return false, 0, 0
	}
	now = toStamp(now)
	if n == 1 && l.window != 0 {
		// The hot path: cost 1 and one rule of limit L = size. The stamp to
		// check (L places back) is the one in the claim slot, so a decision
		// is three loads and an admission two CAS. Any state off this path
		// (a lagging head, a marker, a stale read) falls through to the
		// general loop, allowSlow.
		for {
			h := l.head.Load()
			pos := h & posMask
			lap := lapOf(h)
			claim := &l.slots[pos]
			testHook(hookFastHead)
			cv := claim.Load()
			if l.head.Load() != h {
				// cv must be slot h's value while the head is h. Read
				// with the head at h+2kL instead (k >= 1; other
				// distances fail the lap checks below), it and the
				// predecessor are that state's, so the claim CAS can
				// only succeed as the right admission of index h+2kL
				// with the right stamp, and a refusal is caught by
				// fresh; what goes wrong is the head reported, h
				// (TestHookFastHeadMoves). No caller sees it:
				// DecideStatus reads at h+1, finds it not fresh, and
				// reads the live state at the decision's instant,
				// as after any admission it was overtaken by.
				continue
			}
			if cv&(busyBit|lapBit) != lap^lapBit {
				break // claimed already, or an old batch marker
			}
			prev, plap := pos-1, lap
			if pos == 0 {
				prev, plap = l.size-1, lap^lapBit
			}
			pv := l.slots[prev].Load()
			if pv&(busyBit|lapBit) != plap {
				break
			}
			t := max(now, int64(pv&valueMask))
			if s := int64(cv & valueMask); s != 0 && s > t-l.window {
				// cv was read while the head was h; pv after, so it
				// may hold the index two laps on (a later stamp: t too
				// late, though the refusal would still be right).
				if l.fresh(h) {
					return false, h, t
				}
				continue
			}
			if claim.CompareAndSwap(cv, lap|uint64(t)) {
				l.head.CompareAndSwap(h, l.add(h, 1))
				return true, h, t
			}
		}
	}
	return l.allowSlow(now, n)
}

// hookFastHead is the testHook point in allowN's fast path between the head
// load and the claim slot's: calls made there can move the head two laps on
// (TestHookFastHeadMoves).
const hookFastHead = 4

// hookSlowChecks is the testHook point in allowSlow after the head, the claim
// slot and the predecessor are read, before the rules' check slots: calls
// made there can overwrite those slots with indices two laps on, which only
// fresh tells apart (TestHookSlowTwoLaps).
const hookSlowChecks = 1

// hookSlowHead is the testHook point in allowSlow between the head load and
// the claim slot's: calls made there can move the head two laps on, so that
// the claim slot looks unclaimed and the predecessor and check slots hold
// the state at the new head; only the head re-check after the claim load
// keeps a unit from claiming that index while reporting h, and a batch from
// leaving a marker no batch will clear (TestHookSlowHeadMoves).
const hookSlowHead = 2

// allowSlow is allowN off the one-rule unit fast path: several rules, a
// batch, or a state the fast path does not handle (a lagging head, a marker,
// a stale read). now is a stamp, 1 <= n <= minLimit. Kept out of allowN so
// that the fast path's frame does not carry this loop's state.
func (l *Log) allowSlow(now int64, n int64) (admitted bool, first uint64, stamp int64) {
	var d *batch // the caller's descriptor, once it needs one (n >= 2)
	for {
		h := l.head.Load()
		claim := l.slot(h)
		testHook(hookSlowHead)
		cv := claim.Load()
		if l.head.Load() != h {
			// cv must be read while the head is h: a caller delayed
			// across two laps could otherwise mistake a later unit's
			// slot for this one (the lap bit repeats every two laps).
			continue
		}
		if cv&lapBit == lapOf(h) {
			// Index h is claimed already, the head lags: help, retry.
			l.help(h, cv)
			continue
		}
		if cv&busyBit != 0 {
			// Slot h holds the marker of an older batch (index h-size):
			// replace it by its stamp, so that claims only ever replace
			// stamps. Then start again.
			l.stampAt(l.sub(h, l.size))
			continue
		}
		// The predecessor's stamp is the latest: time never goes back.
		// (stampAt, inlined by hand: this is the hot path.)
		j := l.sub(h, 1)
		v := l.slots[j&posMask].Load()
		last := int64(v & valueMask)
		if v&(busyBit|lapBit) != lapOf(j) {
			var ok bool
			if last, ok = l.stampSlow(j, v); !ok {
				continue
			}
		}
		t := max(now, last)
		testHook(hookSlowChecks)
		// Every rule must admit: the stamp Limit-n+1 places back must be
		// outside (t-Window, t] (stamp 0: nothing admitted that far back).
		for i := range l.rules {
			r := &l.rules[i]
			j := l.sub(h, uint64(r.Limit-n+1))
			v := l.slots[j&posMask].Load()
			s := int64(v & valueMask)
			if v&(busyBit|lapBit) != lapOf(j) {
				var ok bool
				if s, ok = l.stampSlow(j, v); !ok {
					goto again
				}
			}
			if s != 0 && s > t-r.Window {
				if !l.fresh(h) {
					// A slot read after the head check may hold the index
					// two laps later (its lap bit is the same): the
					// refusal would rest on no state the log was in.
					goto again
				}
				if d != nil {
					batchPool.Put(d) // never published: nobody else saw it
				}
				return false, h, t
			}
		}
		if n == 1 {
			// Claim and publish in one step: the linearization point.
			if claim.CompareAndSwap(cv, lapOf(h)|uint64(t)) {
				l.head.CompareAndSwap(h, l.add(h, 1))
				return true, h, t
			}
			continue
		}
		if !l.clearMarkers(l.add(h, 1), n-1) {
			continue
		}
		// Publish the batch; its marker (placed by drive, ours or a
		// helper's) is the linearization point.
		if d == nil {
			d = batchPool.Get().(*batch)
		}
		d.h, d.n, d.t = h, uint64(n), t
		d.state.Store(undecided)
		if !l.pending.CompareAndSwap(nil, d) {
			// Another batch is in flight: finish it, start again.
			if o := l.acquirePending(); o != nil {
				l.drive(o)
				o.refs.Add(-1)
			}
			continue
		}
		// Place the marker at once (a helper's CAS would expect the
		// same unclaimed value), then finish. drive returns once the
		// outcome is recorded and pending no longer names d.
		claim.CompareAndSwap(cv, markerFor(h, n))
		l.drive(d)
		if d.state.Load() == committed {
			releaseBatch(d)
			return true, h, t
		}
		releaseBatch(d)
		d = nil // published once: take a fresh one if we try again
	again:
	}
}

// clearMarkers replaces every batch marker in slots from .. from+n-1 (which
// hold indices size places earlier) by its batch's stamp, so that a batch
// claim overwrites only stamps. It reports false if it could not.
func (l *Log) clearMarkers(from uint64, n int64) bool {
	j := from
	for range n {
		if l.slot(j).Load()&busyBit != 0 {
			if _, ok := l.stampAt(l.sub(j, l.size)); !ok {
				return false
			}
		}
		j = l.add(j, 1)
	}
	return true
}

// help finishes the claim of index h, whose slot holds cv (lap(h)): a unit's
// by advancing the head, a batch's by driving the batch in flight.
func (l *Log) help(h, cv uint64) {
	if cv&busyBit == 0 {
		l.head.CompareAndSwap(h, l.add(h, 1))
		return
	}
	// A marker at the head is the pending batch's. If pending names
	// another batch (or none), this one finished meanwhile.
	if d := l.acquirePending(); d != nil {
		if d.h == h {
			l.drive(d)
		}
		d.refs.Add(-1)
	}
}

// drive takes the published batch d (the caller owns it or holds a
// reference) to its outcome, completes it if committed, and clears pending.
// Any caller may run it, any number of times, concurrently; it returns once
// the head has passed d.h and pending no longer names d.
func (l *Log) drive(d *batch) {
	h, n, t := d.h, d.n, d.t
	marker := markerFor(h, int64(n))
	for {
		if l.head.Load() != h {
			// The head passed h (it only grows, and d.h was read from
			// it). If nothing was recorded, no marker was placed: the
			// batch failed. A committed batch's marker may still be in
			// slot h; replace it before pending may name another batch.
			if d.state.Load() == undecided {
				d.state.CompareAndSwap(undecided, failed)
			}
			if d.state.Load() == committed {
				l.slot(h).CompareAndSwap(marker, lapOf(h)|uint64(t))
			}
			l.pending.CompareAndSwap(d, nil)
			return
		}
		v := l.slot(h).Load()
		if l.head.Load() != h {
			continue // v must be slot h's value while the head is h
		}
		switch {
		case v == marker:
			// Placed by a helper of d (the only batch that can mark
			// index h): committed. Write its stamp, then move on.
			d.state.CompareAndSwap(undecided, committed)
			if l.fill(h, n, t) {
				l.head.CompareAndSwap(h, l.add(h, n))
			}
		case v&lapBit == lapOf(h):
			// A unit claimed index h first: the batch failed. Help
			// the unit's head advance.
			d.state.CompareAndSwap(undecided, failed)
			l.head.CompareAndSwap(h, l.add(h, 1))
		case v&busyBit != 0:
			// An older batch's marker (index h-size): resolve it.
			l.stampAt(l.sub(h, l.size))
		default:
			// Unclaimed, and the head is still h: no admission since
			// the claimant's check, which therefore still holds. Mark.
			l.slot(h).CompareAndSwap(v, marker)
		}
	}
}

// fill writes stamp t into slots h+1 .. h+n-1 of the committed batch at h.
// It reports false if it saw the head move past h (someone else finished).
func (l *Log) fill(h, n uint64, t int64) bool {
	j := h
	for range n - 1 {
		j = l.add(j, 1)
		for {
			v := l.slot(j).Load()
			if l.head.Load() != h {
				return false
			}
			// While the head is h the slot holds index j-size (old lap)
			// or already index j (this batch's stamp).
			if v&lapBit == lapOf(j) || l.slot(j).CompareAndSwap(v, lapOf(j)|uint64(t)) {
				break
			}
		}
	}
	return true
}

// snapshot reads the head and the latest stamp, helping a lagging head or a
// batch in flight along first. The stamp is read after the head: a caller
// that reads more slots checks fresh(h) after all of them, which covers this
// one too; one that reads none uses latest.
func (l *Log) snapshot() (h uint64, last int64) {
	for {
		h = l.head.Load()
		cv := l.slot(h).Load()
		if l.head.Load() != h {
			continue
		}
		if cv&lapBit == lapOf(h) {
			l.help(h, cv)
			continue
		}
		if last, ok := l.stampAt(l.sub(h, 1)); ok {
			return h, last
		}
	}
}

// TokensAt returns the largest n AllowN(now, n) would admit now. Under
// concurrent admissions the answer may already be stale when it returns.
func (l *Log) TokensAt(now int64) int64 {
	if l.size == 0 {
		return 0
	}
	now = toStamp(now)
	for {
		h, last := l.snapshot()
		if k, ok := l.tokens(h, max(now, last)); ok && l.fresh(h) {
			return k
		}
	}
}

// tokens is TokensAt with the head at h and the clamped instant t. ok is
// false when a slot no longer held the index it was read for.
func (l *Log) tokens(h uint64, t int64) (k int64, ok bool) {
	best := l.minLimit
	for i := range l.rules {
		if best, ok = l.room(h, t, &l.rules[i], best); !ok {
			return 0, false
		}
	}
	return best, true
}

// room returns the largest k <= bound (bound <= r.Limit) such that rule r
// admits k at the clamped instant t with the head at h: the stamp at index
// h+k-1-Limit is outside the window. That stamp grows with k, so it is a
// binary search. ok is false when the head moved while reading.
func (l *Log) room(h uint64, t int64, r *Rule, bound int64) (k int64, ok bool) {
	lo, hi := int64(0), bound
	for lo < hi {
		k := (lo + hi + 1) / 2
		s, ok := l.stampAt(l.sub(h, uint64(r.Limit-k+1)))
		if !ok {
			return 0, false
		}
		if s == 0 || s <= t-r.Window {
			lo = k
		} else {
			hi = k - 1
		}
	}
	return lo, true
}

// RemainingAt appends to dst, for each rule in order, the largest n that rule
// alone would admit at now (its limit minus the cost stamped in its window
// ending at the clamped instant), all read from one snapshot, and returns the
// extended slice. With room in dst it allocates nothing.
func (l *Log) RemainingAt(now int64, dst []int) []int {
	if l.size == 0 {
		return dst
	}
	now = toStamp(now)
	n0 := len(dst)
retry:
	dst = dst[:n0]
	h, last := l.snapshot()
	t := max(now, last)
	for i := range l.rules {
		k, ok := l.room(h, t, &l.rules[i], l.rules[i].Limit)
		if !ok {
			goto retry
		}
		dst = append(dst, int(k))
	}
	if !l.fresh(h) {
		goto retry
	}
	return dst
}

// ResetsAt calls f, for each rule in order, with the earliest instant >= now
// at which that rule alone would admit its whole limit if nothing else were
// admitted: now itself when nothing it counts is left at now (AllowN decides
// at max(now, the latest stamp)), else its window after the latest stamp;
// ok is false past the last stamp there is. All come from one snapshot.
func (l *Log) ResetsAt(now int64, f func(at int64, ok bool)) {
	if l.size == 0 {
		for range l.rules {
			f(now, true)
		}
		return
	}
	last := l.latest()
	t := max(toStamp(now), last)
	for i := range l.rules {
		// The whole limit L of a rule fits iff the stamp L places back
		// from the last index it would take is outside the window: the
		// stamp at index h-1, the latest (ruleReadyRoom for n = L).
		need := int64(0)
		if last > 0 {
			need = last + l.rules[i].Window
		}
		f(readyFrom(need, t, now))
	}
}

// ReadyAt returns the earliest instant >= now at which n would be admitted if
// nothing else is; ok is false if n can never be admitted: n < 0, n above the
// smallest limit, or a window that stays full at the latest stamp there is
// (past the saturation range time cannot advance any further). n == 0 is
// ready at now.
func (l *Log) ReadyAt(now int64, n int64) (at int64, ok bool) {
	if n == 0 {
		return now, true
	}
	if n < 0 || n > l.minLimit {
		return 0, false
	}
	stampNow := toStamp(now)
	for {
		h, last := l.snapshot()
		if at, ok, valid := l.readyAt(h, max(stampNow, last), now, n); valid && l.fresh(h) {
			return at, ok
		}
	}
}

// readyAt is ReadyAt with the head at h and the clamped instant t, for
// 1 <= n <= minLimit. valid is false when a slot no longer held the index it
// was read for.
func (l *Log) readyAt(h uint64, t, now, n int64) (at int64, ok, valid bool) {
	need := int64(0)
	for i := range l.rules {
		r := &l.rules[i]
		s, ok := l.stampAt(l.sub(h, uint64(r.Limit-n+1)))
		if !ok {
			return 0, false, false
		}
		if s > 0 {
			need = max(need, s+r.Window)
		}
	}
	at, ok = readyFrom(need, t, now)
	return at, ok, true
}

// ruleReadyRoom is readyAt for rule r alone, for 1 <= n <= r.Limit, given
// room, the rule's room on the same state: n fits now when it is within it.
func (l *Log) ruleReadyRoom(h uint64, t, now int64, r *Rule, n, room int64) (at int64, ok, valid bool) {
	if n <= room {
		return now, true, true
	}
	s, ok := l.stampAt(l.sub(h, uint64(r.Limit-n+1)))
	if !ok {
		return 0, false, false
	}
	need := int64(0)
	if s > 0 {
		need = s + r.Window
	}
	at, ok = readyFrom(need, t, now)
	return at, ok, true
}

// readyFrom is the earliest instant, not before now, from which a call whose
// rules need the clamped instant to be at least need is admitted, for a
// state decided at the clamped instant t; ok is false if never.
func readyFrom(need, t, now int64) (at int64, ok bool) {
	// AllowN(u, n) decides at max(toStamp(u), last), t for u = now: it
	// admits iff need is at most that. So it admits now, or from the
	// instant need on, or never if need is past the last stamp there is.
	if need <= t {
		return now, true
	}
	if need > maxStamp {
		return 0, false
	}
	// need > t >= toStamp(now), so fromStamp(need) is after now and inside
	// the range where toStamp is exact: toStamp(at) == need.
	return fromStamp(need), true
}

// IdleAt reports whether the log decides, for every instant >= now, exactly
// as a new log with the same rules: no admission is recorded, or the latest is
// at least the longest window before now.
func (l *Log) IdleAt(now int64) bool {
	if l.size == 0 {
		return true
	}
	last := l.latest()
	return last == 0 || last <= toStamp(now)-l.maxWindow
}

// latest is the latest stamp, from a snapshot whose read was fresh.
func (l *Log) latest() int64 {
	for {
		if h, last := l.snapshot(); l.fresh(h) {
			return last
		}
	}
}
