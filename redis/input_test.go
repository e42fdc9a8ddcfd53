package redis_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// TestNewErrors: bad configuration is refused with an error that names the
// argument.
func TestNewErrors(t *testing.T) {
	_, _, c := standalone(t)
	ok := redis.Rule{Limit: 10, Window: time.Second}
	for _, tc := range []struct {
		name  string
		exact bool
		c     redis.Client
		o     redis.Options
		rules []redis.Rule
		want  string
	}{
		{"nil client", true, nil, redis.Options{}, []redis.Rule{ok}, "redis: client must not be nil"},
		{"no rule", true, c, redis.Options{}, nil, "redis: rules: between 1 and 16 rules are required, got 0"},
		{"too many rules", false, c, redis.Options{}, make([]redis.Rule, 17), "got 17"},
		{"limit 0", true, c, redis.Options{}, []redis.Rule{{Limit: 0, Window: time.Second}}, "redis: rule 0: limit must be between 1 and 1048576, got 0"},
		{"log limit too big", true, c, redis.Options{}, []redis.Rule{ok, {Limit: redis.MaxLogLimit + 1, Window: time.Second}}, "redis: rule 1: limit must be between 1 and 1048576"},
		{"window limit too big", false, c, redis.Options{}, []redis.Rule{{Limit: redis.MaxWindowLimit + 1, Window: time.Second}}, "limit must be between 1 and 67108863"},
		{"window 0", true, c, redis.Options{}, []redis.Rule{{Limit: 1, Window: 0}}, "redis: rule 0: window must be a whole number of microseconds"},
		{"window 1ns", false, c, redis.Options{}, []redis.Rule{{Limit: 1, Window: time.Nanosecond}}, "got 1ns"},
		{"window 1.5µs", true, c, redis.Options{}, []redis.Rule{{Limit: 1, Window: 1500 * time.Nanosecond}}, "got 1.5µs"},
		{"window too long", true, c, redis.Options{}, []redis.Rule{{Limit: 1, Window: redis.MaxWindow + time.Microsecond}}, "window must be"},
		{"prefix with brace", true, c, redis.Options{Prefix: "a{b"}, []redis.Rule{ok}, `redis: prefix must not contain braces or '=', got "a{b"`},
		// "p:win:=u" + ":log:{t}" would be "p" + ":win:" + "=u:log:{t}".
		{"prefix with =", true, c, redis.Options{Prefix: "p:win:=u"}, []redis.Rule{ok}, `redis: prefix must not contain braces or '=', got "p:win:=u"`},
		{"negative MinTTL", false, c, redis.Options{MinTTL: -1}, []redis.Rule{ok}, "redis: MinTTL must be between 0 and"},
		{"bad policy", true, c, redis.Options{OnError: 7}, []redis.Rule{ok}, "redis: OnError must be FailClosed, FailOpen or FallBack, got 7"},
		{"fallback without rules", true, c, redis.Options{OnError: redis.FallBack}, []redis.Rule{ok}, "redis: fallback rules: between 1 and 16"},
		{"fallback bad rule", true, c, redis.Options{OnError: redis.FallBack, Fallback: []redis.Rule{{Limit: -1, Window: time.Second}}}, []redis.Rule{ok}, "redis: fallback rule 0: limit"},
	} {
		newf := redis.NewWindow
		if tc.exact {
			newf = redis.NewLog
		}
		l, err := newf(tc.c, tc.o, tc.rules...)
		require.Nil(t, l, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	_, err := redis.NewGoRedis(nil)
	require.ErrorContains(t, err, "redis: NewGoRedis: client must not be nil")
	// A client that would ignore a decision's deadline (go-redis's default)
	// is refused, whatever its kind.
	for _, gc := range []goredis.UniversalClient{
		goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"}),
		goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}),
		goredis.NewRing(&goredis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}}),
		goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1"}}),
	} {
		_, err := redis.NewGoRedis(gc)
		require.ErrorContains(t, err, "must be created with ContextTimeoutEnabled: true", "%T", gc)
		require.NoError(t, gc.Close())
	}
}

// TestBadInput: bad keys, instants and costs are errors that name them, and
// nothing is written; costs above a limit are refused and write nothing;
// cost 0 is admitted and writes nothing; keys with braces or any bytes are
// keys like any other.
func TestBadInput(t *testing.T) {
	s, _, c := standalone(t)
	dbsize := func() string {
		out, err := redistest.Do(s.Addr(), "DBSIZE")
		require.NoError(t, err)
		return out
	}
	now := at(epoch)
	for _, exact := range []bool{true, false} {
		mk := mustWindow
		if exact {
			mk = mustLog
		}
		l := mk(t, c, redis.Options{}, redis.Rule{Limit: 3, Window: time.Second}, redis.Rule{Limit: 5, Window: time.Minute})
		for _, tc := range []struct {
			key  string
			now  time.Time
			n    int
			want string
		}{
			{"", now, 1, "redis: key must not be empty"},
			{strings.Repeat("x", redis.MaxKeyLen+1), now, 1, "redis: key must be at most 1024 bytes, got 1025"},
			{"k", now, -1, "redis: n must be at least 0, got -1"},
			{"k", time.Unix(0, 0), 1, "redis: now must be after the Unix epoch and before 2112"},
			{"k", time.Unix(-5, 0), 1, "redis: now must be after"},
			{"k", time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), 1, "redis: now must be after"},
			// Past year 294246 UnixMicro wraps round: this one would read
			// as 448384 µs after the epoch.
			{"k", time.Unix(18446744073710, 0), 1, "redis: now must be after"},
		} {
			d, err := l.AllowN(t.Context(), tc.key, tc.now, tc.n)
			require.ErrorContains(t, err, tc.want)
			require.False(t, d.Allowed)
			require.Equal(t, redis.FromError, d.Source, "%q: an error decided by %v", tc.want, d.Source)
		}
		ended, cancel := context.WithCancel(t.Context())
		cancel()
		d, err := l.AllowN(ended, "k", now, 1)
		require.ErrorIs(t, err, context.Canceled)
		require.False(t, d.Allowed)
		require.Equal(t, redis.FromError, d.Source, "a context that had ended: decided by %v", d.Source)
		require.Equal(t, "0", dbsize(), "exact %v: a bad call wrote something", exact)

		for _, n := range []int{4, 6, math.MaxInt} {
			d, err := l.AllowN(t.Context(), "k", now, n)
			require.NoError(t, err)
			require.False(t, d.Allowed, "n %d", n)
			require.True(t, d.ReadyAt.IsZero(), "n %d can never fit", n)
			require.Equal(t, []int{3, 5}, d.Remaining)
		}
		d, err = l.AllowN(t.Context(), "k", now, 0)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		require.Equal(t, now, d.ReadyAt)
		require.Equal(t, "0", dbsize(), "exact %v: a refused or zero-cost call wrote something", exact)

		// Keys with braces: each is its own key, distinct from the key
		// inside its braces. Keys are bytes: a NUL, bytes that are not
		// UTF-8, a line break with a command after it are keys like any
		// other.
		keys := []string{"{k}", "k}", "{", "a{k}b", "k", "\x00", "k\x00", "\xff\xfe{\x00}", "ключ", "k\r\nFLUSHALL\r\n"}
		for _, k := range keys {
			d, err := l.AllowN(t.Context(), k, now, 3)
			require.NoError(t, err)
			require.True(t, d.Allowed, "key %q", k)
		}
		for _, k := range keys {
			d, err := l.AllowN(t.Context(), k, now, 1)
			require.NoError(t, err)
			require.False(t, d.Allowed, "key %q decided on its own state", k)
		}
		require.Equal(t, strconv.Itoa(len(keys)), dbsize())
		_, err = redistest.Do(s.Addr(), "FLUSHALL")
		require.NoError(t, err)
	}
}

// TestExpiry: a key expires once it carries no information. The log's key
// lives for at least its longest window after each admission (rounded up to a
// millisecond, plus one: ttl) and at most twice that: it is set to 2*ttl when
// created or found below ttl; the window's for the end of the rule's next
// window; a refused call does not extend it.
func TestExpiry(t *testing.T) {
	s, _, c := standalone(t)
	pttl := func(l *redis.Limiter, key string) int {
		rk, err := redis.RedisKey(l, key)
		require.NoError(t, err)
		out, err := redistest.Do(s.Addr(), "PTTL", rk)
		require.NoError(t, err)
		var v int
		_, _ = fmtSscan(out, &v)
		return v
	}
	rules := []redis.Rule{{Limit: 1, Window: 2 * time.Second}, {Limit: 5, Window: 10*time.Second + 500*time.Microsecond}}
	newf := func(f func(redis.Client, redis.Options, ...redis.Rule) (*redis.Limiter, error), o redis.Options, rules ...redis.Rule) *redis.Limiter {
		l, err := f(c, o, rules...) // not mustLog: its MinTTL would hide the defaults
		require.NoError(t, err)
		return l
	}
	lg := newf(redis.NewLog, redis.Options{}, rules...)
	d, err := lg.AllowN(t.Context(), "k", at(epoch), 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	got := pttl(lg, "k")
	require.InDelta(t, 20004, got, 50, "log key TTL")
	d, err = lg.AllowN(t.Context(), "k", at(epoch), 1)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	rk, err := redis.RedisKey(lg, "k")
	require.NoError(t, err)
	_, err = redistest.Do(s.Addr(), "PEXPIRE", rk, "12000")
	require.NoError(t, err)
	d, err = lg.AllowN(t.Context(), "k", at(epoch+2_000_000), 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.InDelta(t, 12000, pttl(lg, "k"), 50, "a TTL of at least ttl is left alone")
	_, err = redistest.Do(s.Addr(), "PEXPIRE", rk, "9000")
	require.NoError(t, err)
	d, err = lg.AllowN(t.Context(), "k", at(epoch+4_000_000), 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.InDelta(t, 20004, pttl(lg, "k"), 50, "a TTL below ttl is set to 2*ttl")

	w := newf(redis.NewWindow, redis.Options{}, rules...)
	d, err = w.AllowN(t.Context(), "k", at(epoch), 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	// The 10 s rule's window starts now; its state matters until 2 windows.
	require.InDelta(t, 20002, pttl(w, "k"), 50, "window key TTL")

	// On the server's clock the key really goes away.
	// MinTTL keeps a key longer.
	for i, f := range []func(redis.Client, redis.Options, ...redis.Rule) (*redis.Limiter, error){redis.NewLog, redis.NewWindow} {
		l := newf(f, redis.Options{Prefix: "min", MinTTL: time.Minute}, rules...)
		_, err := l.AllowN(t.Context(), "k", at(epoch), 1)
		require.NoError(t, err)
		require.InDelta(t, []int{120002, 60002}[i], pttl(l, "k"), 50, "TTL with MinTTL")
	}

	short := newf(redis.NewLog, redis.Options{Prefix: "short"}, redis.Rule{Limit: 1, Window: 5 * time.Millisecond})
	d, err = short.Allow(t.Context(), "s")
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Eventually(t, func() bool { return pttl(short, "s") == -2 }, 2*time.Second, 5*time.Millisecond, "the key never expired")
}

// TestRulesCopy: Rules returns the rules in the constructor's order, as a
// copy the caller may change.
func TestRulesCopy(t *testing.T) {
	_, _, c := standalone(t)
	rules := []redis.Rule{{Limit: 5, Window: time.Minute}, {Limit: 2, Window: time.Second}}
	l := mustWindow(t, c, redis.Options{}, rules...)
	got := l.Rules()
	require.Equal(t, rules, got)
	got[0].Limit = 99
	rules[1].Limit = 99
	require.Equal(t, []redis.Rule{{Limit: 5, Window: time.Minute}, {Limit: 2, Window: time.Second}}, l.Rules())
	d, err := l.AllowN(t.Context(), "k", at(epoch), 2)
	require.NoError(t, err)
	require.Equal(t, redis.FromRedis, d.Source)
	require.NoError(t, d.Err)
	require.Equal(t, []int{3, 0}, d.Remaining)
}

// TestForeignValue: a Redis key that holds something else than the
// limiter's state (another limiter's, of another size, a log in the previous
// layout, a log whose empty slot is gone, or another type) makes the decision
// an error naming the key; it is not overwritten, and a group that contains
// it writes to none of its keys.
func TestForeignValue(t *testing.T) {
	s, gc, c := standalone(t)
	lg := mustLog(t, c, redis.Options{Prefix: "fv"}, redis.Rule{Limit: 3, Window: time.Hour})
	win := mustWindow(t, c, redis.Options{Prefix: "fv"}, redis.Rule{Limit: 3, Window: time.Hour})
	bkt, err := redis.NewBuckets(c, testOptions(redis.Options{Prefix: "fv"}), redis.Rule{Limit: 3, Window: time.Hour, Precision: time.Minute})
	require.NoError(t, err)
	full := strings.Repeat("\xff", 16+6*4) // a log's size, no empty slot
	for _, tc := range []struct {
		l     *redis.Limiter
		value string
		want  string
	}{
		{lg, "short", "holds 5 bytes, not a log of capacity 3"},
		{lg, full, "holds a log without its empty slot"},
		// A log in the previous layout (an 8-byte header without exp) is
		// refused until it expires.
		{lg, strings.Repeat("\x00", 8+6*4), "holds 32 bytes, not a log of capacity 3"},
		{win, "short", "holds 5 bytes, not a window of 1 rules"},
		// A window in the previous layout (without exp) likewise.
		{win, strings.Repeat("\x00", 24), "holds 24 bytes, not a window of 1 rules"},
		{bkt, "short", "holds 5 bytes, not 976 bytes of counters"},
		// Counters in the previous layout (without exp) likewise.
		{bkt, strings.Repeat("\x00", 968), "holds 968 bytes, not 976 bytes of counters"},
	} {
		rk, err := redis.RedisKey(tc.l, "k")
		require.NoError(t, err)
		require.NoError(t, gc.Set(t.Context(), rk, tc.value, 0).Err())
		_, err = tc.l.AllowN(t.Context(), "k", at(epoch), 1)
		require.ErrorContains(t, err, tc.want)
		require.ErrorContains(t, err, rk)
		got, err := gc.Get(t.Context(), rk).Result()
		require.NoError(t, err)
		require.Equal(t, tc.value, got, "the foreign value was overwritten")
	}
	// A key of another type: Redis's WRONGTYPE, for every kind, the hash
	// left as it was; under FailOpen the call is admitted with the error.
	open := mustLog(t, c, redis.Options{Prefix: "fv", OnError: redis.FailOpen}, redis.Rule{Limit: 3, Window: time.Hour})
	for _, l := range []*redis.Limiter{lg, win, bkt, open} {
		rk := mustKey(t, l, "h")
		require.NoError(t, gc.HSet(t.Context(), rk, "f", "v").Err())
		d, err := l.AllowN(t.Context(), "h", at(epoch), 1)
		if l == open {
			require.NoError(t, err)
			require.True(t, d.Allowed)
			require.Equal(t, redis.FromFailOpen, d.Source)
			err = d.Err
		}
		require.ErrorContains(t, err, "WRONGTYPE")
		got, err := gc.HGetAll(t.Context(), rk).Result()
		require.NoError(t, err)
		require.Equal(t, map[string]string{"f": "v"}, got, "the hash was changed")
	}
	other := mustLog(t, c, redis.Options{Prefix: "fv2"}, redis.Rule{Limit: 3, Window: time.Hour})
	g, err := redis.NewGroup(other, lg)
	require.NoError(t, err)
	rk, err := redis.RedisKey(lg, "{t}k")
	require.NoError(t, err)
	require.NoError(t, gc.Set(t.Context(), rk, full, 0).Err())
	_, err = g.AllowN(t.Context(), []string{"{t}a", "{t}k"}, at(epoch), 1)
	require.ErrorContains(t, err, "without its empty slot")
	n, err := redistest.Do(s.Addr(), "EXISTS", mustKey(t, other, "{t}a"))
	require.NoError(t, err)
	require.Equal(t, "0", n, "the group wrote its other key")
}

func mustKey(t *testing.T, l *redis.Limiter, key string) string {
	t.Helper()
	rk, err := redis.RedisKey(l, key)
	require.NoError(t, err)
	return rk
}

// TestRulesInKey: two limiters of one kind left on the default prefix with
// different rules (logins 5 per minute, the API 100) keep apart the state of
// one user key, for every kind; two limiters with the same rules (two
// instances of a service, whatever their other options) share it, as do two
// with one explicit prefix.
func TestRulesInKey(t *testing.T) {
	_, _, c := standalone(t)
	now := at(epoch)
	kinds := map[string]func(o redis.Options, limit int) *redis.Limiter{
		"log": func(o redis.Options, limit int) *redis.Limiter {
			return mustLog(t, c, o, redis.Rule{Limit: limit, Window: time.Minute})
		},
		"window": func(o redis.Options, limit int) *redis.Limiter {
			return mustWindow(t, c, o, redis.Rule{Limit: limit, Window: time.Minute})
		},
		"buckets": func(o redis.Options, limit int) *redis.Limiter {
			l, err := redis.NewBuckets(c, testOptions(o), redis.Rule{Limit: limit, Window: time.Minute, Precision: time.Second})
			require.NoError(t, err)
			return l
		},
	}
	for name, mk := range kinds {
		login, api := mk(redis.Options{}, 5), mk(redis.Options{}, 100)
		for i := range 10 {
			d, err := api.AllowN(t.Context(), name+"-alice", now, 1)
			require.NoError(t, err)
			require.True(t, d.Allowed, "%s: API call %d", name, i)
		}
		for i := range 5 {
			d, err := login.AllowN(t.Context(), name+"-alice", now, 1)
			require.NoError(t, err, "%s: login %d", name, i)
			require.True(t, d.Allowed, "%s: login %d refused after 10 API calls of the same user", name, i)
			require.Equal(t, []int{4 - i}, d.Remaining, "%s: login %d", name, i)
		}
		// Another instance of the login limit (other options, same rules)
		// sees the five logins.
		twin := mk(redis.Options{Timeout: time.Minute, MinTTL: 2 * time.Hour, OnError: redis.FailOpen}, 5)
		d, err := twin.AllowN(t.Context(), name+"-alice", now, 1)
		require.NoError(t, err)
		require.False(t, d.Allowed, "%s: a second instance of the login limit does not see the first's logins", name)
		require.Equal(t, mustKey(t, login, "k"), mustKey(t, twin, "k"), name)
		require.NotEqual(t, mustKey(t, login, "k"), mustKey(t, api, "k"), name)
		require.Equal(t, "app:"+strings.Split(mustKey(t, login, "k"), ":")[1]+":{k}",
			mustKey(t, mk(redis.Options{Prefix: "app"}, 5), "k"), "%s: an explicit prefix names the limit alone", name)
		require.Equal(t, mustKey(t, mk(redis.Options{Prefix: "app"}, 5), "k"), mustKey(t, mk(redis.Options{Prefix: "app"}, 100), "k"), name)
	}
}

// TestInputBounds: the edges of the accepted input are accepted: a key of
// exactly MaxKeyLen bytes, and the first and last microseconds of the range
// of instants, (1970, 2112) (1 µs and 2^52-1 µs after the epoch, the latter
// also given with nanoseconds that truncate to it); 2^52 µs is refused.
func TestInputBounds(t *testing.T) {
	_, _, c := standalone(t)
	l := mustLog(t, c, redis.Options{Prefix: "bounds"}, redis.Rule{Limit: 1, Window: time.Hour})
	d, err := l.AllowN(t.Context(), strings.Repeat("x", redis.MaxKeyLen), at(epoch), 1)
	require.NoError(t, err, "a key of MaxKeyLen bytes")
	require.True(t, d.Allowed)
	last := time.UnixMicro(1<<52 - 1)
	for i, now := range []time.Time{time.UnixMicro(1), last, last.Add(999 * time.Nanosecond)} {
		d, err := l.AllowN(t.Context(), "k"+strconv.Itoa(i), now, 1)
		require.NoError(t, err, "instant %v", now)
		require.True(t, d.Allowed)
		require.True(t, d.At.Equal(now.Truncate(time.Microsecond)), "at %v, want %v", d.At, now)
	}
	d, err = l.AllowN(t.Context(), "k", time.UnixMicro(1<<52), 1)
	require.ErrorContains(t, err, "redis: now must be after the Unix epoch and before 2112")
	require.Equal(t, redis.FromError, d.Source)
}

// TestBraceKeyForms: user keys with braces but no hash tag of their own
// ("}", "{}a") take a digest as their tag, so that no two user keys share a
// Redis key (the key "}" and the key made of its digest's tag followed by
// "}" count apart) and two such keys are never placed together: a group of
// "{}a" and "{}b" is refused before anything is sent, as their Redis keys
// would lie in different cluster slots.
func TestBraceKeyForms(t *testing.T) {
	s, _, c := standalone(t)
	l := mustLog(t, c, redis.Options{Prefix: "brace"}, redis.Rule{Limit: 1, Window: time.Hour})
	now := at(epoch)
	h := sha1.Sum([]byte("}"))
	twin := hex.EncodeToString(h[:8]) + "}"
	for _, k := range []string{"}", twin} {
		d, err := l.AllowN(t.Context(), k, now, 1)
		require.NoError(t, err)
		require.True(t, d.Allowed, "key %q is decided on its own state", k)
	}
	_, err := redistest.Do(s.Addr(), "FLUSHALL")
	require.NoError(t, err)
	l2 := mustLog(t, c, redis.Options{Prefix: "brace2"}, redis.Rule{Limit: 1, Window: time.Hour})
	g, err := redis.NewGroup(l, l2)
	require.NoError(t, err)
	for _, keys := range [][]string{{"{}a", "{}b"}, {"a}", "{a}x"}} {
		d, err := g.AllowN(t.Context(), keys, now, 1)
		require.ErrorContains(t, err, "have different hash tags", "keys %q", keys)
		require.False(t, d.Allowed)
		require.Equal(t, redis.FromError, d.Source)
	}
	out, err := redistest.Do(s.Addr(), "DBSIZE")
	require.NoError(t, err)
	require.Equal(t, "0", out, "nothing sent")
}
