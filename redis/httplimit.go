package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
)

// HTTPLimiter adapts a Limiter to the HTTP middleware of package httplimit:
// one Decide is one AllowN, one script call, one round trip. Create it with
// NewHTTP. It is safe for concurrent use by multiple goroutines.
type HTTPLimiter struct {
	l           *Limiter
	rules       []httplimit.Rule
	serverClock bool
}

var (
	_ httplimit.Limiter = (*HTTPLimiter)(nil)
	_ httplimit.Checker = (*HTTPLimiter)(nil)
)

// NewHTTP returns l as an httplimit.Limiter. With serverClock, Decide ignores
// the instant the middleware passes and decides on the Redis server's clock,
// so that instances with skewed clocks share one (a refusal's RetryAt is the
// middleware's instant plus the wait measured on the server's clock);
// otherwise it decides at the middleware's instant. l may have at most
// httplimit.MaxRules rules.
//
// A Redis failure under FailClosed is Decide's error (the middleware applies
// its own failure policy, 503 by default); under FailOpen and FallBack,
// Decide returns the stand-in decision and no error.
//
// Quota.Reset is an upper bound: a rule's window (for NewLog) or two windows
// (for NewWindow and NewBuckets) when anything counts against the rule,
// else 0.
func NewHTTP(l *Limiter, serverClock bool) (*HTTPLimiter, error) {
	if l == nil {
		return nil, fmt.Errorf("redis: NewHTTP: limiter must not be nil")
	}
	if len(l.rules) > httplimit.MaxRules {
		return nil, fmt.Errorf("redis: NewHTTP: the limiter has %d rules, httplimit supports at most %d", len(l.rules), httplimit.MaxRules)
	}
	h := &HTTPLimiter{l: l, serverClock: serverClock}
	for _, r := range l.rules {
		h.rules = append(h.rules, httplimit.Rule{Limit: r.Limit, Window: r.Window})
	}
	return h, nil
}

// Rules returns the limiter's rules.
func (h *HTTPLimiter) Rules() []httplimit.Rule { return h.rules }

// Decide decides for key at now (or at the server's clock, see NewHTTP). A
// negative cost is refused with Reason Never without a round trip.
func (h *HTTPLimiter) Decide(ctx context.Context, key string, now time.Time, cost int) (httplimit.Decision, error) {
	return h.decide(ctx, key, now, cost, false)
}

// Check returns what Decide would decide, recording nothing (one script call
// that writes nothing; Limiter.CheckN). httplimit.All uses it so that a
// request refused by another member consumes nothing here.
func (h *HTTPLimiter) Check(ctx context.Context, key string, now time.Time, cost int) (httplimit.Decision, error) {
	return h.decide(ctx, key, now, cost, true)
}

func (h *HTTPLimiter) decide(ctx context.Context, key string, now time.Time, cost int, dry bool) (httplimit.Decision, error) {
	var hd httplimit.Decision
	hd.NumQuota = len(h.rules)
	if cost < 0 {
		hd.Reason = httplimit.Never
		return hd, nil
	}
	at := now
	if h.serverClock {
		at = time.Time{}
	}
	d, err := h.l.decide(ctx, key, at, cost, dry)
	if err != nil {
		return httplimit.Decision{}, err
	}
	switch {
	case d.Allowed:
		hd.Allowed, hd.Reason = true, httplimit.Admitted
	case d.ReadyAt.IsZero() && errors.Is(d.Err, keyed.ErrFull):
		hd.Reason = httplimit.Full // the fallback had no room for the key
	case d.ReadyAt.IsZero():
		hd.Reason = httplimit.Never
	case h.serverClock && !now.IsZero():
		// ReadyAt is on the server's clock, RetryAt on the caller's (the
		// middleware subtracts its own now): the wait, moved over.
		hd.Reason, hd.RetryAt = httplimit.OverLimit, now.Add(d.ReadyAt.Sub(d.At))
	default:
		hd.Reason, hd.RetryAt = httplimit.OverLimit, d.ReadyAt
	}
	for i, r := range h.l.rules {
		q := httplimit.Quota{Remaining: r.Limit}
		if i < len(d.Remaining) {
			q.Remaining = max(d.Remaining[i], 0)
		}
		if q.Remaining < r.Limit {
			q.Reset = r.Window
			if !h.l.exact {
				q.Reset = 2 * r.Window
			}
		}
		hd.Quota[i] = q
	}
	return hd, nil
}
