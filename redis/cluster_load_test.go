package redis_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// TestClusterFailoverUnderLoad is TestSentinelFailoverUnderLoad on Redis
// Cluster (three masters with a replica each): 24 goroutines decide
// continuously, with weighted calls on the server's clock on two keys of
// each master, on an exact log and a window, each under every failure
// policy and with a rule of an hour and one of 100 ms, while a master fails
// and the cluster promotes its replica: first a master crashed (SIGKILL),
// then, on the same cluster, another one frozen (SIGSTOP, as a partition
// would leave it). From the callers' side, for each (checkFailover):
//
//   - every call has one answer, an error only under FailClosed, and the
//     policy answers only calls on the failed master's keys that ended after
//     the failure: the other masters' keys are decided by Redis throughout;
//   - the failed master's keys resume on the promoted replica: the first
//     decision there ends within a bound of the promotion, and the policy
//     answers no call begun after that decision ended. The bound is 1 s
//     after a crash and 4 s after a freeze. go-redis reloads the slots' map
//     with no deadline of its own, so a reload that asks the frozen node
//     first waits for it as long as the cluster client lets it: its
//     ReadTimeout (3 s by default), its PoolTimeout (4 s) or, once the
//     node's listen backlog is full (this load fills it within seconds),
//     its dials (DialerRetries, 5, of DialTimeout, 5 s, each). The client
//     here has each timeout at 1 s and one dial per try, all above the
//     limiters' Timeout, which still ends every decision;
//   - Redis's admissions keep the kind's bound in every window of the
//     100 ms rule, and within limit + (A_old - R) on each failed master's
//     key for the hour's rule, R read from the replica after the failure
//     and before its promotion;
//   - with the hour's rule, the new master holds, on each failed master's
//     key, what the replica held plus what it admitted to the callers, and
//     at most the cost of the calls the policy answered besides
//     (checkUnseen);
//   - nothing panics, and no goroutine is left once the client is closed.
func TestClusterFailoverUnderLoad(t *testing.T) {
	base := runtime.NumGoroutine()
	cl := redistest.StartClusterReplicas(t)
	gc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true,
		ReadTimeout: time.Second, PoolTimeout: time.Second, DialTimeout: time.Second, DialerRetries: 1})
	defer func() { _ = gc.Close() }()
	c, err := redis.NewGoRedis(gc)
	require.NoError(t, err)
	failed := map[string]bool{}
	t.Run("crash", func(t *testing.T) {
		clusterFailoverUnderLoad(t, cl, c, "crash", failed, (*redistest.Server).Stop, time.Second)
	})
	t.Run("freeze", func(t *testing.T) {
		clusterFailoverUnderLoad(t, cl, c, "freeze", failed, (*redistest.Server).Freeze, 4*time.Second)
	})
	require.NoError(t, gc.Close())
	if !assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= base+1 }, 5*time.Second, 20*time.Millisecond) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d after closing the client:\n%s", base, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}

// clusterFailoverUnderLoad is one failover of TestClusterFailoverUnderLoad
// on c: fail (crash or freeze) a master that is not in down and has a live
// replica, under the load, and record it in down.
func clusterFailoverUnderLoad(t *testing.T, cl *redistest.Cluster, c redis.Client, prefix string, down map[string]bool,
	fail func(*redistest.Server), resumeBound time.Duration) {
	const timeout = 300 * time.Millisecond
	byAddr := map[string]*redistest.Server{}
	live := ""
	for _, n := range cl.Nodes {
		byAddr[n.Addr()] = n
		if !down[n.Addr()] && live == "" {
			live = n.Addr()
		}
	}
	nodes, err := redistest.Do(live, "CLUSTER", "NODES")
	require.NoError(t, err)
	// The masters that serve slots, by id, and a live replica of each.
	masters, replicas := map[string]string{}, map[string]*redistest.Server{}
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) < 8 || strings.Contains(f[2], "fail"):
		case strings.Contains(f[2], "master") && len(f) > 8:
			masters[f[0]] = strings.Split(f[1], "@")[0]
		case strings.Contains(f[2], "slave"):
			replicas[f[3]] = byAddr[strings.Split(f[1], "@")[0]]
		}
	}
	require.Len(t, masters, 3, nodes)
	var victim string
	var replica *redistest.Server
	for id, addr := range masters {
		if r := replicas[id]; r != nil && (victim == "" || addr < victim) {
			victim, replica = addr, r
		}
	}
	require.NotEmpty(t, victim, "no master with a live replica:\n%s", nodes)

	// Two keys on each master.
	ls := failoverLimiters(t, c, prefix+"-", timeout, 6)
	var keys []string
	var failed []bool
	per := map[string]int{}
	for i := 0; len(keys) < 6; i++ {
		require.Less(t, i, 1000, "no two keys on each master")
		k := "k" + strconv.Itoa(i)
		owner := slotOwner(t, live, strconv.Itoa(keySlot(mustKey(t, ls[0].l, k))))
		if per[owner] < 2 {
			per[owner]++
			keys = append(keys, k)
			failed = append(failed, owner == victim)
		}
	}

	// A client on the replica alone (READONLY), to read what it holds.
	rgc := goredis.NewClient(&goredis.Options{Addr: replica.Addr(), ContextTimeoutEnabled: true,
		OnConnect: func(ctx context.Context, cn *goredis.Conn) error { return cn.ReadOnly(ctx).Err() }})
	defer func() { _ = rgc.Close() }()
	rc, err := redis.NewGoRedis(rgc)
	require.NoError(t, err)

	load := startFailoverLoad(t, ls, keys, failed)
	defer load.Stop()
	time.Sleep(400 * time.Millisecond)
	var tm failoverTimes
	tm.killing = time.Now()
	fail(byAddr[victim])
	down[victim] = true
	tm.killed = time.Now()
	// What the replica holds once it has applied all that the old master
	// sent (its offset no longer moves), read before its promotion.
	for prev, deadline := -1, time.Now().Add(time.Second); ; {
		off := replOffset(t, replica)
		if off == prev || time.Now().After(deadline) {
			break
		}
		prev = off
		time.Sleep(50 * time.Millisecond)
	}
	tm.promote = awaitPromotion(t, load, ls, rc, replica, keys, failed)
	load.waitResumed(t)
	all := time.Now()
	time.Sleep(500 * time.Millisecond) // the load goes on past every limiter's resumption
	load.Stop()

	tm.settled = load.resumed(tm.killed)
	t.Logf("master %s failed, replica %s promoted %v later; the first decision on the new master ended %v after the promotion, every limiter had 20 by %v",
		victim, replica.Addr(), tm.promote.Sub(tm.killed).Round(time.Millisecond),
		tm.settled.Sub(tm.promote).Round(time.Millisecond), all.Sub(tm.promote).Round(time.Millisecond))
	require.Less(t, tm.settled.Sub(tm.promote), resumeBound, "decisions resumed on the new master")
	for _, fl := range ls {
		checkFailover(t, fl, failed, tm)
		if u := checkUnseen(t, fl, keys, failed, tm); u > 0 {
			t.Logf("%s: the new master holds %d for calls the policy answered", fl.name, u)
		}
	}

	// The failed master's keys live on the new master, which decides them.
	checkOnNewMaster(t, ls, replica, keys, failed)
}
