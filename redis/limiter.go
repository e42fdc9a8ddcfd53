package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/multi"
)

// Ranges. Scripts compute in Lua doubles, exact below 2^53; these bounds keep
// every value there (see docs/redis.md).
const (
	// MaxLogLimit is the largest limit of a rule of NewLog: 2^20. The log
	// of a key is 6 bytes per unit of its largest limit L plus a header, at
	// most 8*L+100 bytes in Redis (NewLog).
	MaxLogLimit = 1 << 20
	// MaxWindowLimit is the largest limit of a rule of NewWindow and
	// NewBuckets: 2^26-1.
	MaxWindowLimit = 1<<26 - 1
	// MaxBuckets is the most sub-window counters of one rule of
	// NewBuckets: ceil(Window/Precision) is at most 1024.
	MaxBuckets = 1024
	// MaxWindow is the longest window of a rule of NewWindow and
	// NewBuckets: 2^50 microseconds, about 35 years. Windows are whole
	// microseconds.
	MaxWindow = time.Duration(1<<50) * time.Microsecond
	// MaxLogWindow is the longest window of a rule of NewLog: 2^46
	// microseconds, about 2.2 years (the log stores 6-byte offsets).
	MaxLogWindow = time.Duration(1<<46) * time.Microsecond
	// MaxRules is the largest number of rules of one limiter.
	MaxRules = 16
	// MaxKeyLen is the longest key, in bytes.
	MaxKeyLen = 1024
	// DefaultTimeout bounds a decision when Options.Timeout is zero.
	DefaultTimeout = 100 * time.Millisecond
	// DefaultPrefix starts every Redis key when Options.Prefix is empty.
	DefaultPrefix = "slidelimit"

	maxMicros = 1 << 52 // instants are below 2^52 µs after the epoch (year 2112)
)

// minInstant and maxInstant bound the caller's instants: [1 µs, 2^52 µs)
// after the Unix epoch.
var minInstant, maxInstant = time.UnixMicro(1), time.UnixMicro(maxMicros)

// Rule is one limit: at most Limit units of cost per Window.
type Rule struct {
	Limit  int
	Window time.Duration
	// Precision is the length of a sub-window counter of NewBuckets, in
	// (0, Window], whole microseconds, with ceil(Window/Precision) at most
	// MaxBuckets; Precision == Window is a fixed window. It must be zero
	// for NewLog, NewWindow and Options.Fallback.
	Precision time.Duration
}

// Policy says what a decision does when Redis does not answer in time or
// answers with an error.
type Policy uint8

const (
	// FailClosed returns the error and a refusal (the HTTP middleware
	// answers 503). The default.
	FailClosed Policy = iota
	// FailOpen admits the call and reports the error in Decision.Err; a
	// cost above a rule's limit, which never fits, is still refused.
	FailOpen
	// FallBack decides with an in-process limiter per key, with the rules
	// of Options.Fallback, and reports the error in Decision.Err.
	FallBack
)

// Source says who took a decision.
type Source uint8

const (
	// FromRedis: the script decided, and the decision is recorded in Redis.
	FromRedis Source = iota
	// FromError: the call returned an error and decided nothing: bad input
	// (a key, an instant, a cost), a context that had ended before the call
	// or was cancelled during it (under every policy), or Redis failed and
	// the policy is FailClosed.
	FromError
	// FromFailOpen: Redis failed and the call was admitted unchecked (or
	// refused, when its cost is above a rule's limit: it never fits).
	FromFailOpen
	// FromFallback: Redis failed and the in-process fallback decided.
	FromFallback
)

// Options configures a Limiter. The zero value is usable: keys named after
// DefaultPrefix and the rules, timeout DefaultTimeout, fail closed.
type Options struct {
	// Prefix names the limit: every key the limiter writes starts with it
	// ("api:log:{key}"), and limiters of one kind with one Prefix share
	// their keys, which is how the instances of a service share one limit.
	// So two different limits need two prefixes, or their counts mix. It
	// must not contain braces or "=". Empty means a name made of
	// DefaultPrefix and the rules ("slidelimit:log:1f0e9a3c:{key}"; see
	// docs/redis.md): limits with different rules then never share keys,
	// limits with the same rules, in the same order, always do; a change of
	// rules (or of their order) starts every key afresh. (Before 2026-11-25
	// the empty Prefix meant "slidelimit" alone: Prefix "slidelimit" keeps
	// reading keys written then.)
	Prefix string
	// Timeout bounds each decision (a context deadline; see NewGoRedis for
	// when go-redis honours it on the socket). Zero means DefaultTimeout;
	// negative means none beyond the caller's context. A deadline of the
	// caller's that comes first is kept. Calls whose context can never be
	// cancelled (context.Background, a context of values) share one
	// deadline per 128th of the timeout, so such a call may run up to a
	// 128th of the timeout longer; a cancellable context gets a deadline
	// of its own.
	Timeout time.Duration
	// OnError is the failure policy.
	OnError Policy
	// Fallback is the in-process rules per key for FallBack; required then,
	// ignored otherwise. They are exact sliding logs (package multi).
	Fallback []Rule
	// FallbackMaxKeys bounds the keys the fallback holds (package keyed's
	// MaxKeys); zero means keyed's default (a million). Each key is an
	// exact log of the Fallback rules, about 8 bytes per unit of their
	// largest limit: at a limit of 1000 the default bound is about 8 GB,
	// so set it. The limiter starts no goroutine: idle keys leave the
	// fallback when a new key finds it full, or when SweepFallback is
	// called, which gives their memory back after an outage.
	FallbackMaxKeys int
	// MinTTL is the least time a key lives after its last admission. By
	// default a key expires once it carries no information on the
	// server's clock: at least its longest window after the admission
	// and at most twice that (NewLog), or until the end of the window
	// after the current one (NewWindow), or until its newest sub-window
	// has left every rule, and on the server's clock at most one longest
	// window more (NewBuckets). A key lives at least MinTTL after each
	// admission; when MinTTL is the longer, on the server's clock it lives
	// at most twice MinTTL, so that its expiry is not set on every
	// admission. Instants given by the caller that advance more slowly
	// than the server's clock (a replay, a test, a loaded machine
	// replaying a log) need a longer TTL, or the key may expire while it
	// still counts; set MinTTL above the real time such a caller takes to
	// cover the longest window.
	MinTTL time.Duration
}

// Decision is the answer to one call.
type Decision struct {
	// Allowed reports whether the cost was admitted.
	Allowed bool
	// At is the instant decided at, in microseconds: the caller's instant,
	// the server's clock, or, when that was older, the newest stamp for the
	// exact log and the latest admission for NewBuckets.
	At time.Time
	// ReadyAt is the earliest instant at which the cost would be admitted
	// if nothing else were admitted meanwhile: At when it was admitted, the
	// zero Time when it never can be (n above a limit), and under FallBack
	// also when the fallback had no room for the key (Err then wraps
	// keyed.ErrFull: room may come, but no instant can be named).
	ReadyAt time.Time
	// Remaining is, per rule in the order of Rules, the largest cost that
	// would be admitted at At after this decision. Under the fallback every
	// entry is the fallback's, at most the Redis rule's limit (nil when the
	// cost is above a Redis limit and never consulted the fallback); under
	// FailOpen and FailClosed it is nil.
	//
	Remaining []int
	// Source says who decided.
	Source Source
	// Err is the Redis error a FailOpen or FallBack decision stood in for.
	// A FallBack refusal of a key its in-process store had no room for
	// also wraps keyed.ErrFull (ReadyAt is then zero: no instant can be
	// named, but the store may have room later).
	Err error
}

// fallbackStore is the part of package keyed the fallback uses.
type fallbackStore interface {
	Decide(key string, now time.Time, n int) (bool, error)
	AllowN(key string, now time.Time, n int) bool
	ReadyAt(key string, now time.Time, n int) (time.Time, bool)
	TokensAt(key string, now time.Time) int
	Sweep(now time.Time) int
	Len() int
}

// Limiter limits keys with rules kept in Redis: each decision is one script
// call, one round trip, on one key. It is safe for concurrent use by multiple
// goroutines and holds no lock while it waits for Redis; it starts no
// goroutine.
//
// All rules are checked at once and all or nothing: a call is admitted only
// if every rule admits it, and a refused call writes nothing to Redis.
type Limiter struct {
	c       Client
	s       script
	kind    string // "log", "win" or "bkt", in the key
	exact   bool
	rules   []Rule
	args    []any      // the script arguments of one key: its TTL (log: ttl ms; others: least TTL µs), then limit, window µs (buckets: limit, precision µs, buckets) per rule; a call on several keys adds the number of rules after the TTL
	maxLim  int        // the largest limit of the rules
	minLim  int        // the smallest: a larger cost never fits
	keyBase string     // every Redis key starts with it: "prefix:kind:" (or "slidelimit:kind:rules:")
	timeout *deadlines // nil: no timeout
	minTTL  int64      // µs
	policy  Policy
	fb      fallbackStore
	fbMin   int // the smallest limit of the fallback's rules
}

// NewLog returns an exact sliding-log limiter: for each rule, at most Limit
// units of cost are admitted in every window (t-Window, t] of the instants
// decided at, and for calls in time order every decision equals the naive
// sliding log's. Each key is one Redis string of 22+6*L bytes (24+6*L above
// 8 KiB), at most 8*L+100 bytes in Redis, L the largest limit; a decision
// reads O(rules * log L) 6-byte slots of it and writes only the stamps it
// adds. Limits are in [1, MaxLogLimit], windows at most MaxLogWindow.
func NewLog(c Client, opts Options, rules ...Rule) (*Limiter, error) {
	return newLimiter(c, opts, rules, kindLog)
}

// NewWindow returns a two-counter window limiter: each rule decides as
// package window does, admitting n at t iff prev*(W-elapsed) + (curr+n)*W <=
// limit*W computed exactly. It can let up to 2*limit-1 through in some window
// of a rule's length (docs/window.md). Each key is one Redis string of 24
// bytes per rule plus 8, whatever the limits. Limits are in [1,
// MaxWindowLimit].
func NewWindow(c Client, opts Options, rules ...Rule) (*Limiter, error) {
	return newLimiter(c, opts, rules, kindWindow)
}

// NewBuckets returns a limiter that keeps each rule as ceil(Window/Precision)
// counters of Precision each, aligned on multiples of Precision from the
// Unix epoch: n is admitted at t iff the cost counted in t's sub-window and
// the ones before it, ceil(Window/Precision) in all, plus n is at most Limit.
// A rule whose Precision is its Window is a fixed window. A stale instant
// (before the latest admission) is decided at the latest admission.
//
// It can admit more than Limit in some window of a rule's length, by at most
// the cost admitted in one sub-window (so at most 2*Limit, for a fixed
// window), and it can refuse a call the exact log would admit when Window is
// not a multiple of Precision (docs/redis.md). Memory per key does not grow
// with the limit: 16 bytes per counter plus 16, whatever the limits, so a limit
// of a million per hour costs a few hundred bytes. Limits are in [1,
// MaxWindowLimit].
func NewBuckets(c Client, opts Options, rules ...Rule) (*Limiter, error) {
	return newLimiter(c, opts, rules, kindBuckets)
}

// kind is which script a Limiter runs.
type kind uint8

const (
	kindLog kind = iota
	kindWindow
	kindBuckets
)

func newLimiter(c Client, opts Options, rules []Rule, k kind) (*Limiter, error) {
	if c == nil {
		return nil, errors.New("redis: client must not be nil")
	}
	exact := k == kindLog
	maxLim := MaxWindowLimit
	if exact {
		maxLim = MaxLogLimit
	}
	maxWin := MaxWindow
	if exact {
		maxWin = MaxLogWindow
	}
	if err := validateRules("", rules, maxLim, maxWin, k == kindBuckets); err != nil {
		return nil, err
	}
	if opts.MinTTL < 0 || opts.MinTTL > MaxWindow {
		return nil, fmt.Errorf("redis: MinTTL must be between 0 and %v, got %v", MaxWindow, opts.MinTTL)
	}
	if strings.ContainsAny(opts.Prefix, "{}=") {
		// Braces would end a key's hash tag; "=" could make one limit's
		// key another's ("p:win:=u" + ":log:{t}" is "p" + ":win:" +
		// "=u:log:{t}", the form of a user key with a tag of its own).
		return nil, fmt.Errorf("redis: prefix must not contain braces or '=', got %q", opts.Prefix)
	}
	if opts.OnError > FallBack {
		return nil, fmt.Errorf("redis: OnError must be FailClosed, FailOpen or FallBack, got %d", opts.OnError)
	}
	l := &Limiter{
		c: c, exact: exact, rules: append([]Rule(nil), rules...),
		policy: opts.OnError,
		minTTL: opts.MinTTL.Microseconds(),
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	l.timeout = newDeadlines(timeout)
	var maxW time.Duration
	l.minLim = math.MaxInt
	for _, r := range rules {
		l.maxLim = max(l.maxLim, r.Limit)
		l.minLim = min(l.minLim, r.Limit)
		maxW = max(maxW, r.Window)
	}
	// The block of script arguments for one key (see the scripts).
	switch k {
	case kindLog:
		l.s, l.kind = logScript, "log"
		ttl := max(maxW, opts.MinTTL)
		ttlMS := int64((ttl+time.Millisecond-1)/time.Millisecond) + 1
		l.args = append(l.args, ttlMS)
	case kindWindow:
		l.s, l.kind = windowScript, "win"
		l.args = append(l.args, l.minTTL)
	default:
		l.s, l.kind = bucketScript, "bkt"
		l.args = append(l.args, l.minTTL)
	}
	for _, r := range rules {
		if k == kindBuckets {
			l.args = append(l.args, r.Limit, int64(r.Precision/time.Microsecond), int64(buckets(r)))
		} else {
			l.args = append(l.args, r.Limit, int64(r.Window/time.Microsecond))
		}
	}
	if opts.Prefix != "" {
		l.keyBase = opts.Prefix + ":" + l.kind + ":"
	} else {
		l.keyBase = DefaultPrefix + ":" + l.kind + ":" + rulesTag(l.args[1:]) + ":"
	}
	if opts.OnError == FallBack {
		if err := validateRules("fallback ", opts.Fallback, multi.MaxLimit, MaxWindow, false); err != nil {
			return nil, err
		}
		fr := make([]multi.Rule, len(opts.Fallback))
		l.fbMin = math.MaxInt
		for i, r := range opts.Fallback {
			fr[i] = multi.Rule{Limit: r.Limit, Window: r.Window}
			l.fbMin = min(l.fbMin, r.Limit)
		}
		var ko []keyed.Option
		if opts.FallbackMaxKeys != 0 {
			ko = append(ko, keyed.MaxKeys(opts.FallbackMaxKeys))
		}
		fb, err := keyed.New[string](func() (*multi.Limiter, error) { return multi.New(fr...) }, ko...)
		if err != nil {
			return nil, fmt.Errorf("redis: fallback: %w", err)
		}
		l.fb = fb
	}
	return l, nil
}

// buckets is the number of sub-window counters of a NewBuckets rule.
func buckets(r Rule) time.Duration { return (r.Window + r.Precision - 1) / r.Precision }

func validateRules(what string, rules []Rule, maxLimit int, maxWindow time.Duration, precision bool) error {
	if len(rules) == 0 || len(rules) > MaxRules {
		return fmt.Errorf("redis: %srules: between 1 and %d rules are required, got %d", what, MaxRules, len(rules))
	}
	for i, r := range rules {
		if r.Limit < 1 || r.Limit > maxLimit {
			return fmt.Errorf("redis: %srule %d: limit must be between 1 and %d, got %d", what, i, maxLimit, r.Limit)
		}
		if r.Window < time.Microsecond || r.Window > maxWindow || r.Window%time.Microsecond != 0 {
			return fmt.Errorf("redis: %srule %d: window must be a whole number of microseconds between 1µs and %v, got %v",
				what, i, maxWindow, r.Window)
		}
		if !precision {
			if r.Precision != 0 {
				return fmt.Errorf("redis: %srule %d: precision is for NewBuckets only and must be 0 here, got %v", what, i, r.Precision)
			}
			continue
		}
		if r.Precision < time.Microsecond || r.Precision > r.Window || r.Precision%time.Microsecond != 0 {
			return fmt.Errorf("redis: %srule %d: precision must be a whole number of microseconds between 1µs and the window %v, got %v",
				what, i, r.Window, r.Precision)
		}
		if k := buckets(r); k > MaxBuckets {
			return fmt.Errorf("redis: %srule %d: precision %v splits the window %v into %d counters, more than %d",
				what, i, r.Precision, r.Window, k, MaxBuckets)
		}
	}
	return nil
}

// Rules returns the rules, in the order given to the constructor.
func (l *Limiter) Rules() []Rule { return append([]Rule(nil), l.rules...) }

// Load loads the limiter's script on every node (every master of a cluster).
// It is optional: a decision that finds the script missing sends its source.
func (l *Limiter) Load(ctx context.Context) error {
	if err := l.c.Load(ctx, l.s.src); err != nil {
		return fmt.Errorf("redis: loading the %s script: %w", l.kind, err)
	}
	return nil
}

// SweepFallback removes from the in-process fallback (FallBack) every key
// that carries no information at now, exactly as package keyed's Sweep does,
// and returns how many it removed (0 for a limiter without a fallback). A
// key goes only once its fallback limiter is idle, so no decision at or
// after now changes; and, as keyed's Sweep, it records now as the earliest
// instant later fallback decisions are made at, so a caller whose instants
// lag it (a simulated clock, or instants of its own mixed with the server's
// clock's time.Now) has them decided at now.
//
// The fallback holds the keys of an outage until a new key finds it full or
// this is called: call it once Redis is back (or on a ticker of your own) to
// give their memory back. Pass an instant on the clock the fallback decided
// on: the caller's instants, or time.Now() for decisions on the server's
// clock (the fallback decides those at time.Now()). It visits every key, so
// it costs in proportion to FallbackLen.
func (l *Limiter) SweepFallback(now time.Time) int {
	if l.fb == nil {
		return 0
	}
	return l.fb.Sweep(now)
}

// FallbackLen returns how many keys the in-process fallback holds (0 for a
// limiter without one): nonzero after an outage until they are swept.
func (l *Limiter) FallbackLen() int {
	if l.fb == nil {
		return 0
	}
	return l.fb.Len()
}

// Allow is shorthand for AllowN(ctx, key, time.Time{}, 1): one unit at the
// server's clock.
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	return l.AllowN(ctx, key, time.Time{}, 1)
}

// AllowN decides whether n units of cost are admitted for key at instant now,
// and if so records them; the zero now means the Redis server's clock (TIME),
// so that clients with skewed clocks share one clock. Instants are truncated
// to microseconds and must lie after the Unix epoch and before 2112.
//
// n == 0 is admitted and records nothing; n above a rule's limit is refused
// (ReadyAt is zero); n < 0 is an error. A bad key, instant or n is an error
// that names it, and nothing is sent to Redis.
//
// When Redis fails or does not answer within the timeout, the policy decides:
// FailClosed returns a refusal and the error; FailOpen and FallBack return a
// decision whose Err is the error, and a nil error. A call whose context has
// already ended returns ctx.Err() under every policy, and so does one whose
// context is cancelled while it waits for Redis; one whose context's
// deadline passes while it waits is a timeout, answered by the policy. A
// call that timed out may still have been applied by the server
// (docs/redis.md).
func (l *Limiter) AllowN(ctx context.Context, key string, now time.Time, n int) (Decision, error) {
	return l.decide(ctx, key, now, n, false)
}

// CheckN returns the Decision AllowN(ctx, key, now, n) would return if
// nothing else happened meanwhile, and records nothing: one script call that
// writes nothing. Remaining is the state before the call. Errors and the
// failure policy are AllowN's; under FallBack the fallback is asked the same
// question, and under FailOpen the answer is an admission (a refusal for a
// cost above a rule's limit). For a key absent from a full fallback store
// the fallback cannot know without deciding (a decision sweeps idle keys),
// and answers as for a new key.
func (l *Limiter) CheckN(ctx context.Context, key string, now time.Time, n int) (Decision, error) {
	return l.decide(ctx, key, now, n, true)
}

// TokensAt returns the largest cost AllowN(ctx, key, now, n) would admit,
// recording nothing: the smallest of CheckN's Remaining, in one script call.
// The zero now is the server's clock. Errors and the failure policy are
// CheckN's: under FallBack the fallback answers, and under FailOpen, where
// every call is admitted, the answer is the smallest limit.
func (l *Limiter) TokensAt(ctx context.Context, key string, now time.Time) (int, error) {
	d, err := l.CheckN(ctx, key, now, 0)
	if err != nil {
		return 0, err
	}
	return tokensOf(d, l), nil
}

// ReadyAt returns the earliest instant, not before now, at which AllowN would
// admit n for key if nothing else were admitted meanwhile (what a 429's
// Retry-After needs), recording nothing: CheckN's answer, in one script call.
// It is now itself when n fits now (for the zero now, the server's instant
// the check was made at), and ok is false when n can never be admitted (n
// above a limit). Errors and the failure policy are CheckN's (n < 0 is an
// error).
func (l *Limiter) ReadyAt(ctx context.Context, key string, now time.Time, n int) (at time.Time, ok bool, err error) {
	d, err := l.CheckN(ctx, key, now, n)
	if err != nil {
		return time.Time{}, false, err
	}
	at, ok = readyOf(d, now)
	return at, ok, nil
}

// tokensOf is TokensAt's answer from d, a check of cost 0 on keys of the
// limiters ls: the smallest Remaining, or, when d has none (FailOpen admits
// without asking), the smallest limit of their rules.
func tokensOf(d Decision, ls ...*Limiter) int {
	if d.Remaining == nil {
		least := ls[0].rules[0].Limit
		for _, l := range ls {
			for _, r := range l.rules {
				least = min(least, r.Limit)
			}
		}
		return least
	}
	least := d.Remaining[0]
	for _, r := range d.Remaining {
		least = min(least, r)
	}
	return least
}

// readyOf is ReadyAt's answer from d, a check at now: now when the cost fits
// (for the zero now, the server's instant of the check), d's ReadyAt when it
// does not, never when d names no instant.
func readyOf(d Decision, now time.Time) (time.Time, bool) {
	switch {
	case d.Allowed && !now.IsZero():
		return now, true
	case d.Allowed:
		return d.At, true
	case d.ReadyAt.IsZero():
		return time.Time{}, false
	}
	return d.ReadyAt, true
}

func (l *Limiter) decide(ctx context.Context, key string, now time.Time, n int, dry bool) (Decision, error) {
	return decide(ctx, []*Limiter{l}, []string{key}, now, n, dry)
}

// serverClock is the instant argument that asks a script for the server's
// clock (TIME), boxed once: a decision would otherwise allocate it.
var serverClock any = int64(-1)

// decide takes one decision on the keys, keys[i] under ls[i]: one script
// call. The limiters are of one kind, on one client; the first gives the
// timeout and the failure policy.
func decide(ctx context.Context, ls []*Limiter, keys []string, now time.Time, n int, dry bool) (Decision, error) {
	l := ls[0]
	rks := make([]string, len(keys))
	for i, key := range keys {
		rk, err := ls[i].redisKey(key)
		if err != nil {
			if len(keys) > 1 {
				return Decision{Source: FromError}, fmt.Errorf("%w (key %d)", err, i)
			}
			return Decision{Source: FromError}, err
		}
		rks[i] = rk
	}
	if err := sameTag(keys, rks); err != nil {
		return Decision{Source: FromError}, err
	}
	at := serverClock
	if !now.IsZero() {
		// Compared as instants: UnixMicro wraps round for years past
		// 294246, which would land a far instant inside the range.
		if now.Before(minInstant) || !now.Before(maxInstant) {
			return Decision{Source: FromError}, fmt.Errorf("redis: now must be after the Unix epoch and before 2112, got %v", now)
		}
		at = now.UnixMicro()
	}
	if n < 0 {
		return Decision{Source: FromError}, fmt.Errorf("redis: n must be at least 0, got %d", n)
	}
	if err := ctx.Err(); err != nil {
		return Decision{Source: FromError}, err
	}
	maxLim, minLim, nargs, nrules := 0, math.MaxInt, 2, 0
	for _, m := range ls {
		maxLim = max(maxLim, m.maxLim)
		minLim = min(minLim, m.minLim)
		nargs += len(m.args) + 1
		nrules += len(m.rules)
	}
	sent := min(n, maxLim+1) // every n above the largest limit is refused alike
	if dry {
		sent = -1 - sent
	}
	args := append(make([]any, 0, nargs), at, sent)
	if len(ls) == 1 {
		args = append(args, l.args...)
	} else {
		for _, m := range ls {
			args = append(args, m.args[0], len(m.rules))
			args = append(args, m.args[1:]...)
		}
	}
	caller := ctx
	ctx, cancel := l.timeout.bound(ctx)
	defer cancel()
	reply, err := l.run(ctx, rks, args)
	if err == nil {
		d, derr := l.decision(reply, nrules, now)
		if derr == nil {
			return d, nil
		}
		// A reply that is not the script's (a Client of the caller's
		// own, a proxy) is a failure of Redis like any other: the
		// policy answers, and the script may have run.
		err = derr
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && !errors.Is(err, context.DeadlineExceeded) {
		// go-redis sets the socket's deadline from the context's.
		err = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
	}
	if cerr := caller.Err(); errors.Is(cerr, context.Canceled) && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w (%w)", err, cerr)
	}
	if len(keys) == 1 {
		err = fmt.Errorf("redis: key %q: %w", keys[0], err)
	} else {
		err = fmt.Errorf("redis: keys %q: %w", keys, err)
	}
	if errors.Is(caller.Err(), context.Canceled) {
		// The caller gave up during the call: its error under every
		// policy, as for a context cancelled before it (a fail-open
		// admission or a fallback's would answer a caller that has left).
		return Decision{Source: FromError}, err
	}
	switch l.policy {
	case FailOpen:
		at := now
		if at.IsZero() {
			at = time.Now()
		}
		if n > minLim {
			// Never admitted, whatever Redis holds: refused, as Redis
			// would, with no instant at which it fits.
			return Decision{At: at, Source: FromFailOpen, Err: err}, nil
		}
		return Decision{Allowed: true, At: at, ReadyAt: at, Source: FromFailOpen, Err: err}, nil
	case FallBack:
		if n > minLim {
			// Never admitted, whatever Redis holds (as under FailOpen),
			// whatever limit the fallback has.
			at := now
			if at.IsZero() {
				at = time.Now()
			}
			return Decision{At: at, Source: FromFallback, Err: err}, nil
		}
		return fallback(ls, keys, now, n, dry, nrules, err), nil
	default:
		return Decision{Source: FromError}, err
	}
}

// run calls the script by digest, and by source when the server lost it.
// Neither call is retried after it may have run: NOSCRIPT means it did not.
func (l *Limiter) run(ctx context.Context, keys []string, args []any) ([]int64, error) {
	reply, err := l.c.EvalSHA(ctx, l.s.sha, keys, args)
	if err != nil && isNoScript(err) {
		reply, err = l.c.Eval(ctx, l.s.src, keys, args)
	}
	return reply, err
}

// decision reads the script's reply to a call at now (zero: the server's
// clock). Its instants are in now's location (time.Local for the server's
// clock), so that a caller who passes instants built by hand (whole
// microseconds) gets instants it can compare with its own using ==.
func (l *Limiter) decision(r []int64, nrules int, now time.Time) (Decision, error) {
	if len(r) != 3+nrules {
		return Decision{Source: FromError}, fmt.Errorf("the %s script answered %d values, want %d", l.kind, len(r), 3+nrules)
	}
	loc := time.Local
	if !now.IsZero() {
		loc = now.Location()
	}
	d := Decision{Allowed: r[0] == 1, At: time.UnixMicro(r[1]).In(loc), Source: FromRedis}
	if r[2] >= 0 {
		d.ReadyAt = time.UnixMicro(r[2]).In(loc)
	}
	d.Remaining = make([]int, nrules)
	for i := range d.Remaining {
		d.Remaining[i] = int(r[3+i])
	}
	return d, nil
}

// fallback decides with the in-process limiters of ls (each has one, the
// constructor of the group checked): the cost is admitted iff every key's
// fallback admits it at now. One key is decided by its fallback's Decide,
// which sweeps a full store's idle keys to make room for a new one. A group,
// or a dry call, first asks each key's fallback read-only, which cannot
// sweep: for a key absent from a full store it answers as for a new key (a
// guess; a group's records then sweep, or refuse), rather than refusing
// every new key once the store has filled. With several keys the check and
// the records are not one atomic step in process: a concurrent call can take
// a key's room between them, and then the keys recorded before stay
// recorded (the call is refused; the error is on the side of refusing). A
// refusal's ReadyAt is when every key's fallback would admit the cost, zero
// when one never would (the cost above its limit) or when a new key found
// the store full: then Err also wraps keyed.ErrFull, since room may come.
// Remaining never exceeds the Redis rule's limit. The caller has refused a
// cost above a Redis limit.
func fallback(ls []*Limiter, keys []string, now time.Time, n int, dry bool, nrules int, err error) Decision {
	if now.IsZero() {
		now = time.Now()
	}
	d := Decision{At: now, Source: FromFallback, Err: err, Allowed: true}
	var guessed uint32 // bit i: key i's check was a guess
	full := false      // a key could not be decided: absent from a full store
	if len(ls) == 1 && !dry {
		var ferr error
		d.Allowed, ferr = ls[0].fb.Decide(keys[0], now, n)
		full = errors.Is(ferr, keyed.ErrFull)
	} else {
		for i, m := range ls {
			at, ok := m.fb.ReadyAt(keys[i], now, n)
			if !ok && n <= m.fbMin {
				guessed |= 1 << i // absent from a full store
				continue
			}
			if !ok || at.After(now) {
				d.Allowed = false
				break
			}
		}
		if d.Allowed && !dry {
			for i, m := range ls {
				// Decide, not AllowN: it sweeps a full store for a new
				// key, and says when there was no room.
				if ok, ferr := m.fb.Decide(keys[i], now, n); !ok {
					d.Allowed = false // a concurrent call took the room, or the store is full
					full = errors.Is(ferr, keyed.ErrFull)
					break
				}
			}
		}
	}
	d.ReadyAt = now
	if !d.Allowed {
		d.ReadyAt = time.Time{}
	}
	if !d.Allowed && !full {
		absent := false
		for i, m := range ls {
			at, ok := m.fb.ReadyAt(keys[i], now, n)
			if !ok && n <= m.fbMin {
				// Absent from a full store (a guess above, or removed
				// since): it fits when the store has room, which no
				// instant names.
				absent = true
				continue
			}
			if !ok {
				d.ReadyAt = time.Time{}
				absent = false
				break
			}
			if !at.After(now) {
				// Refused at now, so not before the next instant.
				at = now.Add(time.Microsecond)
			}
			if at.After(d.ReadyAt) {
				d.ReadyAt = at
			}
		}
		full = absent && d.ReadyAt.IsZero()
	}
	if full {
		// Not "never": the store may have room later. ReadyAt stays
		// zero (no instant can be named) and Err says why.
		d.Err = fmt.Errorf("%w; fallback: %w", err, keyed.ErrFull)
	}
	d.Remaining = make([]int, 0, nrules)
	for i, m := range ls {
		rem := m.fb.TokensAt(keys[i], now)
		if guessed&(1<<i) != 0 && dry {
			rem = m.fbMin // as for a new key
		}
		for _, r := range m.rules {
			// Never more than the Redis rule's own limit, which is
			// what a client is told it is limited by.
			d.Remaining = append(d.Remaining, min(rem, r.Limit))
		}
	}
	return d
}

// rulesTag names a limiter's rules in its Redis keys when it has no Prefix:
// the first 4 bytes of the SHA-1 of the rules' script arguments, in hex.
// Two limits left on the default prefix with different rules ("5 per minute"
// for logins, "100 per minute" for the API) therefore keep different keys for
// one user key, where they would otherwise read each other's counts (or, for
// logs of different capacities, fail on each other's values); limiters with
// the same rules, in any process, share them. The TTL argument is left out:
// it changes no count. A Prefix of the user's names the limit instead, and
// costs no key bytes for the tag.
func rulesTag(ruleArgs []any) string {
	h := sha1.New()
	for _, a := range ruleArgs {
		fmt.Fprint(h, a, ",")
	}
	return hex.EncodeToString(h.Sum(nil)[:4])
}

// redisKey returns the Redis key for a user key: the prefix, the kind (then,
// without a Prefix, the rules' tag: rulesTag) and a hash tag, so that every
// Redis key of one decision maps to one cluster slot.
// A key without braces is its own tag ("{alice}"). A key with a hash tag of
// its own (a "{" followed later by a "}" with at least one byte between the
// first "{" and the next "}", as Redis Cluster reads tags) keeps it, after
// an "=" ("=alice{tenant}"), so that keys sharing a tag share a slot. Any
// other key with braces would end or split the tag, so its tag is a digest of
// it and the key follows ("{3f2a…}a{}"). The three forms never collide: only
// the second starts with "=", only the third has bytes after its tag.
func (l *Limiter) redisKey(key string) (string, error) {
	if key == "" {
		return "", errors.New("redis: key must not be empty")
	}
	if len(key) > MaxKeyLen {
		return "", fmt.Errorf("redis: key must be at most %d bytes, got %d", MaxKeyLen, len(key))
	}
	base := l.keyBase
	if !strings.ContainsAny(key, "{}") {
		return base + "{" + key + "}", nil
	}
	if _, ok := hashTag(key); ok {
		return base + "=" + key, nil
	}
	h := sha1.Sum([]byte(key))
	return base + "{" + hex.EncodeToString(h[:8]) + "}" + key, nil
}
