package redis_test

import (
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// TestLogExpiryServerClock: on the server's clock, in real time with windows
// of 50 and 80 ms, a log key's expiry as Redis reports it (PEXPIRETIME) is at
// least ttl (the window in milliseconds, plus one) after the server's clock
// read before every admission: while admissions go on past the horizon the
// key's header last recorded, and when calls with the caller's instants (some
// ahead of the server's clock) land on the same key. A refused call changes
// neither the key's value nor its expiry. A short log (read with GET) and a
// long one (read with GETRANGE) alike, each first re-based on the server's
// clock.
func TestLogExpiryServerClock(t *testing.T) {
	_, gc, c := standalone(t)
	ctx := t.Context()
	for _, tc := range []struct {
		limit, n int
		window   time.Duration
	}{{5, 1, 50 * time.Millisecond}, {1400, 300, 80 * time.Millisecond}} {
		// Not mustLog: its MinTTL of an hour would hide the expiry.
		l, err := redis.NewLog(c, redis.Options{Prefix: "srvexp", Timeout: 10 * time.Second}, redis.Rule{Limit: tc.limit, Window: tc.window})
		require.NoError(t, err)
		ttl := tc.window.Milliseconds() + 1
		key := "k" + strconv.Itoa(tc.limit)
		rk, err := redis.RedisKey(l, key)
		require.NoError(t, err)
		state := func() (string, int64) { return keyState(t, gc, rk) }
		// A key created at an instant more than 2^47 µs before the server's
		// clock is re-based (written whole) by the next admission on the
		// server's clock, which sets its expiry too.
		old := time.Now().Add(-time.Duration(1<<47+1e9) * time.Microsecond)
		d, err := l.AllowN(ctx, key, old, tc.n)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		tm, err := gc.Time(ctx).Result()
		require.NoError(t, err)
		d, err = l.AllowN(ctx, key, time.Time{}, tc.n)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		_, e := state()
		require.GreaterOrEqual(t, e, tm.UnixMilli()+ttl, "limit %d: the re-based key's expiry", tc.limit)
		hdr, err := gc.GetRange(ctx, rk, 0, 7).Result()
		require.NoError(t, err)
		base := math.Float64frombits(binary.LittleEndian.Uint64([]byte(hdr)))
		require.Greater(t, int64(base), old.UnixMicro()+1<<46, "limit %d: the key was not re-based", tc.limit)

		rng := rand.New(rand.NewPCG(uint64(tc.limit), 7))
		admitted, refused, callers := 0, 0, 0
		end := time.Now().Add(10 * tc.window)
		for time.Now().Before(end) || admitted < 20 || refused < 5 {
			v0, e0 := state()
			tm, err := gc.Time(ctx).Result()
			require.NoError(t, err)
			var at time.Time // zero: the server's clock
			switch rng.IntN(8) {
			case 0:
				at = time.Now()
			case 1:
				at = time.Now().Add(tc.window / 3)
			}
			d, err := l.AllowN(ctx, key, at, tc.n)
			require.NoError(t, err)
			v1, e1 := state()
			if e1 == -2 && v0 != "(none)" {
				// The key went away after the call (a loaded machine): only
				// once past its expiry.
				now, err := gc.Time(ctx).Result()
				require.NoError(t, err)
				if d.Allowed {
					require.GreaterOrEqual(t, now.UnixMilli(), tm.UnixMilli()+ttl, "limit %d: the key went away less than ttl after an admission", tc.limit)
				} else {
					require.Greater(t, now.UnixMilli(), e0, "limit %d: the key went away before its expiry", tc.limit)
				}
				continue
			}
			if d.Allowed {
				admitted++
				if !at.IsZero() {
					callers++
				}
				require.GreaterOrEqual(t, e1, tm.UnixMilli()+ttl, "limit %d, admission %d: the key's expiry is %d ms after the server's clock read before it, not at least ttl %d ms", tc.limit, admitted, e1-tm.UnixMilli(), ttl)
			} else {
				refused++
				require.Equal(t, v0, v1, "limit %d: a refused call changed the key", tc.limit)
				require.Equal(t, e0, e1, "limit %d: a refused call changed the key's expiry", tc.limit)
			}
			time.Sleep(time.Duration(rng.IntN(int(tc.window/time.Millisecond)/4)) * time.Millisecond)
		}
		t.Logf("limit %d: %d admitted (%d at the caller's instants), %d refused", tc.limit, admitted, callers, refused)
		require.Positive(t, callers)
	}
}

// TestExpiryHorizonServerClock: on the server's clock, in real time, the
// expiry of a window key and of a sub-window counters' key as Redis reports
// it (PEXPIRETIME) covers what the key must keep after every admission: the
// end of the window after each rule's current one (start + 2W, read from the
// key's value), or the instant each rule's newest sub-window leaves it ((b+k)
// * p, from the instant the call was decided at); at a caller's instant, as
// long after the server's clock as that is after the instant decided at. And at least
// MinTTL after the call, and never more than three of the longest windows,
// or twice MinTTL, after the server's clock or the instant decided at, the
// later (nothing outlives its
// information by much). The expiry the key's value records (exp) never
// claims more than Redis keeps, and is 0 after a call at the caller's
// instant. A refused call changes neither the key's value nor its expiry.
// Most admissions leave the expiry as it was (exp covers them) and some
// refresh it: both paths are taken, with one rule, with two of different
// windows, and with a MinTTL longer than two windows.
func TestExpiryHorizonServerClock(t *testing.T) {
	_, gc, c := standalone(t)
	ctx := t.Context()
	type config struct {
		rules  []redis.Rule
		minTTL time.Duration
	}
	ms := time.Millisecond
	for _, kind := range []struct {
		name    string
		configs []config
		// expAt is the byte offset of exp in a key's value.
		expAt func(rules []redis.Rule) int
		// need is what the key must keep for rule r after an admission
		// decided at at (µs), its value v.
		need func(v string, r int, rule redis.Rule, at int64) int64
	}{
		{
			name: "window",
			configs: []config{
				{rules: []redis.Rule{{Limit: 5, Window: 50 * ms}}},
				{rules: []redis.Rule{{Limit: 4, Window: 40 * ms}, {Limit: 9, Window: 90 * ms}}},
				{rules: []redis.Rule{{Limit: 5, Window: 50 * ms}}, minTTL: 130 * ms},
			},
			expAt: func(rules []redis.Rule) int { return 24 * len(rules) },
			need: func(v string, r int, rule redis.Rule, _ int64) int64 {
				return int64(valueDouble(v, 24*r)) + 2*rule.Window.Microseconds()
			},
		},
		{
			name: "buckets",
			configs: []config{
				// Sub-windows that do not end on a whole millisecond.
				{rules: []redis.Rule{{Limit: 5, Window: 50 * ms, Precision: 10500 * time.Microsecond}}},
				{rules: []redis.Rule{{Limit: 4, Window: 40 * ms, Precision: 10 * ms}, {Limit: 9, Window: 90 * ms, Precision: 30 * ms}}},
				{rules: []redis.Rule{{Limit: 5, Window: 50 * ms, Precision: 10 * ms}}, minTTL: 130 * ms},
			},
			expAt: func([]redis.Rule) int { return 8 },
			need: func(_ string, _ int, rule redis.Rule, at int64) int64 {
				p := rule.Precision.Microseconds()
				k := (rule.Window.Microseconds() + p - 1) / p
				return (at/p + k) * p
			},
		},
	} {
		t.Run(kind.name, func(t *testing.T) {
			for ci, tc := range kind.configs {
				rules := tc.rules
				// Not mustWindow: its MinTTL of an hour would hide the expiry.
				o := redis.Options{Prefix: "horizon", Timeout: 10 * time.Second, MinTTL: tc.minTTL}
				var l *redis.Limiter
				var err error
				if kind.name == "window" {
					l, err = redis.NewWindow(c, o, rules...)
				} else {
					l, err = redis.NewBuckets(c, o, rules...)
				}
				require.NoError(t, err)
				longest := rules[len(rules)-1].Window
				most := max(3*longest, 2*tc.minTTL+2*ms) // the longest a key may live past the server's clock
				key := "k" + strconv.Itoa(ci)
				rk, err := redis.RedisKey(l, key)
				require.NoError(t, err)
				state := func() (string, int64) { return keyState(t, gc, rk) }
				rng := rand.New(rand.NewPCG(uint64(ci), 11))
				admitted, refused, callers, kept, refreshed := 0, 0, 0, 0, 0
				end := time.Now().Add(12 * longest)
				for time.Now().Before(end) || admitted < 30 || refused < 5 || kept < 5 || refreshed < 3 {
					v0, e0 := state()
					before, err := gc.Time(ctx).Result()
					require.NoError(t, err)
					var at time.Time // zero: the server's clock
					if rng.IntN(10) == 0 {
						at = time.Now().Add(time.Duration(rng.IntN(3)) * longest / 6)
					}
					d, err := l.AllowN(ctx, key, at, 1)
					require.NoError(t, err)
					v1, e1 := state()
					after, err := gc.Time(ctx).Result()
					require.NoError(t, err)
					if e1 == -2 {
						// The key went away after the call (a loaded machine).
						require.Greater(t, after.UnixMilli(), e0, "config %d: the key went away before its expiry", ci)
						continue
					}
					if !d.Allowed {
						refused++
						require.Equal(t, v0, v1, "config %d: a refused call changed the key", ci)
						require.Equal(t, e0, e1, "config %d: a refused call changed the key's expiry", ci)
						continue
					}
					admitted++
					for r, rule := range rules {
						need := kind.need(v1, r, rule, d.At.UnixMicro())
						if !at.IsZero() {
							// On the caller's clock, from the instant
							// decided at (a stale one is moved up).
							need += before.UnixMicro() - d.At.UnixMicro()
						}
						require.GreaterOrEqual(t, 1000*e1, need, "config %d, admission %d, rule %d: the key expires before it stops counting", ci, admitted, r)
					}
					require.GreaterOrEqual(t, e1, before.UnixMilli()+tc.minTTL.Milliseconds(), "config %d, admission %d: the key lives less than MinTTL", ci, admitted)
					// From the server's clock, or from the instant decided at
					// when a caller's instant ahead of it moved that up.
					require.LessOrEqual(t, e1, max(after.UnixMilli(), d.At.UnixMilli()+1)+most.Milliseconds(), "config %d, admission %d: the key lives too long", ci, admitted)
					exp := int64(valueDouble(v1, kind.expAt(rules)))
					if !at.IsZero() {
						callers++
						require.Zero(t, exp, "config %d: a call at the caller's instant left a horizon", ci)
					} else {
						require.LessOrEqual(t, exp, 1000*e1, "config %d, admission %d: the value's horizon claims more than Redis keeps", ci, admitted)
						if e1 == e0 {
							kept++
						} else {
							refreshed++
						}
					}
					time.Sleep(time.Duration(rng.IntN(int(longest/ms)/5)) * ms)
				}
				t.Logf("config %d: %d admitted (%d at the caller's instants; on the server's clock %d kept the expiry, %d refreshed it), %d refused", ci, admitted, callers, kept, refreshed, refused)
				require.Positive(t, callers)
			}
		})
	}
}

// keyState returns the value of Redis key rk ("(none)" when it is absent)
// and its expiry as PEXPIRETIME reports it (-2: absent).
func keyState(t *testing.T, gc *goredis.Client, rk string) (string, int64) {
	t.Helper()
	v, err := gc.Get(t.Context(), rk).Result()
	if errors.Is(err, goredis.Nil) {
		v, err = "(none)", nil
	}
	require.NoError(t, err)
	e, err := gc.Do(t.Context(), "PEXPIRETIME", rk).Int64()
	require.NoError(t, err)
	return v, e
}

// valueDouble reads the little-endian double at byte off of a key's value.
func valueDouble(v string, off int) float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64([]byte(v[off : off+8])))
}

// TestOutsideExpiryServerTime: keys that expire and come back, seen from
// outside. Eight goroutines on two clients call one key on the server's
// clock for about 1.5 s, in phases: bursts from every goroutine (far above
// the limit, so admissions must carry the key's expiry past the horizon its
// header recorded), trickles from one goroutine (just below the limit, so
// the admissions spread over the window), and pauses. Some pauses outlast
// the key, which expires and is created again; others end while the last
// admissions of a trickle still count, and the burst after them must find
// them. Every decision, admitted or refused, in the order of the instants
// the script decided at, must be the oracle's: a key gone while an admission
// inside a window still counted would admit a call the oracle refuses. The
// keys are those of NewLog, NewWindow and NewBuckets without a MinTTL, which
// lets them expire soon after their last admission.
func TestOutsideExpiryServerTime(t *testing.T) {
	s, gc, c1 := standalone(t)
	_, c2 := connect(t, s)
	// One rule: a second, shorter one would cap the burst after a pause
	// and hide the admissions a lost key forgot. The counters' have three
	// sub-windows of 20 ms.
	rules := []redis.Rule{{Limit: 8, Window: 60 * time.Millisecond}}
	bucketRules := []redis.Rule{{Limit: 8, Window: 60 * time.Millisecond, Precision: 20 * time.Millisecond}}
	// The phases, in order, and how long each lasts (ms). The key lives at
	// most two TTLs of 61 ms (the log), twice the longest window (the
	// window) or its newest sub-window's end plus a window (the counters:
	// 140 ms) after its last admission: 200 ms outlasts them all. The
	// pauses of 40 to 55 ms after a trickle end while a few of its
	// admissions still count.
	const (
		pause = iota
		trickle
		burst
	)
	phases := [][2]int{
		{burst, 100}, {trickle, 150}, {pause, 45}, {burst, 60}, {pause, 200},
		{trickle, 150}, {pause, 40}, {burst, 60}, {trickle, 120}, {pause, 50},
		{burst, 100}, {pause, 200}, {trickle, 120}, {pause, 55}, {burst, 60},
	}
	for _, name := range []string{"log", "window", "buckets"} {
		newL, rules := redis.NewLog, rules
		switch name {
		case "window":
			newL = redis.NewWindow
		case "buckets":
			newL, rules = redis.NewBuckets, bucketRules
		}
		t.Run(name, func(t *testing.T) {
			opts := redis.Options{Prefix: "expload", Timeout: 5 * time.Second}
			l1, err := newL(c1, opts, rules...)
			require.NoError(t, err)
			l2, err := newL(c2, opts, rules...)
			require.NoError(t, err)
			rk, err := redis.RedisKey(l1, "k")
			require.NoError(t, err)

			type call struct {
				at      int64 // µs, the instant the script decided at
				n       int
				allowed bool
			}
			var mu sync.Mutex
			var calls []call
			start := time.Now()
			// phaseAt is the phase in progress at d after start, and false
			// after the last.
			phaseAt := func(d time.Duration) (int, bool) {
				for _, p := range phases {
					if d < time.Duration(p[1])*time.Millisecond {
						return p[0], true
					}
					d -= time.Duration(p[1]) * time.Millisecond
				}
				return pause, false
			}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					l := l1
					if g%2 == 1 {
						l = l2
					}
					rng := rand.New(rand.NewPCG(uint64(g), 9))
					var next time.Time // of goroutine 0's next call in a trickle
					for {
						phase, more := phaseAt(time.Since(start))
						if !more {
							return
						}
						if phase == pause || (phase == trickle && (g != 0 || time.Now().Before(next))) {
							time.Sleep(time.Millisecond)
							continue
						}
						n := 1 + rng.IntN(2)
						if phase == trickle {
							// About 6 per 60 ms, one at a time: all
							// admitted once the burst's have left,
							// spread over the window.
							n = 1
							next = time.Now().Add(time.Duration(9000+rng.IntN(2000)) * time.Microsecond)
						}
						d, err := l.AllowN(t.Context(), "k", time.Time{}, n)
						if err != nil {
							t.Errorf("goroutine %d: %v", g, err)
							return
						}
						mu.Lock()
						calls = append(calls, call{d.At.UnixMicro(), n, d.Allowed})
						mu.Unlock()
						time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
					}
				})
			}
			// The key must really go away in the long pauses, or the test
			// proves nothing about expiry.
			gone := 0
			for {
				phase, more := phaseAt(time.Since(start))
				if !more {
					break
				}
				if phase == pause {
					if n, err := gc.Exists(t.Context(), rk).Result(); err == nil && n == 0 {
						gone++
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
			wg.Wait()
			require.Positive(t, gone, "the key never expired during the pauses")

			slices.SortStableFunc(calls, func(a, b call) int { return cmp.Compare(a.at, b.at) })
			var m fitsRecorder
			switch name {
			case "log":
				m = oracle.NewLog(oracleRules(rules)...)
			case "window":
				m = oracle.NewTwoCounter(oracle.StaleToStart, oracle.AnchorIdle, oracleRules(rules)...)
			default:
				m = newBucketOracle(rules)
			}
			admitted, refused := 0, 0
			for i := 0; i < len(calls); {
				j := i + 1
				for j < len(calls) && calls[j].at == calls[i].at {
					j++
				}
				// Scripts that read the same microsecond ran in some order
				// the instants do not tell: one order must explain them.
				group := calls[i:j]
				require.True(t, explains(m, group[0].at, len(group), func(k int) (int, bool) { return group[k].n, group[k].allowed }),
					"%s: the calls decided at %d µs (%d of them, #%d of %d) are not what the oracle decides in any order: %+v", name, group[0].at, len(group), i, len(calls), group)
				for _, c := range group {
					m.Record(c.at, c.n, c.allowed)
					if c.allowed {
						admitted++
					} else {
						refused++
					}
				}
				i = j
			}
			t.Logf("%s: %d admitted, %d refused; the key was seen gone %d times", name, admitted, refused, gone)
			require.Positive(t, refused, "the load must exceed the limit for the test to mean anything")
		})
	}
}

// fitsRecorder is what explains needs of a model: the decision it would
// take at an instant, and a decision recorded. oracle.Model has both, and so
// does bucketOracle.
type fitsRecorder interface {
	Fits(now int64, n int) bool
	Record(now int64, n int, admitted bool)
}

// explains reports whether some order of the k calls made at instant at,
// call i of cost n(i) and answer allowed(i), gives every call its answer on
// the model m (nothing recorded yet). At one instant an admission adds its
// cost to what the next call finds, so call i fits after the admitted cost s
// before it iff m fits s+n(i).
func explains(m fitsRecorder, at int64, k int, call func(i int) (n int, allowed bool)) bool {
	if k > 4 {
		return false // never seen: scripts take microseconds each
	}
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	var try func(p int) bool
	try = func(p int) bool {
		if p == k {
			s := 0
			for _, i := range order {
				n, allowed := call(i)
				if m.Fits(at, s+n) != allowed {
					return false
				}
				if allowed {
					s += n
				}
			}
			return true
		}
		for q := p; q < k; q++ {
			order[p], order[q] = order[q], order[p]
			if try(p + 1) {
				return true
			}
			order[p], order[q] = order[q], order[p]
		}
		return false
	}
	return try(0)
}

// TestLogExpiryFromStamp: an admission on the server's clock that is decided
// at a stamp later than the clock (the key's newest stamp came from a
// caller's instant ahead of it) keeps the key until that stamp has left the
// window on the server's clock, not only until the clock's instant has: a
// decision made before then is still clamped to the stamp, and must find it.
func TestLogExpiryFromStamp(t *testing.T) {
	_, gc, c := standalone(t)
	rule := redis.Rule{Limit: 2, Window: time.Second}
	l, err := redis.NewLog(c, redis.Options{Prefix: "efs", Timeout: 10 * time.Second}, rule)
	require.NoError(t, err)
	srv, err := gc.Time(t.Context()).Result()
	require.NoError(t, err)
	ahead := srv.Add(10 * time.Second).Truncate(time.Microsecond)
	d, err := l.AllowN(t.Context(), "k", ahead, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	d, err = l.AllowN(t.Context(), "k", time.Time{}, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, ahead, d.At, "decided at the newest stamp, ahead of the server's clock")
	_, e := keyState(t, gc, mustKey(t, l, "k"))
	require.GreaterOrEqual(t, e, ahead.Add(rule.Window).UnixMilli(),
		"the key must live until its newest stamp has left the window; it expires %v before", ahead.Add(rule.Window).Sub(time.UnixMilli(e)))
}

// TestRefusalWritesNothingCallerClock: on the caller's instants, a refused
// call (AllowN or CheckN) leaves a key exactly as it was, its bytes and its
// expiry, even when that TTL is below what an admission would restore
// ("a refused call runs no write command"). TestExpiry refuses only while
// the TTL is long, where the log's refresh rule (PTTL below ttl) would leave
// it alone anyway; TestExpiryHorizonServerClock covers the server's clock.
func TestRefusalWritesNothingCallerClock(t *testing.T) {
	s, gc, c := standalone(t)
	o := redis.Options{Timeout: 10 * time.Second}
	for _, kind := range []string{"log", "window", "buckets"} {
		t.Run(kind, func(t *testing.T) {
			o.Prefix = "rwn-" + kind
			var l *redis.Limiter
			var err error
			switch kind {
			case "log":
				l, err = redis.NewLog(c, o, redis.Rule{Limit: 1, Window: time.Minute})
			case "window":
				l, err = redis.NewWindow(c, o, redis.Rule{Limit: 1, Window: time.Minute})
			default:
				l, err = redis.NewBuckets(c, o, redis.Rule{Limit: 1, Window: time.Minute, Precision: time.Second})
			}
			require.NoError(t, err)
			now := at(epoch)
			d, err := l.AllowN(t.Context(), "k", now, 1)
			require.NoError(t, err)
			require.True(t, d.Allowed)
			rk := mustKey(t, l, "k")
			// A TTL far below the window, so that a refusal that
			// refreshed it would show.
			_, err = redistest.Do(s.Addr(), "PEXPIRE", rk, "30000")
			require.NoError(t, err)
			v0, e0 := keyState(t, gc, rk)
			for i := range 3 {
				now = now.Add(time.Second)
				d, err = l.AllowN(t.Context(), "k", now, 1)
				require.NoError(t, err)
				require.False(t, d.Allowed, "call %d", i)
				d, err = l.CheckN(t.Context(), "k", now, 1)
				require.NoError(t, err)
				require.False(t, d.Allowed, "check %d", i)
				v, e := keyState(t, gc, rk)
				require.True(t, v == v0, "call %d: a refusal changed the value (%d bytes)", i, len(v))
				require.Equal(t, e0, e, "call %d: a refusal changed the expiry", i)
			}
		})
	}
}
