package redis

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// MaxGroup is the most limiters, and so keys, of one Group.
const MaxGroup = 8

// Group decides several keys at once, each under its own limiter (a user's
// key under a per-user limiter, the client's address under a per-address
// one, a global key under a global one): one script call, one round trip,
// all or nothing. A call is admitted only if every rule of every key admits
// it, and then it is recorded on every key; a refused call writes nothing to
// any key.
//
// The keys of one call must share one hash tag, since one script can only
// reach keys that live together: on Redis Cluster, keys of one hash slot; on
// go-redis's Ring, keys of one tag (the Ring places a key by hashing its tag,
// so two tags of one cluster slot can lie on two servers). A key that
// contains "{tag}" is placed by its tag alone (Redis Cluster's rule), so
// "{tenant-7}user:42", "{tenant-7}ip:10.0.0.1" and "{tenant-7}all" can be
// decided together. Keys of different tags are refused with an error before
// anything is sent, on a single server as on a cluster, so that a program
// that runs on one server runs unchanged on a cluster. A key without braces
// is its own tag: "alice" can be decided with "{alice}x", or with "alice"
// under another limiter, but not with "bob".
//
// A Group is safe for concurrent use by multiple goroutines, and so are its
// limiters, which can still decide one key at a time: a key decided alone
// and in a group is one state in Redis.
type Group struct {
	ls     []*Limiter
	nrules int
}

// NewGroup returns a Group of the limiters, in order: the i-th key of a call
// is decided under the i-th limiter. The limiters must be of one kind (all
// NewLog, all NewWindow or all NewBuckets) and share one Client; the first
// one's timeout and failure policy apply to the whole call. Under FallBack,
// every limiter must have a fallback.
func NewGroup(limiters ...*Limiter) (*Group, error) {
	if len(limiters) == 0 || len(limiters) > MaxGroup {
		return nil, fmt.Errorf("redis: NewGroup: between 1 and %d limiters are required, got %d", MaxGroup, len(limiters))
	}
	g := &Group{ls: append([]*Limiter(nil), limiters...)}
	first := limiters[0]
	for i, l := range limiters {
		if l == nil {
			return nil, fmt.Errorf("redis: NewGroup: limiter %d is nil", i)
		}
		if l.kind != first.kind {
			return nil, fmt.Errorf("redis: NewGroup: limiter %d keeps a %s, limiter 0 a %s: a group takes limiters of one kind",
				i, kindName(l.kind), kindName(first.kind))
		}
		if !sameClient(l.c, first.c) {
			return nil, fmt.Errorf("redis: NewGroup: limiter %d has another Client than limiter 0", i)
		}
		if first.policy == FallBack && l.fb == nil {
			return nil, fmt.Errorf("redis: NewGroup: limiter 0 falls back in process, limiter %d has no fallback", i)
		}
		g.nrules += len(l.rules)
	}
	return g, nil
}

func kindName(kind string) string {
	switch kind {
	case "log":
		return "log (NewLog)"
	case "win":
		return "window (NewWindow)"
	default:
		return "counters (NewBuckets)"
	}
}

// sameClient reports whether a and b are the same Client, without comparing
// values whose dynamic type is not comparable (which would panic).
func sameClient(a, b Client) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb {
		return false
	}
	if !ta.Comparable() {
		return true // cannot tell; the caller promised
	}
	return a == b
}

// Limiters returns the group's limiters, in order.
func (g *Group) Limiters() []*Limiter { return append([]*Limiter(nil), g.ls...) }

// AllowN decides whether n units of cost are admitted for every key at
// instant now, keys[i] under the i-th limiter, and if so records them on
// every key; the zero now means the Redis server's clock. It is one script
// call, all or nothing.
//
// The Decision's Remaining lists the rules of the first limiter, then of the
// second, and so on. ReadyAt is the earliest instant at which every key fits
// the cost (zero: never). For NewLog and NewBuckets every key is decided at
// one instant, At: now, or the latest admission on any of the keys when that
// is later (a stale instant never moves a key's state backwards); for
// NewWindow each rule clamps a stale instant to its own window, as a single
// key does.
//
// The edges are Limiter.AllowN's, plus: len(keys) must equal the number of
// limiters, the Redis keys must be distinct, and they must share one hash
// tag (see Group); otherwise it returns an error naming the keys and sends
// nothing.
func (g *Group) AllowN(ctx context.Context, keys []string, now time.Time, n int) (Decision, error) {
	return g.decide(ctx, keys, now, n, false)
}

// CheckN returns the Decision AllowN(ctx, keys, now, n) would return if
// nothing else happened meanwhile, and records nothing.
func (g *Group) CheckN(ctx context.Context, keys []string, now time.Time, n int) (Decision, error) {
	return g.decide(ctx, keys, now, n, true)
}

// TokensAt returns the largest cost AllowN(ctx, keys, now, n) would admit,
// recording nothing: the smallest of CheckN's Remaining over every key's
// rules, in one script call. Its edges, errors and failure policy are
// CheckN's, as for Limiter.TokensAt (under FailOpen, the smallest limit of
// the group).
func (g *Group) TokensAt(ctx context.Context, keys []string, now time.Time) (int, error) {
	d, err := g.CheckN(ctx, keys, now, 0)
	if err != nil {
		return 0, err
	}
	return tokensOf(d, g.ls...), nil
}

// ReadyAt returns the earliest instant, not before now, at which AllowN would
// admit n for every key if nothing else were admitted meanwhile, recording
// nothing: CheckN's answer, in one script call, as for Limiter.ReadyAt (ok
// false when n can never be admitted).
func (g *Group) ReadyAt(ctx context.Context, keys []string, now time.Time, n int) (at time.Time, ok bool, err error) {
	d, err := g.CheckN(ctx, keys, now, n)
	if err != nil {
		return time.Time{}, false, err
	}
	at, ok = readyOf(d, now)
	return at, ok, nil
}

func (g *Group) decide(ctx context.Context, keys []string, now time.Time, n int, dry bool) (Decision, error) {
	if len(keys) != len(g.ls) {
		return Decision{Source: FromError}, fmt.Errorf("redis: keys: the group has %d limiters, got %d keys", len(g.ls), len(keys))
	}
	return decide(ctx, g.ls, keys, now, n, dry)
}

// sameTag returns an error unless the Redis keys rks (for the user keys
// keys) are distinct and share one hash tag. Every Redis key has one
// (redisKey), and keys of one tag lie in one cluster slot and on one shard of
// a go-redis Ring; one slot alone would not do for the Ring.
func sameTag(keys, rks []string) error {
	if len(rks) < 2 {
		return nil
	}
	t0, _ := hashTag(rks[0])
	for i := 1; i < len(rks); i++ {
		for j := range i {
			if rks[i] == rks[j] {
				return fmt.Errorf("redis: keys %d and %d are one Redis key (%q): a group decides distinct keys", j, i, rks[i])
			}
		}
		if t, _ := hashTag(rks[i]); t != t0 {
			return fmt.Errorf("redis: keys %q and %q have different hash tags (%q and %q): "+
				"give the keys of a group one hash tag, as in \"{tenant-7}user:42\" and \"{tenant-7}ip:10.0.0.1\"", keys[0], keys[i], t0, t)
		}
	}
	return nil
}

// hashTag returns the hash tag Redis Cluster reads in key: the bytes between
// the first "{" and the next "}", when there is at least one.
func hashTag(key string) (string, bool) {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return "", false
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return "", false
	}
	return key[i+1 : i+1+j], true
}
