package httplimit

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/slidelimit/slidelimit/keyed"
)

// Keyed adapts a limiter per key: each request is decided by its key's own
// limiter. rules is the policy of one key's limiter, as its constructor was
// given it (ring.New(10, time.Second) is Rule{10, time.Second}); the
// middleware announces it in the RateLimit-Policy field, and the adapter
// cannot check it against the limiters k creates.
//
// Decisions map keyed's answers: a refusal by the key's limiter is
// OverLimit, with RetryAt from the decision's own status (DecideStatus, or
// DecideRules with several rules; a refusal decided without the quota is
// decided again through DecideStatus, and a key's ReadyAt is asked only of a
// limiter type without one); keyed.ErrFull is Full and
// keyed.ErrNeverReady is Never (refusals, not errors); a factory's error is
// returned as the limiter's failure. Check, which records nothing, cannot
// tell whether a key absent from a full store, or from one whose last
// creation failed, would be created (a decision sweeps idle keys and tries
// the factory again), so it answers as for a new key, and [All] decides such
// a member before its other Checkers. With one rule, Remaining is the key's
// TokensAt and Reset when the key's whole limit fits again. With several
// rules, over multi limiters, each rule's Remaining and Reset are the key's
// limiter's own for that rule (multi's DecideRules); over a limiter that
// cannot tell its rules apart, Remaining is the smallest remaining for every
// rule (a lower bound for the others) and Reset twice the rule's window when
// anything counts against the key (an upper bound for every limiter of this
// module). With the quota asked for (and, with several rules, always), a
// request is one call of k's DecideStatus or
// DecideRules (one lookup of the key), whose answers for ring, window and
// multi limiters come from the state the decision was made on. Check, which
// records nothing, reads each rule's quota over multi limiters with a cost of
// 0 (one more lookup).
//
// A nil k, or no rules, gives a Limiter that New rejects.
func Keyed[L keyed.PerKey](k *keyed.Limiter[string, L], rules ...Rule) Limiter {
	if k == nil || len(rules) == 0 {
		return &perKey[*keyed.Limiter[string, L]]{}
	}
	return newPerKey(k, rules)
}

// KeyedWindow adapts a keyed.Window: each request is decided by its key's
// two-counter window. The policy is the Window's own, one rule of
// w.Limit() per w.Window(). Decisions map the Window's answers as Keyed
// maps a keyed.Limiter's (a Window's creations cannot fail, so it returns
// no error), and Reset is exact.
//
// A nil w gives a Limiter that New rejects.
func KeyedWindow(w *keyed.Window[string]) Limiter {
	if w == nil {
		return &perKey[*keyed.Window[string]]{}
	}
	return newPerKey(w, []Rule{{Limit: w.Limit(), Window: w.Window()}})
}

// keyedStore is what the adapter needs of a keyed.Limiter or keyed.Window.
type keyedStore interface {
	Decide(key string, now time.Time, n int) (bool, error)
	TokensAt(key string, now time.Time) int
	ReadyAt(key string, now time.Time, n int) (time.Time, bool)
}

// statusStore is a keyed store that decides and reports the quota with one
// lookup of the key: keyed.Window and keyed.Limiter.
type statusStore interface {
	DecideStatus(key string, now time.Time, n int) (keyed.Status, error)
}

// rulesStore is a keyed store that also reports each rule's quota with a
// decision (keyed.Limiter; each rule's own when the key's limiter is a
// multi limiter).
type rulesStore interface {
	DecideRules(key string, now time.Time, n int, rules []keyed.Status) (keyed.Status, []keyed.Status, error)
}

func newPerKey[S keyedStore](k S, rules []Rule) *perKey[S] {
	p := &perKey[S]{k: k, rules: append([]Rule(nil), rules...)}
	p.limit = rules[0].Limit
	for _, r := range rules {
		p.limit = min(p.limit, r.Limit)
	}
	if s, ok := any(k).(statusStore); ok && len(rules) == 1 {
		p.status = s
	}
	if r, ok := any(k).(rulesStore); ok && len(rules) > 1 {
		p.each = r
		p.bufs.New = func() any { return new([MaxRules]keyed.Status) }
	}
	return p
}

type perKey[S keyedStore] struct {
	k     S
	rules []Rule
	limit int // the smallest limit of the rules
	// status is k, for one rule, if it reports the key's quota with its
	// decisions: then a decision that needs the quota is one lookup
	// instead of up to four.
	// (Without the quota, k's Decide is cheaper: it computes nothing beyond
	// the decision.)
	status statusStore
	// each is k, for several rules, if it can report each rule's quota:
	// then Remaining and Reset are the key's limiter's own per rule. Its
	// buffers come from bufs: passed through an interface, a buffer on the
	// stack would be allocated on every request.
	each rulesStore
	bufs sync.Pool
}

func (p *perKey[S]) Rules() []Rule { return p.rules }

func (p *perKey[S]) Decide(_ context.Context, key string, now time.Time, cost int) (Decision, error) {
	var d Decision
	if err := p.decide(&d, key, now, cost, true); err != nil {
		return Decision{}, err
	}
	return d, nil
}

func (p *perKey[S]) serve(m *Middleware, w http.ResponseWriter, r *http.Request, next http.Handler, key string, now time.Time, cost int) {
	var d Decision
	err := p.decide(&d, key, now, cost, m.quotaOnAdmit())
	m.respond(w, r, next, key, now, &d, err)
}

// decide decides into d, a zero Decision, with the quota if quota is true or
// cost was not admitted. On an error, d is meaningless.
func (p *perKey[S]) decide(d *Decision, key string, now time.Time, cost int, quota bool) error {
	if p.each != nil || (p.status != nil && quota) {
		// With several rules, always: over multi limiters a refusal's
		// quota is then each rule's own in every mode of the fields.
		return p.decideStatus(d, key, now, cost)
	}
	ok, err := p.k.Decide(key, now, cost)
	if !ok && err == nil && p.status != nil {
		// Refused by the limit, which recorded nothing: decide again with
		// the status, whose RetryAt and quota come from that decision's
		// own state. (A ReadyAt asked apart could find the key removed
		// meanwhile and no room for it, and say "never" to a cost that
		// fits.) It is also fewer lookups than ReadyAt and the quota.
		return p.decideStatus(d, key, now, cost)
	}
	switch {
	case ok:
		d.Allowed = true
	case err == nil:
		if at, ready := p.k.ReadyAt(key, now, cost); ready {
			d.Reason, d.RetryAt = OverLimit, at
		} else {
			d.Reason = Never
		}
	case errors.Is(err, keyed.ErrFull):
		d.Reason = Full
	case errors.Is(err, keyed.ErrNeverReady):
		d.Reason = Never
	default:
		return err
	}
	if quota || !d.Allowed {
		p.quota(d, key, now)
	}
	return nil
}

// decideStatus is decide on a statusStore (one rule) or a rulesStore
// (several), with the quota from the decision's own answer: exact for one
// rule; for several, each rule's as the key's limiter reports it, or the
// key's remaining for each rule (see quotaOf).
func (p *perKey[S]) decideStatus(d *Decision, key string, now time.Time, cost int) error {
	if p.each != nil {
		return p.decideEach(d, key, now, cost)
	}
	s, err := p.status.DecideStatus(key, now, cost)
	if err != nil {
		return refusedWith(d, &s, now, err)
	}
	fromStatus(d, &s, now)
	return nil
}

// decideEach is decideStatus for several rules.
func (p *perKey[S]) decideEach(d *Decision, key string, now time.Time, cost int) error {
	buf := p.bufs.Get().(*[MaxRules]keyed.Status)
	defer p.bufs.Put(buf)
	s, each, err := p.each.DecideRules(key, now, cost, buf[:0])
	if err != nil {
		if err = refusedWith(d, &s, now, err); err != nil {
			return err
		}
	} else {
		fromStatus(d, &s, now)
	}
	if len(each) == len(p.rules) {
		quotaFrom(d, now, each...)
	} else {
		p.quotaOf(d, s.Remaining)
	}
	return nil
}

// refusedWith fills d for a keyed decision reported with the status s and
// the error err, and returns err unless it is ErrNeverReady (Never) or
// ErrFull (Full), which are refusals.
func refusedWith(d *Decision, s *keyed.Status, now time.Time, err error) error {
	full := errors.Is(err, keyed.ErrFull)
	if !full && !errors.Is(err, keyed.ErrNeverReady) {
		return err
	}
	fromStatus(d, s, now) // a refusal with an error names no RetryAt: Never
	if full {
		d.Reason = Full
	}
	return nil
}

// Check answers as Decide would, recording nothing. For a key that is absent
// while the store is full, or after its last creation failed, the store
// answers no (keyed's ReadyAt), but Decide may still admit: it sweeps a full
// store's idle keys (an automatic sweep) and tries the factory again. Only a
// decision can tell, so Check answers as for a new key, admitted with every
// rule's whole limit, and All decides such a member before the other
// Checkers, so that its refusal costs them nothing.
func (p *perKey[S]) Check(ctx context.Context, key string, now time.Time, cost int) (Decision, error) {
	d, _, err := p.check(ctx, key, now, cost)
	return d, err
}

// check is Check, and reports whether its answer is sure (see Check).
func (p *perKey[S]) check(_ context.Context, key string, now time.Time, cost int) (d Decision, sure bool, err error) {
	switch at, ok := p.k.ReadyAt(key, now, cost); {
	case ok && !at.After(now):
		d.Allowed = true
	case ok:
		d.Reason, d.RetryAt = OverLimit, at
	case cost < 0 || cost > p.limit:
		d.Reason = Never
	default:
		// Absent, and the store full or its last creation failed.
		d.Allowed = true
		d.NumQuota = min(len(p.rules), MaxRules)
		for i := range d.NumQuota {
			d.Quota[i] = Quota{Remaining: p.rules[i].Limit}
		}
		return d, false, nil
	}
	p.quota(&d, key, now)
	return d, true, nil
}

func (p *perKey[S]) quota(d *Decision, key string, now time.Time) {
	if p.each != nil {
		// Several rules over multi limiters: each rule's own, from the
		// key's limiter asked with a cost of 0, which records nothing.
		buf := p.bufs.Get().(*[MaxRules]keyed.Status)
		defer p.bufs.Put(buf)
		s, each, _ := p.each.DecideRules(key, now, 0, buf[:0])
		if len(each) == len(p.rules) {
			quotaFrom(d, now, each...)
		} else {
			p.quotaOf(d, s.Remaining)
		}
		return
	}
	rem := p.k.TokensAt(key, now)
	if len(p.rules) > 1 {
		p.quotaOf(d, rem)
		return
	}
	q := Quota{Remaining: min(rem, p.rules[0].Limit)}
	if rem < p.rules[0].Limit && d.Reason != Full {
		if at, ok := p.k.ReadyAt(key, now, p.rules[0].Limit); ok {
			q.Reset = max(at.Sub(now), 0)
		}
	}
	d.NumQuota, d.Quota[0] = 1, q
}

// quotaOf sets the quota of several rules from rem, the largest cost the
// key's limiter admits: it is each rule's Remaining (a lower bound: the
// rule with the smallest room sets it), and Reset is an upper bound, twice
// the rule's window, when anything counts against the key.
func (p *perKey[S]) quotaOf(d *Decision, rem int) {
	n := min(len(p.rules), MaxRules)
	d.NumQuota = n
	for i := range n {
		r := p.rules[i]
		q := Quota{Remaining: min(rem, r.Limit)}
		if rem < r.Limit && d.Reason != Full {
			q.Reset = scaled(r.Window, 2)
		}
		d.Quota[i] = q
	}
}
