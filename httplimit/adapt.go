package httplimit

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// shared is what every adapter of one limiter shared by all keys decides
// with.
type shared interface {
	AllowN(now time.Time, n int) bool
	ReadyAt(now time.Time, n int) (time.Time, bool)
}

// decideShared decides cost at now on l, whose largest admissible cost is
// limit, into d, a zero Decision: admitted, over the limit (with the instant
// the cost would fit), or never (also when the cost does not fit even at the
// last instant l tells apart).
func decideShared[L shared](d *Decision, l L, limit int, now time.Time, cost int) {
	switch {
	case cost < 0 || cost > limit:
		d.Reason = Never
	case l.AllowN(now, cost):
		d.Allowed = true
	default:
		var ok bool
		if d.RetryAt, ok = l.ReadyAt(now, cost); ok {
			d.Reason = OverLimit
		} else {
			d.Reason = Never
		}
	}
}

// checkShared is the answer decideShared would give, recording nothing.
func checkShared[L shared](l L, now time.Time, cost int) Decision {
	var d Decision
	switch at, ok := l.ReadyAt(now, cost); {
	case !ok:
		d.Reason = Never
	case at.After(now):
		d.Reason, d.RetryAt = OverLimit, at
	default:
		d.Allowed = true
	}
	return d
}

// single is the part of the limiter contract a one-rule limiter shared by all
// keys offers: *ring.Limiter and *window.Limiter.
type single interface {
	AllowN(now time.Time, n int) bool
	TokensAt(now time.Time) int
	ReadyAt(now time.Time, n int) (time.Time, bool)
	Limit() int
	Window() time.Duration
}

// statusSingle is a one-rule limiter that decides and reports its quota from
// the state the decision was made on: *window.Limiter and *ring.Limiter.
type statusSingle interface {
	DecideStatus(now time.Time, n int) slidelimit.Status
}

var (
	_ statusSingle = (*window.Limiter)(nil)
	_ statusSingle = (*ring.Limiter)(nil)
)

// one adapts a single-rule limiter shared by all keys.
type one[L single] struct {
	l     L
	limit int
	rules []Rule
	// status is l, if it reports its quota with its decisions: then a
	// decision that needs the quota reads the limiter's state once instead
	// of up to four times (each a cache miss when other cores admit).
	// Without the quota, l's AllowN is cheaper.
	status statusSingle
}

func newOne[L single](l L, ok bool) Limiter {
	if !ok {
		return &one[L]{} // no rules: New rejects it
	}
	o := &one[L]{l: l, limit: l.Limit(), rules: []Rule{{Limit: l.Limit(), Window: l.Window()}}}
	o.status, _ = any(l).(statusSingle)
	return o
}

// Ring adapts one *ring.Limiter shared by every request (the key is ignored).
// Remaining and Reset are exact: Reset is when every admission counted now
// has left the window. With the quota asked for, it decides with
// DecideStatus, which reads them at the log's state right after the decision.
// A nil l gives a Limiter that New rejects.
func Ring(l *ring.Limiter) Limiter { return newOne(l, l != nil) }

// Window adapts one *window.Limiter shared by every request (the key is
// ignored). Remaining and Reset follow the two-counter estimate exactly. A nil
// l gives a Limiter that New rejects.
func Window(l *window.Limiter) Limiter { return newOne(l, l != nil) }

func (o *one[L]) Rules() []Rule { return o.rules }

func (o *one[L]) Decide(_ context.Context, _ string, now time.Time, cost int) (Decision, error) {
	var d Decision
	o.decide(&d, now, cost, true)
	return d, nil
}

func (o *one[L]) serve(m *Middleware, w http.ResponseWriter, r *http.Request, next http.Handler, key string, now time.Time, cost int) {
	var d Decision
	o.decide(&d, now, cost, m.quotaOnAdmit())
	m.respond(w, r, next, key, now, &d, nil)
}

// decide decides into d, a zero Decision, with the quota if quota is true or
// cost was not admitted.
func (o *one[L]) decide(d *Decision, now time.Time, cost int, quota bool) {
	if o.status != nil && quota {
		s := o.status.DecideStatus(now, cost)
		fromStatus(d, &s, now)
		return
	}
	decideShared(d, o.l, o.limit, now, cost)
	if quota || !d.Allowed {
		o.quota(d, now)
	}
}

func (o *one[L]) Check(_ context.Context, _ string, now time.Time, cost int) (Decision, error) {
	d := checkShared(o.l, now, cost)
	o.quota(&d, now)
	return d, nil
}

func (o *one[L]) quota(d *Decision, now time.Time) {
	rem := o.l.TokensAt(now)
	d.NumQuota = 1
	d.Quota[0] = Quota{Remaining: rem, Reset: resetOf(o.l, now, rem, o.limit)}
}

// fromStatus fills d, a zero Decision, from a decision reported with its
// quota (DecideStatus): a refusal with no instant to retry at is Never (the
// cost exceeds the limit, or does not fit even at the last instant the
// limiter tells apart).
func fromStatus(d *Decision, s *slidelimit.Status, now time.Time) {
	switch {
	case s.Admitted:
		d.Allowed = true
	case !s.RetryAt.IsZero():
		d.Reason, d.RetryAt = OverLimit, s.RetryAt
	default:
		d.Reason = Never
	}
	d.NumQuota, d.Quota[0] = 1, statusQuota(s, now)
}

// quotaFrom sets d's quota, one rule per status (statusQuota).
func quotaFrom(d *Decision, now time.Time, rules ...slidelimit.Status) {
	n := min(len(rules), MaxRules)
	d.NumQuota = n
	for i := range n {
		d.Quota[i] = statusQuota(&rules[i], now)
	}
}

// statusQuota is the quota of one rule's status s at now: its Remaining, and
// its Reset from ResetAt (0 when the whole limit is there now, or when it is
// unknown).
func statusQuota(s *slidelimit.Status, now time.Time) Quota {
	q := Quota{Remaining: s.Remaining}
	if !s.ResetAt.IsZero() {
		q.Reset = max(s.ResetAt.Sub(now), 0)
	}
	return q
}

// resetOf is when the whole limit fits again, from the limiter's ReadyAt.
func resetOf[L single](l L, now time.Time, rem, limit int) time.Duration {
	if rem >= limit {
		return 0
	}
	at, ok := l.ReadyAt(now, limit)
	if !ok {
		return 0
	}
	return max(at.Sub(now), 0)
}

// ruled is the part of the limiter contract a multi-rule limiter shared by
// all keys offers: *multi.Limiter and *multi.Approx.
type ruled interface {
	AllowN(now time.Time, n int) bool
	ReadyAt(now time.Time, n int) (time.Time, bool)
	MaxN() int
	Rules() []multi.Rule
}

// many adapts a multi-rule limiter shared by all keys.
type many[L ruled] struct {
	l     L
	limit int
	rules []Rule
}

func newMany[L ruled](l L, ok bool) Limiter {
	if !ok {
		return &many[L]{}
	}
	m := &many[L]{l: l, limit: l.MaxN()}
	for _, r := range l.Rules() {
		m.rules = append(m.rules, Rule{Limit: r.Limit, Window: r.Window})
	}
	return m
}

// Multi adapts one *multi.Limiter shared by every request (the key is
// ignored). Remaining and Reset are exact per rule: what the rule alone
// would admit, and when every admission it counts has left its window. With
// the quota asked for, a request is one call of DecideRules, whose answers
// come from the state the decision was made on. A nil l gives a Limiter that
// New rejects.
func Multi(l *multi.Limiter) Limiter { return newMany(l, l != nil) }

// Approx adapts one *multi.Approx shared by every request (the key is
// ignored). Remaining is the rule's two-counter estimate, and Reset when
// that estimate would admit the rule's whole limit if nothing else were
// admitted. With the quota asked for, a request is one call of DecideRules,
// as for Multi. A nil l gives a Limiter that New rejects.
func Approx(l *multi.Approx) Limiter { return newMany(l, l != nil) }

func (m *many[L]) Rules() []Rule { return m.rules }

func (m *many[L]) Decide(_ context.Context, _ string, now time.Time, cost int) (Decision, error) {
	var d Decision
	m.decide(&d, now, cost, true)
	return d, nil
}

func (m *many[L]) serve(mw *Middleware, w http.ResponseWriter, r *http.Request, next http.Handler, key string, now time.Time, cost int) {
	var d Decision
	m.decide(&d, now, cost, mw.quotaOnAdmit())
	mw.respond(w, r, next, key, now, &d, nil)
}

// decide decides into d, a zero Decision, with the quota if quota is true or
// cost was not admitted.
func (m *many[L]) decide(d *Decision, now time.Time, cost int, quota bool) {
	if quota {
		m.decideRules(d, now, cost)
		return
	}
	decideShared(d, m.l, m.limit, now, cost)
	if !d.Allowed {
		m.quota(d, now)
	}
}

// decideRules is decide with the quota of every rule from the decision's own
// state: one call of the limiter's DecideRules.
func (m *many[L]) decideRules(d *Decision, now time.Time, cost int) {
	// Called on the concrete types, so that the buffer stays on the stack
	// (through L's methods it would escape: one allocation per request).
	var buf [MaxRules]slidelimit.Status
	var whole slidelimit.Status
	var each []slidelimit.Status
	switch l := any(m.l).(type) {
	case *multi.Limiter:
		whole, each = l.DecideRules(now, cost, buf[:0])
	case *multi.Approx:
		whole, each = l.DecideRules(now, cost, buf[:0])
	}
	fromStatus(d, &whole, now)
	quotaFrom(d, now, each...)
}

func (m *many[L]) Check(_ context.Context, _ string, now time.Time, cost int) (Decision, error) {
	d := checkShared(m.l, now, cost)
	m.quota(&d, now)
	return d, nil
}

// quota sets d's quota from the limiter's state now (RemainingAt and
// ResetsAt, one snapshot each).
func (m *many[L]) quota(d *Decision, now time.Time) {
	// On the concrete types, as in decideRules.
	var buf [MaxRules]int
	var rbuf [MaxRules]time.Time
	var rem []int
	var resets []time.Time
	switch l := any(m.l).(type) {
	case *multi.Limiter:
		rem, resets = l.RemainingAt(now, buf[:0]), l.ResetsAt(now, rbuf[:0])
	case *multi.Approx:
		rem, resets = l.RemainingAt(now, buf[:0]), l.ResetsAt(now, rbuf[:0])
	}
	var each [MaxRules]slidelimit.Status
	n := min(len(rem), len(resets), MaxRules)
	for i := range n {
		each[i] = slidelimit.Status{Remaining: rem[i], ResetAt: resets[i]}
	}
	quotaFrom(d, now, each[:n]...)
}

// scaled is f*w, saturating at the largest Duration.
func scaled(w time.Duration, f int64) time.Duration {
	if w > math.MaxInt64/time.Duration(f) {
		return math.MaxInt64
	}
	return w * time.Duration(f)
}
