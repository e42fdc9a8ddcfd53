package httplimit

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// The wire names of draft-ietf-httpapi-ratelimit-headers-11, in one place:
// the draft may still rename them (a pull request proposes r->a and t->w).
// The field names are in canonical MIME form, as http.Header stores them.
const (
	fieldPolicy    = "Ratelimit-Policy" // RateLimit-Policy
	fieldRateLimit = "Ratelimit"        // RateLimit
	paramQuota     = "q"                // RateLimit-Policy: the limit, in units of cost
	paramWindow    = "w"                // RateLimit-Policy: the window, in whole seconds
	paramRemaining = "r"                // RateLimit: the remaining cost
	paramReset     = "t"                // RateLimit: seconds until the quota resets

	fieldRetryAfter = "Retry-After"

	legacyLimit     = "X-Ratelimit-Limit"
	legacyRemaining = "X-Ratelimit-Remaining"
	legacyReset     = "X-Ratelimit-Reset"
)

// Fields says when the middleware sends the RateLimit and RateLimit-Policy
// fields.
type Fields uint8

const (
	// FieldsAlways sends them on every response the middleware decided
	// (admitted or refused). It is the default.
	FieldsAlways Fields = iota
	// FieldsOnRefusal sends them only on refusals.
	FieldsOnRefusal
	// FieldsOff never sends them.
	FieldsOff
)

// LegacyReset chooses what the legacy X-RateLimit-Reset field carries, when
// the legacy fields are enabled with [Legacy].
type LegacyReset uint8

const (
	legacyOff LegacyReset = iota
	// ResetSeconds: the number of seconds until the quota resets (as the
	// draft's t parameter, and GitHub-style APIs that send a delta).
	ResetSeconds
	// ResetUnix: the instant the quota resets, in seconds since the Unix
	// epoch, rounded up.
	ResetUnix
)

// maxPolicyName bounds a policy name's length, so the fields stay small.
const maxPolicyName = 64

// validName reports whether s can be sent as an RFC 9651 String without
// escapes: printable ASCII other than '"' and '\'.
func validName(s string) bool {
	if s == "" || len(s) > maxPolicyName {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// defaultNames names rule i "<limit>-per-<window>", adding "-<i>" to a name
// already taken.
func defaultNames(rules []Rule) []string {
	names := make([]string, len(rules))
	seen := map[string]bool{}
	for i, r := range rules {
		n := strconv.Itoa(r.Limit) + "-per-" + shortDuration(r.Window)
		if seen[n] {
			n += "-" + strconv.Itoa(i)
		}
		seen[n] = true
		names[i] = n
	}
	return names
}

// shortDuration writes d as Duration.String does, without zero trailing
// units (1h, 90m, 1s, 250ms), and with "us" for microseconds: a field value
// is ASCII, and Duration.String writes "µs".
func shortDuration(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	return strings.ReplaceAll(d.String(), "µ", "u")
}

// seconds rounds d up to whole seconds, never below 0; it saturates.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// policyValue is the RateLimit-Policy field value: one item per rule,
// `"name";q=<limit>;w=<window>`, w rounded up to whole seconds and at least
// 1 (the draft's w is an integer number of seconds; rounding up announces a
// policy that a client can follow without ever being refused).
func policyValue(names []string, rules []Rule) string {
	var b []byte
	for i, r := range rules {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendName(b, names[i])
		b = append(b, ";"+paramQuota+"="...)
		b = strconv.AppendInt(b, int64(r.Limit), 10)
		b = append(b, ";"+paramWindow+"="...)
		b = strconv.AppendInt(b, max(seconds(r.Window), 1), 10)
	}
	return string(b)
}

// rateLimitItems are the constant starts of the RateLimit value's items, one
// per rule: `"name";r=`, after ", " from the second item on.
func rateLimitItems(names []string) []string {
	items := make([]string, len(names))
	for i, n := range names {
		var b []byte
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendName(b, n)
		items[i] = string(append(b, ";"+paramRemaining+"="...))
	}
	return items
}

// appendRateLimit appends the RateLimit field value for d: one item per rule,
// `"name";r=<remaining>;t=<seconds until reset>`, whose starts are items.
func appendRateLimit(b []byte, items []string, d *Decision) []byte {
	for i := range d.NumQuota {
		q := &d.Quota[i]
		b = append(b, items[i]...)
		b = strconv.AppendInt(b, int64(max(q.Remaining, 0)), 10)
		b = append(b, ";"+paramReset+"="...)
		b = strconv.AppendInt(b, seconds(q.Reset), 10)
	}
	return b
}

func appendName(b []byte, name string) []byte {
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"')
}

// tightest is the index of the rule the legacy fields describe: the one with
// the least remaining, ties broken by the latest reset.
func tightest(d *Decision) int {
	best := 0
	for i := 1; i < d.NumQuota; i++ {
		q, b := &d.Quota[i], &d.Quota[best]
		if q.Remaining < b.Remaining || (q.Remaining == b.Remaining && q.Reset > b.Reset) {
			best = i
		}
	}
	return best
}

// intCache holds shared one-element header values for the integers below
// intCacheN (4.5 hours of seconds), each made on first use, so that a
// Retry-After or a legacy field value allocates nothing after its first
// use. Each slice has capacity 1: Header.Add copies it instead of writing
// into the shared array. Two goroutines making the same value at once store
// equal slices, either of which is correct.
// Larger values (an epoch second, a Retry-After of days, a limit or a
// remaining count in the tens of thousands) go to bigCache, a small table
// indexed by the value's low bits that keeps the last value seen in each
// entry: a value that repeats (the current epoch second, a rule's limit)
// allocates once, not on every response.
const (
	intCacheN = 1 << 14
	bigCacheN = 1 << 10
)

var (
	intCache [intCacheN]atomic.Pointer[[]string]
	bigCache [bigCacheN]atomic.Pointer[bigValue]
)

// bigValue is a bigCache entry: v and its header value, whose slice is
// s[:1:1] (one allocation for both, besides the string).
type bigValue struct {
	v int64
	s [1]string
}

func intValue(v int64) []string {
	if v < 0 {
		return []string{strconv.FormatInt(v, 10)}
	}
	if v >= intCacheN {
		e := &bigCache[v&(bigCacheN-1)]
		if p := e.Load(); p != nil && p.v == v {
			return p.s[:1:1]
		}
		p := &bigValue{v: v, s: [1]string{strconv.FormatInt(v, 10)}}
		e.Store(p)
		return p.s[:1:1]
	}
	if p := intCache[v].Load(); p != nil {
		return *p
	}
	s := []string{strconv.FormatInt(v, 10)}[:1:1]
	intCache[v].Store(&s)
	return s
}

// headerValue returns b as a one-element header value, allocating the
// slice and the string's bytes together (one allocation instead of two) when
// b is short. The string is made with unsafe.String over bytes that are
// written once, before it exists, and never again: the object is new on
// every call and nothing else refers to its bytes. The slice has capacity
// 1, so Header.Add copies it instead of writing next to it.
func headerValue(b []byte) []string {
	// Each size, with the 16-byte string header, fills a size class of the
	// allocator (48, 64 and 128 bytes): a RateLimit value of one rule fits
	// one of the first two, one of two rules usually the third.
	switch {
	case len(b) == 0:
		return []string{""}
	case len(b) <= 32:
		f := new(struct {
			v [1]string
			b [32]byte
		})
		return fillValue(&f.v, f.b[:], b)
	case len(b) <= 48:
		f := new(struct {
			v [1]string
			b [48]byte
		})
		return fillValue(&f.v, f.b[:], b)
	case len(b) <= 112:
		f := new(struct {
			v [1]string
			b [112]byte
		})
		return fillValue(&f.v, f.b[:], b)
	}
	return []string{string(b)}
}

// fillValue copies b into buf, the bytes allocated with v, and makes v's
// string of them.
func fillValue(v *[1]string, buf, b []byte) []string {
	n := copy(buf, b)
	v[0] = unsafe.String(&buf[0], n)
	return v[:]
}

// valueCache remembers the RateLimit values of one-rule decisions it made,
// so that a response whose remaining count and reset repeat an earlier one's
// (the common case: both take few values per key over a window) shares that
// response's value and allocates nothing. It is a direct-mapped table indexed
// by a hash of the pair; a pair that misses replaces the entry in its place,
// so the table never holds more than valueCacheN values. The values shared
// are slices of capacity 1, as intCache's: Header.Add copies them instead of
// writing into the shared array.
type valueCache struct {
	slots [valueCacheN]atomic.Pointer[cachedValue]
	// many remembers the values of decisions of several rules alike, by
	// every rule's pair; made on the first such decision.
	many atomic.Pointer[rulesCache]
}

// valueCacheN is the number of entries of a valueCache: 4 KiB of pointers per
// Middleware.
const (
	valueCacheBits = 9
	valueCacheN    = 1 << valueCacheBits
)

// cachedValue is one RateLimit value and the pair it was made for, in one
// allocation with the value's bytes: 80 bytes on 64-bit platforms, a size
// class of the allocator, so a value of up to 48 bytes (a policy name of up
// to about 25 characters) is cached.
type cachedValue struct {
	rem   int
	reset int64
	v     [1]string
	b     [48]byte
}

// value returns the one-element RateLimit value `<item><rem>;t=<reset>` of
// a one-rule policy, item being its constant start `"name";r=`.
func (c *valueCache) value(item string, rem int, reset int64) []string {
	h := (uint64(rem)*0x9e3779b97f4a7c15 ^ uint64(reset)*0xc2b2ae3d27d4eb4f) >> (64 - valueCacheBits)
	slot := &c.slots[h]
	if e := slot.Load(); e != nil && e.rem == rem && e.reset == reset {
		return e.v[:]
	}
	var buf [256]byte
	b := append(buf[:0], item...)
	b = strconv.AppendInt(b, int64(rem), 10)
	b = append(b, ";"+paramReset+"="...)
	b = strconv.AppendInt(b, reset, 10)
	if len(b) > len(cachedValue{}.b) {
		return headerValue(b) // a long policy name: not cached
	}
	e := &cachedValue{rem: rem, reset: reset}
	fillValue(&e.v, e.b[:], b)
	slot.Store(e)
	return e.v[:]
}

// rulesCache is valueCache's table for the RateLimit values of decisions of
// several rules, keyed by every rule's (remaining, reset) pair: so that a
// flood of refusals, whose pairs repeat, allocates nothing with several
// rules either. It has fewer entries, each larger.
type rulesCache struct {
	slots [rulesCacheN]atomic.Pointer[cachedRules]
}

// rulesCacheN is the number of entries of a rulesCache: 2 KiB of pointers,
// and at most 96 KiB of entries, per Middleware with several rules.
const (
	rulesCacheBits = 8
	rulesCacheN    = 1 << rulesCacheBits
)

// cachedRules is one RateLimit value of several items and the pairs it was
// made for, in one allocation with the value's bytes: 384 bytes on 64-bit
// platforms, a size class of the allocator.
type cachedRules struct {
	n     int
	pairs [MaxRules][2]int64
	v     [1]string
	b     [232]byte
}

// rules returns the RateLimit value of d, a decision of several rules
// (items holds each item's constant start `"name";r=`).
func (c *valueCache) rules(items []string, d *Decision) []string {
	var pairs [MaxRules][2]int64
	n := min(d.NumQuota, MaxRules)
	h := uint64(n)
	for i := range n {
		pairs[i] = [2]int64{int64(max(d.Quota[i].Remaining, 0)), seconds(d.Quota[i].Reset)}
		h = (h^uint64(pairs[i][0]))*0x9e3779b97f4a7c15 ^ uint64(pairs[i][1])*0xc2b2ae3d27d4eb4f
	}
	t := c.many.Load()
	if t == nil {
		c.many.CompareAndSwap(nil, new(rulesCache))
		t = c.many.Load()
	}
	slot := &t.slots[h>>(64-rulesCacheBits)]
	if e := slot.Load(); e != nil && e.n == n && e.pairs == pairs {
		return e.v[:]
	}
	var buf [512]byte
	b := appendRateLimit(buf[:0], items, d)
	if len(b) > len(cachedRules{}.b) {
		return headerValue(b) // long policy names: not cached
	}
	e := &cachedRules{n: n, pairs: pairs}
	fillValue(&e.v, e.b[:], b)
	slot.Store(e)
	return e.v[:]
}

// setFields writes the RateLimit fields (and the legacy ones if enabled)
// for decision d taken at now.
func (m *Middleware) setFields(h http.Header, d *Decision, now time.Time) {
	if d.NumQuota == 0 {
		return
	}
	h[fieldPolicy] = m.policy
	if d.NumQuota == 1 {
		h[fieldRateLimit] = m.values.value(m.items[0], max(d.Quota[0].Remaining, 0), seconds(d.Quota[0].Reset))
	} else {
		h[fieldRateLimit] = m.values.rules(m.items, d)
	}
	if m.legacy == legacyOff {
		return
	}
	i := tightest(d)
	q := &d.Quota[i]
	h[legacyLimit] = intValue(int64(m.rules[i].Limit))
	h[legacyRemaining] = intValue(int64(max(q.Remaining, 0)))
	switch m.legacy {
	case ResetSeconds:
		h[legacyReset] = intValue(seconds(q.Reset))
	case ResetUnix:
		h[legacyReset] = intValue(unixCeil(now.Add(q.Reset)))
	}
}

// unixCeil is t in whole seconds since the Unix epoch, rounded up.
func unixCeil(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() != 0 {
		s++
	}
	return s
}

// checkNames validates user-given policy names against the rules.
func checkNames(names []string, rules []Rule) error {
	if len(names) != len(rules) {
		return fmt.Errorf("httplimit: PolicyNames: got %d names, want one per rule (%d)", len(names), len(rules))
	}
	seen := map[string]bool{}
	for i, n := range names {
		if !validName(n) {
			return fmt.Errorf("httplimit: PolicyNames: name %d (%q) must be 1 to %d printable ASCII characters other than '\"' and '\\'", i, n, maxPolicyName)
		}
		if seen[n] {
			return fmt.Errorf("httplimit: PolicyNames: name %q is given twice", n)
		}
		seen[n] = true
	}
	return nil
}

var errNoRules = errors.New("httplimit: limiter has no rules (a nil limiter given to an adapter?)")
