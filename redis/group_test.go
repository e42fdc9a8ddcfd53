package redis_test

import (
	"fmt"
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

// The rules of the group tests: per user, per client address, and global.
var (
	userRules   = []redis.Rule{{Limit: 3, Window: 10 * time.Millisecond}, {Limit: 8, Window: 50 * time.Millisecond}}
	ipRules     = []redis.Rule{{Limit: 5, Window: 20 * time.Millisecond}}
	globalRules = []redis.Rule{{Limit: 12, Window: 30 * time.Millisecond}, {Limit: 40, Window: 200 * time.Millisecond}}
)

// groupModel is the oracle of a group: one model per Redis key, all or
// nothing. The exact log decides every key at one instant, the latest of
// now and every key's latest admission; the window decides each rule at its
// own clamped instant, as for one key.
type groupModel struct {
	exact  bool
	models map[string]oracle.Model
}

func (g *groupModel) model(key string, rules []redis.Rule) oracle.Model {
	m, ok := g.models[key]
	if !ok {
		if g.exact {
			m = oracle.NewLog(oracleRules(rules)...)
		} else {
			m = oracle.NewTwoCounter(oracle.StaleToStart, oracle.AnchorIdle, oracleRules(rules)...)
		}
		g.models[key] = m
	}
	return m
}

// allowN returns what a group call on the keys (with their rules) decides:
// admitted, the instant decided at, when the cost fits every key (-1:
// never), and the remaining cost of every rule of every key, in order.
func (g *groupModel) allowN(keys []string, rules [][]redis.Rule, now int64, n int) (ok bool, at, ready int64, rem []int) {
	ms := make([]oracle.Model, len(keys))
	at = now
	for i, k := range keys {
		ms[i] = g.model(k, rules[i])
		if lg, isLog := ms[i].(*oracle.Log); isLog {
			at = max(at, lg.Clamp(now))
		}
	}
	ok, ready = true, at
	never := false
	for _, m := range ms {
		if !m.Fits(at, n) {
			ok = false
		}
		r, rok := m.ReadyAt(at, n)
		switch {
		case !rok:
			never = true
		case r > ready:
			ready = r
		}
	}
	for _, m := range ms {
		m.Record(at, n, ok)
	}
	switch {
	case ok:
		ready = at
	case never:
		ready = -1
	}
	for _, m := range ms {
		rem = append(rem, m.RemainingAt(at)...)
	}
	return ok, at, ready, rem
}

// replayGroup replays a workload of group calls (a user, an address and the
// global key, all under the hash tag "{t1}") mixed with single-key calls on
// the group's limiters, with weights, zero and over-limit costs, stale
// instants and idle gaps, and requires every decision to be the model's:
// admitted, instant, when it fits, and the remaining cost of every rule.
// Each group call is preceded by CheckN, which must answer what AllowN then
// decides.
func replayGroup(t *testing.T, c redis.Client, exact bool) {
	newf := redis.NewWindow
	if exact {
		newf = redis.NewLog
	}
	mk := func(prefix string, rules []redis.Rule) *redis.Limiter {
		l, err := newf(c, testOptions(redis.Options{Prefix: prefix}), rules...)
		require.NoError(t, err)
		return l
	}
	user, ip, global := mk("gu", userRules), mk("gi", ipRules), mk("gg", globalRules)
	g, err := redis.NewGroup(user, ip, global)
	require.NoError(t, err)
	ruleSets := [][]redis.Rule{userRules, ipRules, globalRules}
	lims := []*redis.Limiter{user, ip, global}

	const seed = 20261123
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	model := &groupModel{exact: exact, models: map[string]oracle.Model{}}
	tm := epoch
	var admitted, refused, singles int
	for step := range 1500 {
		switch x := r.IntN(100); {
		case x < 2:
			tm += 300_000 // idle: every window passes
		case x < 70:
			tm += r.Int64N(3000)
		}
		now := tm
		if r.IntN(10) == 0 {
			now -= r.Int64N(20_000) // stale
		}
		n := 1
		switch x := r.IntN(100); {
		case x < 5:
			n = 0
		case x < 8:
			n = 4 + r.IntN(10) // above the user's limit, maybe not the others'
		case x < 25:
			n = 1 + r.IntN(3)
		}
		keys := []string{"{t1}user:" + strconv.Itoa(r.IntN(4)), "{t1}ip:" + strconv.Itoa(r.IntN(3)), "{t1}all"}
		mkeys := make([]string, len(keys))
		for i, k := range keys {
			mkeys[i], err = redis.RedisKey(lims[i], k)
			require.NoError(t, err)
		}
		if r.IntN(5) == 0 { // one key alone, through its own limiter
			i := r.IntN(3)
			d, err := lims[i].AllowN(ctxT(t), keys[i], at(now), n)
			require.NoError(t, err, "step %d", step)
			ok, atUS, ready, rem := model.allowN(mkeys[i:i+1], ruleSets[i:i+1], now, n)
			requireDecision(t, fmt.Sprintf("step %d: limiter %d alone, AllowN(%s, t=%d, n=%d)", step, i, keys[i], now-epoch, n), d, ok, atUS, ready, rem)
			singles++
			continue
		}
		chk, err := g.CheckN(ctxT(t), keys, at(now), n)
		require.NoError(t, err, "step %d: CheckN", step)
		d, err := g.AllowN(ctxT(t), keys, at(now), n)
		require.NoError(t, err, "step %d", step)
		before := slices.Clone(d.Remaining)
		if d.Allowed {
			for j := range before {
				before[j] += n
			}
		}
		if chk.Allowed != d.Allowed || !chk.At.Equal(d.At) || !chk.ReadyAt.Equal(d.ReadyAt) || fmt.Sprint(chk.Remaining) != fmt.Sprint(before) {
			t.Fatalf("step %d: CheckN(t=%d, n=%d) = %+v, then AllowN = %+v", step, now-epoch, n, chk, d)
		}
		ok, atUS, ready, rem := model.allowN(mkeys, ruleSets, now, n)
		requireDecision(t, fmt.Sprintf("step %d: group AllowN(%q, t=%d, n=%d)", step, keys, now-epoch, n), d, ok, atUS, ready, rem)
		if ok {
			admitted++
		} else {
			refused++
		}
	}
	require.Positive(t, admitted)
	require.Positive(t, refused)
	require.Positive(t, singles)
}

// TestGroupMatchesOracle: several keys in one decision, on caller-given
// instants, decide exactly as one model per key taken all or nothing, for
// the exact log and the window, on one server; single-key calls on the same
// keys share their state.
func TestGroupMatchesOracle(t *testing.T) {
	_, _, c := standalone(t)
	t.Run("log", func(t *testing.T) { replayGroup(t, c, true) })
	t.Run("window", func(t *testing.T) { replayGroup(t, c, false) })
}

// TestGroupCluster: the same replay on a three-master cluster (the keys of
// a call share a hash tag, so one slot), and keys of different tags are
// refused before anything is sent.
func TestGroupCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	gc, c := clusterClient(t, cl)
	t.Run("log", func(t *testing.T) { replayGroup(t, c, true) })
	t.Run("tags", func(t *testing.T) {
		// The tag the group compares is the one the cluster hashes: the
		// server puts a key in its tag's slot, and a key without one in
		// the slot of all its bytes.
		keys := []string{"123456789", "{user1000}.following", "{user1000}.followers", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{", "}{x}", "a{b}c", "{}", "}{", "{{}}"}
		for i := range 200 {
			keys = append(keys, "k"+strconv.Itoa(i), "{t"+strconv.Itoa(i%7)+"}k"+strconv.Itoa(i))
		}
		for _, k := range keys {
			got, err := gc.ClusterKeySlot(t.Context(), k).Result()
			require.NoError(t, err)
			want := crcSlot(k)
			if tag, ok := redis.HashTag(k); ok {
				w, err := gc.ClusterKeySlot(t.Context(), tag).Result()
				require.NoError(t, err)
				want = int(w)
			}
			require.Equal(t, want, int(got), "key %q", k)
		}
		require.Equal(t, 12739, crcSlot("123456789"), "CRC16/XMODEM check value 0x31C3")
	})
	t.Run("cross-slot", func(t *testing.T) {
		count := func() int {
			total := 0
			for _, n := range cl.Nodes {
				out, err := redistest.Do(n.Addr(), "DBSIZE")
				require.NoError(t, err)
				k, _ := strconv.Atoi(out)
				total += k
			}
			return total
		}
		before := count()
		a := mustLog(t, c, redis.Options{Prefix: "xs"}, userRules...)
		b := mustLog(t, c, redis.Options{Prefix: "xs2"}, globalRules...)
		g, err := redis.NewGroup(a, b)
		require.NoError(t, err)
		_, err = g.AllowN(t.Context(), []string{"alice", "all"}, at(epoch), 1)
		require.ErrorContains(t, err, `redis: keys "alice" and "all" have different hash tags ("alice" and "all")`)
		d, err := g.AllowN(t.Context(), []string{"{alice}", "{alice}all"}, at(epoch), 1)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		require.Equal(t, before+2, count(), "only the call with one tag wrote")
	})
}

// TestGroupErrors: bad groups and bad calls are errors naming what is wrong,
// and send nothing; a call refused by one key writes nothing to the others
// (not even their TTL).
func TestGroupErrors(t *testing.T) {
	s, gc, c := standalone(t)
	dbsize := func() string {
		out, err := redistest.Do(s.Addr(), "DBSIZE")
		require.NoError(t, err)
		return out
	}
	lg := mustLog(t, c, redis.Options{Prefix: "e1"}, redis.Rule{Limit: 2, Window: time.Hour})
	lg2 := mustLog(t, c, redis.Options{Prefix: "e2"}, redis.Rule{Limit: 10, Window: time.Hour})
	win := mustWindow(t, c, redis.Options{Prefix: "e3"}, redis.Rule{Limit: 10, Window: time.Hour})
	other, err := redis.NewGoRedis(goredis.NewClient(&goredis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true}))
	require.NoError(t, err)
	lgOther := mustLog(t, other, redis.Options{Prefix: "e4"}, redis.Rule{Limit: 10, Window: time.Hour})
	fb := mustLog(t, c, redis.Options{Prefix: "e5", OnError: redis.FallBack, Fallback: []redis.Rule{{Limit: 1, Window: time.Second}}}, redis.Rule{Limit: 10, Window: time.Hour})

	for _, tc := range []struct {
		ls   []*redis.Limiter
		want string
	}{
		{nil, "redis: NewGroup: between 1 and 8 limiters are required, got 0"},
		{[]*redis.Limiter{lg, nil}, "redis: NewGroup: limiter 1 is nil"},
		{[]*redis.Limiter{lg, win}, "redis: NewGroup: limiter 1 keeps a window (NewWindow), limiter 0 a log (NewLog): a group takes limiters of one kind"},
		{[]*redis.Limiter{lg, lgOther}, "redis: NewGroup: limiter 1 has another Client than limiter 0"},
		{[]*redis.Limiter{fb, lg}, "redis: NewGroup: limiter 0 falls back in process, limiter 1 has no fallback"},
		{slices.Repeat([]*redis.Limiter{lg}, 9), "redis: NewGroup: between 1 and 8 limiters are required, got 9"},
	} {
		_, err := redis.NewGroup(tc.ls...)
		require.EqualError(t, err, tc.want)
	}

	g, err := redis.NewGroup(lg, lg2)
	require.NoError(t, err)
	for _, tc := range []struct {
		keys []string
		now  time.Time
		n    int
		want string
	}{
		{[]string{"{a}"}, at(epoch), 1, "redis: keys: the group has 2 limiters, got 1 keys"},
		{[]string{"a", "b"}, at(epoch), 1, `redis: keys "a" and "b" have different hash tags ("a" and "b"): give the keys of a group one hash tag, as in "{tenant-7}user:42" and "{tenant-7}ip:10.0.0.1"`},
		{[]string{"{a}", ""}, at(epoch), 1, "redis: key must not be empty (key 1)"},
		{[]string{"{a}x", "{a}y"}, at(epoch), -1, "redis: n must be at least 0, got -1"},
		{[]string{"{a}x", "{a}y"}, time.Unix(0, 0), 1, "redis: now must be after the Unix epoch"},
	} {
		d, err := g.AllowN(t.Context(), tc.keys, tc.now, tc.n)
		require.ErrorContains(t, err, tc.want, "keys %q", tc.keys)
		require.Equal(t, redis.FromError, d.Source, "keys %q", tc.keys)
	}
	same, err := redis.NewGroup(lg, lg)
	require.NoError(t, err)
	d, err := same.AllowN(t.Context(), []string{"{a}", "{a}"}, at(epoch), 1)
	require.ErrorContains(t, err, "redis: keys 0 and 1 are one Redis key")
	require.Equal(t, redis.FromError, d.Source)
	require.Equal(t, "0", dbsize(), "an error wrote something")

	// Fill lg's key, then a group call refused by it writes nothing to lg2's.
	keys := []string{"{a}x", "{a}y"}
	d, err = g.AllowN(t.Context(), keys, at(epoch), 2)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, []int{0, 8}, d.Remaining)
	rk2, err := redis.RedisKey(lg2, keys[1])
	require.NoError(t, err)
	raw, err := gc.Get(t.Context(), rk2).Result()
	require.NoError(t, err)
	ttl, err := gc.PTTL(t.Context(), rk2).Result()
	require.NoError(t, err)
	d, err = g.AllowN(t.Context(), keys, at(epoch+int64(time.Minute/time.Microsecond)), 1)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	require.Equal(t, at(epoch+int64(time.Hour/time.Microsecond)), d.ReadyAt)
	require.Equal(t, []int{0, 8}, d.Remaining)
	raw2, err := gc.Get(t.Context(), rk2).Result()
	require.NoError(t, err)
	require.Equal(t, raw, raw2, "a refused call wrote to another key of its group")
	ttl2, err := gc.PTTL(t.Context(), rk2).Result()
	require.NoError(t, err)
	require.LessOrEqual(t, ttl2, ttl, "a refused call extended another key's TTL")
	// n above one key's limit: never.
	d, err = g.AllowN(t.Context(), []string{"{b}x", "{b}y"}, at(epoch), 3)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	require.True(t, d.ReadyAt.IsZero())
	require.Equal(t, "2", dbsize())
}

// TestOutsideGroupServerTime: 16 goroutines on two clients decide a user key
// and a global key at once, on the server's clock, with weighted calls. From
// the instants and answers they get, no window holds more than a user's limit
// for any user, nor more than the global limit over all users: every
// admission counted in both keys.
func TestOutsideGroupServerTime(t *testing.T) {
	s, _, c1 := standalone(t)
	_, c2 := connect(t, s)
	groupServerTimeLoad(t, c1, c2)
}

// groupServerTimeLoad is TestOutsideGroupServerTime's load and check, on two
// clients of one server.
func groupServerTimeLoad(t *testing.T, c1, c2 redis.Client) {
	const users, userLimit, globalLimit = 4, 6, 15
	w := 20 * time.Millisecond
	groups := make([]*redis.Group, 2)
	for i, c := range []redis.Client{c1, c2} {
		u := mustLog(t, c, redis.Options{Prefix: "ou"}, redis.Rule{Limit: userLimit, Window: w})
		gl := mustLog(t, c, redis.Options{Prefix: "og"}, redis.Rule{Limit: globalLimit, Window: w})
		var err error
		groups[i], err = redis.NewGroup(u, gl)
		require.NoError(t, err)
	}
	type adm struct {
		at   int64
		n    int64
		user int
	}
	var mu sync.Mutex
	var got []adm
	refused := 0
	var wg sync.WaitGroup
	for gi := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(gi), 3))
			g := groups[gi%2]
			for range 150 {
				u := r.IntN(users)
				n := 1 + r.IntN(3)
				d, err := g.AllowN(t.Context(), []string{"{o}u" + strconv.Itoa(u), "{o}all"}, time.Time{}, n)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if d.Allowed {
					got = append(got, adm{d.At.UnixMicro(), int64(n), u})
				} else {
					refused++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.NotEmpty(t, got)
	require.Positive(t, refused, "the load never reached a limit")
	W := w.Microseconds()
	var all []oracle.Stamp
	per := make([][]oracle.Stamp, users)
	for _, a := range got {
		all = append(all, oracle.Stamp{At: a.at, Cost: a.n})
		per[a.user] = append(per[a.user], oracle.Stamp{At: a.at, Cost: a.n})
	}
	require.LessOrEqual(t, oracle.MaxInWindow(all, W), int64(globalLimit), "global")
	for u := range users {
		require.LessOrEqual(t, oracle.MaxInWindow(per[u], W), int64(userLimit), "user %d", u)
	}
}

// clone returns a deep copy of the model.
func (o *bucketOracle) clone() *bucketOracle {
	c := &bucketOracle{rules: o.rules, last: o.last}
	for _, m := range o.counts {
		mc := make(map[int64]int, len(m))
		for k, v := range m {
			mc[k] = v
		}
		c.counts = append(c.counts, mc)
	}
	return c
}

// TestGroupBuckets: a group of NewBuckets limiters (a user and a global key
// under one tag, mixed with single-key calls) decides every call as one
// naive sub-window model per key, all or nothing, every key at one instant
// (the latest of now and every key's latest admission).
func TestGroupBuckets(t *testing.T) {
	_, _, c := standalone(t)
	uRules := []redis.Rule{{Limit: 4, Window: 10 * time.Millisecond, Precision: 2 * time.Millisecond}}
	gRules := []redis.Rule{{Limit: 10, Window: 30 * time.Millisecond, Precision: 7 * time.Millisecond}, {Limit: 25, Window: 100 * time.Millisecond, Precision: 100 * time.Millisecond}}
	mk := func(prefix string, rules []redis.Rule) *redis.Limiter {
		l, err := redis.NewBuckets(c, testOptions(redis.Options{Prefix: prefix}), rules...)
		require.NoError(t, err)
		return l
	}
	u, gl := mk("bu", uRules), mk("bg", gRules)
	g, err := redis.NewGroup(u, gl)
	require.NoError(t, err)
	models := map[string]*bucketOracle{}
	model := func(key string, rules []redis.Rule) *bucketOracle {
		if models[key] == nil {
			models[key] = newBucketOracle(rules)
		}
		return models[key]
	}
	const seed = 20261124
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	tm := epoch
	var admitted, refused int
	for step := range 1200 {
		if r.IntN(50) == 0 {
			tm += 200_000
		} else {
			tm += r.Int64N(2500)
		}
		now := tm
		if r.IntN(10) == 0 {
			now -= r.Int64N(10_000)
		}
		n := 1
		switch x := r.IntN(100); {
		case x < 5:
			n = 0
		case x < 8:
			n = 5
		case x < 25:
			n = 1 + r.IntN(3)
		}
		user := "{b}u" + strconv.Itoa(r.IntN(3))
		mu, mg := model("u"+user, uRules), model("g", gRules)
		if r.IntN(5) == 0 {
			d, err := gl.AllowN(ctxT(t), "{b}all", at(now), n)
			require.NoError(t, err)
			ok, atUS, ready, rem := mg.allowN(now, n)
			requireDecision(t, fmt.Sprintf("step %d: global alone (t=%d, n=%d)", step, now-epoch, n), d, ok, atUS, ready, rem)
			continue
		}
		d, err := g.AllowN(ctxT(t), []string{user, "{b}all"}, at(now), n)
		require.NoError(t, err)
		at0 := max(now, mu.last, mg.last)
		cu, cg := mu.clone(), mg.clone()
		okU, _, readyU, remU := cu.allowN(at0, n)
		okG, _, readyG, remG := cg.allowN(at0, n)
		ok := okU && okG
		ready := at0
		switch {
		case ok:
		case readyU < 0 || readyG < 0:
			ready = -1
		default:
			ready = max(readyU, readyG)
		}
		rem := append(remU, remG...)
		if ok {
			mu.allowN(at0, n)
			mg.allowN(at0, n)
			admitted++
		} else {
			rem = append(mu.remaining(at0), mg.remaining(at0)...) // the clones may have recorded
			refused++
		}
		requireDecision(t, fmt.Sprintf("step %d: group (%s, t=%d, n=%d)", step, user, now-epoch, n), d, ok, at0, ready, rem)
	}
	require.Positive(t, admitted)
	require.Positive(t, refused)
}

// remaining is the cost each rule would still admit at t.
func (o *bucketOracle) remaining(t int64) []int {
	var rem []int
	for i, r := range o.rules {
		rem = append(rem, max(r.Limit-o.used(i, t), 0))
	}
	return rem
}

// TestGroupKeyTTLs: in a Group each key gets its own limiter's TTL, not the
// first limiter's: a log key lives at least its own longest window after an
// admission (docs: "Every key outlives each admission by at least ttl").
func TestGroupKeyTTLs(t *testing.T) {
	s, _, c := standalone(t)
	pttl := func(l *redis.Limiter, key string) int {
		out, err := redistest.Do(s.Addr(), "PTTL", mustKey(t, l, key))
		require.NoError(t, err)
		v, err := strconv.Atoi(out)
		require.NoError(t, err)
		return v
	}
	short, err := redis.NewLog(c, redis.Options{Prefix: "gttl-s"}, redis.Rule{Limit: 5, Window: time.Second})
	require.NoError(t, err)
	long, err := redis.NewLog(c, redis.Options{Prefix: "gttl-l"}, redis.Rule{Limit: 5, Window: 10 * time.Second})
	require.NoError(t, err)
	for _, order := range [][]*redis.Limiter{{short, long}, {long, short}} {
		g, err := redis.NewGroup(order...)
		require.NoError(t, err)
		keys := []string{"{t}a", "{t}b"}
		for _, l := range order {
			_, err := redistest.Do(s.Addr(), "DEL", mustKey(t, l, "{t}a"), mustKey(t, l, "{t}b"))
			require.NoError(t, err)
		}
		d, err := g.AllowN(t.Context(), keys, at(epoch), 1)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		for i, l := range order {
			w := int(l.Rules()[0].Window / time.Millisecond)
			got := pttl(l, keys[i])
			require.GreaterOrEqual(t, got, w, "key %d (window %d ms) has a TTL of %d ms", i, w, got)
			require.LessOrEqual(t, got, 2*w+10, "key %d (window %d ms) has a TTL of %d ms", i, w, got)
		}
	}
}

// TestGroupPolicyOfFirst: a group's call takes the failure policy of its
// first limiter, whatever the others' policies.
func TestGroupPolicyOfFirst(t *testing.T) {
	c := &switchClient{}
	c.down.Store(true)
	rule := redis.Rule{Limit: 5, Window: time.Minute}
	fbRules := []redis.Rule{{Limit: 1, Window: time.Minute}}
	mk := func(p redis.Policy, prefix string) *redis.Limiter {
		l, err := redis.NewLog(c, redis.Options{Prefix: prefix, OnError: p, Fallback: fbRules}, rule)
		require.NoError(t, err)
		return l
	}
	closed, open, fb := mk(redis.FailClosed, "gp-c"), mk(redis.FailOpen, "gp-o"), mk(redis.FallBack, "gp-f")
	keys := []string{"{t}a", "{t}b"}
	now := at(epoch)
	for _, tc := range []struct {
		ls   []*redis.Limiter
		want redis.Source
	}{
		{[]*redis.Limiter{closed, open}, redis.FromError},
		{[]*redis.Limiter{open, closed}, redis.FromFailOpen},
		{[]*redis.Limiter{open, fb}, redis.FromFailOpen},
		{[]*redis.Limiter{closed, fb}, redis.FromError},
	} {
		g, err := redis.NewGroup(tc.ls...)
		require.NoError(t, err)
		d, err := g.AllowN(t.Context(), keys, now, 1)
		require.Equal(t, tc.want, d.Source)
		require.Equal(t, tc.want != redis.FromError, d.Allowed, "source %v", d.Source)
		if tc.want == redis.FromError {
			require.ErrorIs(t, err, errDown)
		} else {
			require.NoError(t, err)
			require.ErrorIs(t, d.Err, errDown)
		}
	}
}
