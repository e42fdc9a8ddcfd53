package redis

import (
	"context"
	"reflect"
	"sync/atomic"
	"time"
)

// deadlines bounds decisions by a limiter's timeout. A context with a deadline
// of its own costs a timer, a channel and a handful of allocations per call,
// which at tens of thousands of decisions a second is a visible share of the
// client's CPU. Calls whose context can never be cancelled (its Done is nil:
// context.Background, a service's context of values) share one: every such
// call with the same context in one slot of time, a 128th of the timeout,
// gets the context made for the slot, whose deadline is the slot's end plus
// the timeout. A call is thus bounded by its timeout and at most a 128th
// more, and one timer per slot runs for all of them. Only the latest such
// context is remembered, and sharing starts at its second call in a row:
// a call with another context gets a deadline of its own, released when it
// ends, so that contexts made per call (or calls that alternate between
// several) never leave a timer running after their call; and a slot's
// shared context, once made, is kept for the slot, so that no slot starts
// more than one timer that outlives its calls.
// Other contexts (a request's, which its server cancels) get a deadline of
// their own, and a caller whose deadline comes before the timeout keeps its
// context as it is.
type deadlines struct {
	timeout time.Duration // > 0
	slot    time.Duration // timeout/128, at least 1ns
	last    atomic.Pointer[slotContext]
}

// slotContext is the context shared by the calls of one slot. Its parent
// can never be cancelled, so it ends exactly at its deadline, by the timer
// that context.WithDeadline started: nothing calls cancel, which is kept only
// so that the timer's release is visibly accounted for.
type slotContext struct {
	parent context.Context
	slot   int64 // slots since clockBase; -1 before parent's shared context
	ctx    context.Context
	cancel context.CancelFunc
}

// clockBase numbers the slots on the monotonic clock, so that a step of the
// wall clock can neither shorten nor lengthen a shared deadline.
var clockBase = time.Now()

func noCancel() {}

// sameContext reports whether a == b. A context of a comparable type can
// still hold a value that is not (a struct with an interface field holding
// a slice), and comparing it panics: such contexts are never the same. (The
// value's own check, reflect.Value.Comparable, allocates for struct types,
// context.Background's among them.)
func sameContext(a, b context.Context) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

func newDeadlines(timeout time.Duration) *deadlines {
	if timeout <= 0 {
		return nil
	}
	return &deadlines{timeout: timeout, slot: max(timeout/128, 1)}
}

// bound returns ctx bounded by the timeout and the function to call when the
// decision is over. A nil d (no timeout) returns ctx.
func (d *deadlines) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if d == nil {
		return ctx, noCancel
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d.timeout {
		return ctx, noCancel
	}
	if ctx.Done() != nil || !reflect.TypeOf(ctx).Comparable() {
		return context.WithTimeout(ctx, d.timeout)
	}
	// time.Since reads only the monotonic clock, cheaper than time.Now.
	slot := int64(time.Since(clockBase) / d.slot)
	s := d.last.Load()
	if s != nil && s.slot == slot && !sameContext(s.parent, ctx) {
		// Another context holds this slot's shared deadline: keep it, so
		// that a slot starts at most one timer (contexts that alternate in
		// runs of two made a shared timer per run, each left running for
		// the whole timeout), and give this call a deadline of its own.
		return context.WithTimeout(ctx, d.timeout)
	}
	if s == nil || !sameContext(s.parent, ctx) {
		// A context not seen just before, perhaps made for this call
		// alone (a context of values per job): a deadline of its own,
		// released when the call ends. Sharing starts at its next call,
		// so that one-off contexts never leave a timer running for the
		// whole timeout after their call.
		d.last.Store(&slotContext{parent: ctx, slot: -1})
		return context.WithTimeout(ctx, d.timeout)
	}
	if s.slot == slot {
		return s.ctx, noCancel
	}
	// Two steps: Time.Add copes with a timeout near the largest Duration,
	// a sum of Durations would overflow.
	end := clockBase.Add(time.Duration(slot+1) * d.slot).Add(d.timeout)
	c, cancel := context.WithDeadline(ctx, end)
	d.last.Store(&slotContext{parent: ctx, slot: slot, ctx: c, cancel: cancel})
	return c, noCancel
}
