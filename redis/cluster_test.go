package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// TestCluster runs on a real three-master Redis Cluster: the replays match
// the oracles there too; keys spread over every master, each decided on its
// own state, including keys with braces; a key in each of the 16384 slots is
// decided on its own state; the script can be missing on a
// master; and when a master stops, its keys follow the failure policy while
// the others go on.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	gc, c := clusterClient(t, cl)

	t.Run("replay-log", func(t *testing.T) { replay(t, c, true) })
	t.Run("replay-window", func(t *testing.T) { replay(t, c, false) })

	keys := []string{"{", "}", "{}", "a{b}c", "{user}:1", "{user}:2", "x}y{z", strings.Repeat("k", redis.MaxKeyLen)}
	for i := range 200 {
		keys = append(keys, "user-"+strconv.Itoa(i))
	}
	l := mustLog(t, c, redis.Options{Prefix: "spread", Timeout: time.Second}, redis.Rule{Limit: 2, Window: time.Hour})
	now := at(epoch)

	t.Run("spread", func(t *testing.T) {
		for _, k := range keys {
			for i, want := range []bool{true, true, false} {
				d, err := l.AllowN(t.Context(), k, now, 1)
				require.NoError(t, err, "key %q call %d", k, i)
				require.Equal(t, want, d.Allowed, "key %q call %d", k, i)
			}
		}
		// Every master holds some of the keys, and every key is one Redis
		// key (counted by this limiter's prefix, so that the replays'
		// keys do not count), in the slot of its own tag.
		var mu sync.Mutex
		perNode := map[string]int{}
		require.NoError(t, gc.ForEachMaster(t.Context(), func(ctx context.Context, m *goredis.Client) error {
			ks, err := m.Keys(ctx, "spread:*").Result()
			mu.Lock()
			perNode[m.Options().Addr] = len(ks)
			mu.Unlock()
			return err
		}))
		require.Len(t, perNode, len(cl.Nodes))
		total := 0
		for addr, k := range perNode {
			require.Positive(t, k, "master %s holds no key: %v", addr, perNode)
			total += k
		}
		require.Equal(t, len(keys), total, "one Redis key per user key: %v", perNode)
		for _, k := range keys {
			rk, err := redis.RedisKey(l, k)
			require.NoError(t, err)
			n, err := gc.Exists(t.Context(), rk).Result()
			require.NoError(t, err)
			require.EqualValues(t, 1, n, "key %q: its Redis key %q", k, rk)
		}
		slots := map[string]bool{}
		for _, k := range keys {
			rk, err := redis.RedisKey(l, k)
			require.NoError(t, err)
			s, err := gc.ClusterKeySlot(t.Context(), rk).Result()
			require.NoError(t, err)
			slots[strconv.FormatInt(s, 10)] = true
		}
		require.Greater(t, len(slots), len(keys)/2, "keys should spread over many slots")
	})

	t.Run("every-slot", func(t *testing.T) {
		// One key in each of the 16384 slots, found with the slot
		// computed here (checked against the server's on a sample), each
		// admitted once and then refused: the script runs on the master
		// of every slot, on the key's own state.
		es := mustLog(t, c, redis.Options{Prefix: "slots", Timeout: time.Second}, redis.Rule{Limit: 1, Window: time.Hour})
		bySlot := make([]string, clusterSlots)
		left := len(bySlot)
		for i := 0; left > 0; i++ {
			k := "k" + strconv.Itoa(i)
			rk, err := redis.RedisKey(es, k)
			require.NoError(t, err)
			if s := keySlot(rk); bySlot[s] == "" {
				bySlot[s] = k
				left--
			}
		}
		for s := 0; s < clusterSlots; s += 1021 {
			rk, err := redis.RedisKey(es, bySlot[s])
			require.NoError(t, err)
			got, err := gc.ClusterKeySlot(t.Context(), rk).Result()
			require.NoError(t, err)
			require.Equal(t, int64(s), got, "key %q", rk)
		}
		for s, k := range bySlot {
			for i, want := range []bool{true, false} {
				d, err := es.AllowN(t.Context(), k, now, 1)
				require.NoError(t, err, "slot %d key %q call %d", s, k, i)
				require.Equal(t, want, d.Allowed, "slot %d key %q call %d", s, k, i)
			}
		}
	})

	t.Run("noscript", func(t *testing.T) {
		for _, n := range cl.Nodes {
			_, err := redistest.Do(n.Addr(), "SCRIPT", "FLUSH")
			require.NoError(t, err)
		}
		for i, k := range keys[:50] {
			d, err := l.AllowN(t.Context(), k, now, 1)
			require.NoError(t, err, "key %d", i)
			require.False(t, d.Allowed, "key %q was at its limit", k)
		}
		// Load puts the script on every master.
		for _, n := range cl.Nodes {
			_, err := redistest.Do(n.Addr(), "SCRIPT", "FLUSH")
			require.NoError(t, err)
		}
		require.NoError(t, l.Load(t.Context()))
		sha, _ := redis.ScriptSHAs()
		for _, n := range cl.Nodes {
			out, err := redistest.Do(n.Addr(), "SCRIPT", "EXISTS", sha)
			require.NoError(t, err)
			require.Equal(t, "1", out, "script missing on %s after Load", n.Addr())
		}
	})

	t.Run("master-down", func(t *testing.T) {
		fresh := mustLog(t, c, redis.Options{Prefix: "down", Timeout: 300 * time.Millisecond}, redis.Rule{Limit: 1, Window: time.Hour})
		open := mustLog(t, c, redis.Options{Prefix: "down-open", Timeout: 300 * time.Millisecond, OnError: redis.FailOpen}, redis.Rule{Limit: 1, Window: time.Hour})
		bkt, err := redis.NewBuckets(c, testOptions(redis.Options{Prefix: "down-bkt", Timeout: 300 * time.Millisecond, OnError: redis.FallBack,
			Fallback: []redis.Rule{{Limit: 1, Window: time.Hour}}}), redis.Rule{Limit: 1, Window: time.Hour, Precision: time.Minute})
		require.NoError(t, err)
		down := cl.Nodes[0]
		down.Stop()
		ok, failed := 0, 0
		for i := range 30 {
			k := fmt.Sprintf("after-%d", i)
			rk, err := redis.RedisKey(fresh, k)
			require.NoError(t, err)
			slot, err := redistest.Do(cl.Nodes[1].Addr(), "CLUSTER", "KEYSLOT", rk)
			require.NoError(t, err)
			owner := slotOwner(t, cl.Nodes[1].Addr(), slot)
			d, err := fresh.AllowN(t.Context(), k, now, 1)
			if owner == down.Addr() {
				require.Error(t, err, "key %q lives on the stopped master", k)
				require.False(t, d.Allowed)
				require.Equal(t, redis.FromError, d.Source)
				dO, errO := open.AllowN(t.Context(), k, now, 1)
				require.NoError(t, errO)
				require.True(t, dO.Allowed)
				require.Equal(t, redis.FromFailOpen, dO.Source)
				require.Error(t, dO.Err)
				for i, want := range []bool{true, false} { // the fallback's limit is 1
					dB, errB := bkt.AllowN(t.Context(), k, now, 1)
					require.NoError(t, errB)
					require.Equal(t, redis.FromFallback, dB.Source)
					require.Equal(t, want, dB.Allowed, "buckets key %q call %d", k, i)
				}
				failed++
			} else {
				require.NoError(t, err, "key %q lives on a running master", k)
				require.True(t, d.Allowed)
				for i, want := range []bool{true, false} {
					dB, errB := bkt.AllowN(t.Context(), k, now, 1)
					require.NoError(t, errB)
					require.Equal(t, redis.FromRedis, dB.Source)
					require.Equal(t, want, dB.Allowed, "buckets key %q call %d", k, i)
				}
				ok++
			}
		}
		require.Positive(t, ok)
		require.Positive(t, failed)
		t.Logf("master %s stopped: %d keys failed closed, %d decided normally", down.Addr(), failed, ok)
	})
}

// slotOwner returns the address of the master that serves slot, from
// CLUSTER SHARDS-free CLUSTER NODES output.
func slotOwner(t *testing.T, addr, slot string) string {
	t.Helper()
	out, err := redistest.Do(addr, "CLUSTER", "NODES")
	require.NoError(t, err)
	s, _ := strconv.Atoi(slot)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.Contains(f[2], "master") {
			continue
		}
		for _, r := range f[8:] {
			lo, hi, found := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if found {
				b, err2 = strconv.Atoi(hi)
			}
			if errors.Join(err1, err2) == nil && a <= s && s <= b {
				return strings.Split(f[1], "@")[0]
			}
		}
	}
	t.Fatalf("no master serves slot %s:\n%s", slot, out)
	return ""
}

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// keySlot is the hash slot of a Redis key, as Redis Cluster computes it: the
// CRC16 (XMODEM) of the key's hash tag (the bytes between the first "{" and
// the next "}", when there are any) or of the whole key, modulo 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crcSlot(key)
}

// crcSlot is the CRC16 (XMODEM) of all of s, modulo 16384: the slot of a key
// without a hash tag.
func crcSlot(key string) int {
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}

// TestClusterReshard moves the slot of two keys (an exact log's and a
// window's) from one master to another in the middle of their use, as
// redis-cli --cluster reshard does: the slot marked migrating and importing,
// the keys moved with MIGRATE, the slot given to its new master. Decisions go
// on through every step with no error, following ASK (to a master that has
// never run the scripts) and then MOVED, on state that moved with the keys
// (value and expiry): exactly the limit is admitted in all, then refused.
func TestClusterReshard(t *testing.T) {
	cl := redistest.StartCluster(t)
	gc, c := clusterClient(t, cl)
	const limit = 20
	rule := redis.Rule{Limit: limit, Window: time.Hour}
	lg := mustLog(t, c, redis.Options{Prefix: "rs"}, rule)
	win := mustWindow(t, c, redis.Options{Prefix: "rs"}, rule)
	ls := []*redis.Limiter{lg, win}
	rks := []string{mustKey(t, lg, "{mv}a"), mustKey(t, win, "{mv}b")}
	// A group of the log and a second log, on keys of the same tag.
	lg2 := mustLog(t, c, redis.Options{Prefix: "rs2"}, rule)
	g, err := redis.NewGroup(lg, lg2)
	require.NoError(t, err)
	grk := mustKey(t, lg2, "{mv}c")
	any := cl.Nodes[0].Addr()
	slot, err := redistest.Do(any, "CLUSTER", "KEYSLOT", rks[0])
	require.NoError(t, err)
	slot2, err := redistest.Do(any, "CLUSTER", "KEYSLOT", rks[1])
	require.NoError(t, err)
	require.Equal(t, slot, slot2)
	var src, dst *redistest.Server
	owner := slotOwner(t, any, slot)
	for _, n := range cl.Nodes {
		if n.Addr() == owner {
			src = n
		} else if dst == nil {
			dst = n
		}
	}
	require.NotNil(t, src)
	id := func(s *redistest.Server) string {
		out, err := redistest.Do(s.Addr(), "CLUSTER", "MYID")
		require.NoError(t, err)
		return out
	}
	do := func(s *redistest.Server, args ...string) {
		t.Helper()
		out, err := redistest.Do(s.Addr(), args...)
		require.NoError(t, err)
		require.NotContains(t, out, "ERR", "%v on %s", args, s.Addr())
	}
	admitted := make([]int, len(ls))
	calls := func(step string, count int) {
		t.Helper()
		for i, l := range ls {
			for range count {
				d, err := l.AllowN(t.Context(), []string{"{mv}a", "{mv}b"}[i], time.Time{}, 1)
				require.NoError(t, err, "%s: limiter %d", step, i)
				require.Equal(t, redis.FromRedis, d.Source)
				require.Equal(t, admitted[i] < limit, d.Allowed, "%s: limiter %d after %d admissions", step, i, admitted[i])
				if d.Allowed {
					admitted[i]++
				}
			}
		}
	}

	calls("before", 5)
	d, err := lg2.AllowN(t.Context(), "{mv}c", time.Time{}, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	do(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", id(src))
	do(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", id(dst))
	calls("migrating, keys on the old master", 5)
	host, port, _ := strings.Cut(dst.Addr(), ":")
	migrate := func(keys ...string) {
		do(src, append([]string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}, keys...)...)
	}
	// The log's key moves first: a group of it and a key still on the old
	// master cannot run on either (Redis's TRYAGAIN), and writes nothing.
	migrate(rks[0])
	values := func() []string {
		var out []string
		for _, rk := range append(rks, grk) {
			v, err := gc.Get(t.Context(), rk).Result() // following ASK
			require.NoError(t, err)
			out = append(out, v)
		}
		return out
	}
	before := values()
	d, err = g.AllowN(t.Context(), []string{"{mv}a", "{mv}c"}, time.Time{}, 1)
	require.ErrorContains(t, err, "TRYAGAIN")
	require.Equal(t, redis.FromError, d.Source)
	require.Equal(t, before, values(), "a group split by the migration wrote")
	calls("migrating, the log's key on the new master (ASK)", 5)
	migrate(rks[1], grk)
	calls("migrating, every key on the new master (ASK)", 5)
	for _, n := range cl.Nodes {
		do(n, "CLUSTER", "SETSLOT", slot, "NODE", id(dst))
	}
	calls("moved (MOVED)", 10)
	require.Equal(t, []int{limit, limit}, admitted)
	d, err = g.AllowN(t.Context(), []string{"{mv}a", "{mv}c"}, time.Time{}, 1)
	require.NoError(t, err)
	require.False(t, d.Allowed, "a group with a full log")
	// The old master answered with both redirections, and the new one ran
	// the scripts only after telling the client it lacked them.
	errs, err := redistest.Do(src.Addr(), "INFO", "errorstats")
	require.NoError(t, err)
	require.Contains(t, errs, "errorstat_ASK:count=")
	require.Contains(t, errs, "errorstat_MOVED:count=")
	errs, err = redistest.Do(dst.Addr(), "INFO", "errorstats")
	require.NoError(t, err)
	require.Contains(t, errs, "errorstat_NOSCRIPT:count=")
	for _, rk := range rks {
		n, err := redistest.Do(dst.Addr(), "EXISTS", rk)
		require.NoError(t, err)
		require.Equal(t, "1", n, "%s on the new master", rk)
		ttl, err := redistest.Do(dst.Addr(), "PTTL", rk)
		require.NoError(t, err)
		ms, err := strconv.Atoi(ttl)
		require.NoError(t, err)
		require.Positive(t, ms, "%s keeps its expiry", rk)
	}
}

// TestClusterFailover: on a cluster whose masters each have a replica, the
// master of two keys (an exact log's and a window's) crashes once its replica
// has their state. Until the replica is promoted (after the nodes' timeout)
// and the client has learnt of it, their decisions fail closed; then they go
// on on the promoted replica with the state it had: exactly the limit is
// admitted in all. A key of another master is decided by Redis throughout.
// On the cluster client, go-redis learns of the promotion because a failed
// decision asks it to reload its map of the slots (without that, the
// decisions still failed 30 s after the crash, when the test gave up). The
// autopipeliner offers no way to ask, so there the client's periodic reload
// does it, set to 2 s. A master that hangs (SIGSTOP) rather than crashes
// makes decisions end at their timeout, and they follow the promotion too.
func TestClusterFailover(t *testing.T) {
	cl := redistest.StartClusterReplicas(t)
	_, plain := clusterClient(t, cl)
	gc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true, ClusterStateReloadInterval: 2 * time.Second})
	t.Cleanup(func() { _ = gc.Close() })
	ap, err := gc.AsyncAutoPipeline()
	require.NoError(t, err)
	t.Cleanup(func() { _ = ap.Close() })
	apc, err := redis.NewGoRedis(ap)
	require.NoError(t, err)
	crashed := map[string]bool{}
	crash := (*redistest.Server).Stop
	t.Run("client", func(t *testing.T) { clusterFailover(t, cl, plain, "cf", crashed, crash) })
	t.Run("autopipeliner", func(t *testing.T) { clusterFailover(t, cl, apc, "cfap", crashed, crash) })
	// A master that hangs instead (SIGSTOP): decisions end at their
	// timeout, not at a refused connection, and follow the promotion all
	// the same.
	t.Run("client-hung", func(t *testing.T) { clusterFailover(t, cl, plain, "cfh", crashed, (*redistest.Server).Freeze) })
}

// clusterFailover is TestClusterFailover on client c, its keys under prefix:
// fail (crash or freeze) a master that is not in crashed, and record it there.
func clusterFailover(t *testing.T, cl *redistest.Cluster, c redis.Client, prefix string, crashed map[string]bool, fail func(*redistest.Server)) {
	const limit = 20
	rule := redis.Rule{Limit: limit, Window: time.Hour}
	o := redis.Options{Prefix: prefix, Timeout: time.Second}
	ls := []*redis.Limiter{mustLog(t, c, o, rule), mustWindow(t, c, o, rule)}
	byAddr := map[string]*redistest.Server{}
	live := ""
	for _, n := range cl.Nodes {
		byAddr[n.Addr()] = n
		if !crashed[n.Addr()] && live == "" {
			live = n.Addr()
		}
	}
	nodes, err := redistest.Do(live, "CLUSTER", "NODES")
	require.NoError(t, err)
	// replicaOf returns the live replica of the master whose id is id.
	replicaOf := func(id string) *redistest.Server {
		for _, line := range strings.Split(nodes, "\n") {
			if f := strings.Fields(line); len(f) > 3 && strings.Contains(f[2], "slave") && !strings.Contains(f[2], "fail") && f[3] == id {
				return byAddr[strings.Split(f[1], "@")[0]]
			}
		}
		return nil
	}
	// A key whose master has a replica, and a key of another master.
	var key, other, owner string
	var replica *redistest.Server
	for i := 0; key == "" || other == ""; i++ {
		if i == 10_000 {
			t.Fatalf("no key whose master has a live replica, or none of another master:\n%s", nodes)
		}
		k := "k" + strconv.Itoa(i)
		slot, err := redistest.Do(live, "CLUSTER", "KEYSLOT", mustKey(t, ls[0], k))
		require.NoError(t, err)
		o := slotOwner(t, live, slot)
		switch {
		case key == "":
			id, err := redistest.Do(o, "CLUSTER", "MYID")
			require.NoError(t, err)
			if r := replicaOf(id); r != nil {
				key, owner, replica = k, o, r
			}
		case o != owner:
			other = k
		}
	}
	master := byAddr[owner]

	for _, l := range ls {
		for range limit / 2 {
			d, err := l.AllowN(t.Context(), key, time.Time{}, 1)
			require.NoError(t, err)
			require.True(t, d.Allowed)
		}
	}
	want := replOffset(t, master)
	require.Eventually(t, func() bool { return replOffset(t, replica) >= want }, 10*time.Second, 10*time.Millisecond,
		"the replica has the keys' state")

	fail(master)
	crashed[owner] = true
	start := time.Now()
	admitted := []int{limit / 2, limit / 2}
	failed, otherCalls := 0, 0
	var firstOK time.Duration
	for i := 0; admitted[0] < limit || admitted[1] < limit; i++ {
		l := ls[i%2]
		d, err := l.AllowN(t.Context(), key, time.Time{}, 1)
		if err != nil {
			require.Equal(t, redis.FromError, d.Source)
			require.Less(t, time.Since(start), 30*time.Second, "still failing: %v", err)
			failed++
			time.Sleep(20 * time.Millisecond)
		} else {
			require.Equal(t, redis.FromRedis, d.Source)
			require.True(t, d.Allowed, "limiter %d after %d admissions", i%2, admitted[i%2])
			admitted[i%2]++
			if firstOK == 0 {
				firstOK = time.Since(start)
			}
		}
		if otherCalls < 3*limit/2 {
			d, err := ls[0].AllowN(t.Context(), other, time.Time{}, 0)
			require.NoError(t, err, "a key of another master, %v after the crash", time.Since(start))
			require.Equal(t, redis.FromRedis, d.Source)
			otherCalls++
		}
	}
	for i, l := range ls {
		d, err := l.AllowN(t.Context(), key, time.Time{}, 1)
		require.NoError(t, err)
		require.False(t, d.Allowed, "limiter %d: a call past the limit", i)
	}
	role, err := redistest.Do(replica.Addr(), "ROLE")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(role, "master"), "the replica promoted: %s", role)
	t.Logf("calls that failed during the failover: %d; the first decision by Redis %v after the master failed", failed, firstOK)
}

// replOffset is the replication offset of s: on a master, how far its
// replication stream goes; on a replica, how much of it the replica has
// applied.
func replOffset(t *testing.T, s *redistest.Server) int {
	t.Helper()
	info, err := redistest.Do(s.Addr(), "INFO", "replication")
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "master_repl_offset:"); ok {
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no master_repl_offset in %s", info)
	return 0
}
