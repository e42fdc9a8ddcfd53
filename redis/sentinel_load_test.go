package redis_test

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// TestSentinelFailoverUnderLoad: goroutines decide continuously (weighted
// calls on three keys, on the server's clock) on an exact log and a window,
// each under every failure policy and with a rule of an hour and one of
// 100 ms, while the master Sentinel names is killed and its replica
// promoted. From the callers' side (checkFailover):
//
//   - every call has one answer: an error only under FailClosed, with Source
//     FromError and nothing admitted; otherwise Redis's decision (no Err) or
//     the policy's (FailOpen admits, the fallback decides, both with Err
//     set), and the policy answers only calls that ended after the kill;
//   - every policy answered some calls (the outage was seen), and the
//     fallback admitted at most its own limit per window per key;
//   - decisions resume on the new master: every limiter gets Redis's
//     answers again, and only those from 1.3 s after the promotion on (the
//     pool's probe after dial failures runs once a second);
//   - with the 100 ms rule, shorter than the outage (checked: from the kill
//     to the new master's first admission), Redis's admissions keep the
//     kind's bound in every window, across the failover;
//   - with the hour's rule, Redis admits across the failover at most the
//     limit plus what the old master admitted and the replica did not hold
//     when the master died: T <= limit + (A_old - R), where A_old is the
//     cost Redis admitted for calls that began before the kill and R the
//     cost the replica held (read from it before the promotion); so at most
//     twice the limit ("Failure policy" in docs/redis.md);
//   - with the hour's rule, the new master holds, on each key, what the
//     replica held plus what it admitted to the callers, and at most the
//     cost of the calls the policy answered besides (checkUnseen);
//   - no goroutine is left once the clients are closed, and nothing panics.
//
// It runs on the failover client ("client") and on its deferred
// autopipeliner (the failover client is a *goredis.Client, and NewGoRedis
// takes what its AsyncAutoPipeline returns). The autopipeliner follows the
// promotion with no option of its own: it sends its batches over the
// failover client's pools, which the client empties when Sentinel names the
// new master, and whose dialler asks Sentinel where the master is. With the
// client's default options ("autopipeliner") it differs from the client in
// two ways, logged here (they are go-redis's, and their size depends on
// when Sentinel promotes): while the master is down a decision does not fail
// at its refused dial but waits for its timeout (the batch dials again on the
// autopipeliner's own context, DialerRetries times, 100 ms apart), so the
// policy answers late and rarely; and some of the decisions so abandoned are
// still queued at the promotion and are applied on the new master, which
// then holds cost that no caller saw admitted. With DialerRetries: 1
// ("autopipeliner-dial-once") its decisions fail at once, as the client's do.
func TestSentinelFailoverUnderLoad(t *testing.T) {
	t.Run("client", func(t *testing.T) {
		o := sentinelFailoverUnderLoad(t, goredis.FailoverOptions{}, false)
		require.Less(t, o.late*10, o.policy, "the policy's answers that waited for the timeout")
	})
	t.Run("autopipeliner", func(t *testing.T) {
		// How late the policy answers and how much abandoned cost lands
		// on the new master depend on go-redis's dialling and on how soon
		// Sentinel promotes, not on this module: logged, not required
		// (the bounds above are).
		o := sentinelFailoverUnderLoad(t, goredis.FailoverOptions{}, true)
		t.Logf("default dial retries: %d of %d policy answers at the timeout; %d abandoned on the new master",
			o.late, o.policy, o.unseen)
	})
	t.Run("autopipeliner-dial-once", func(t *testing.T) {
		o := sentinelFailoverUnderLoad(t, goredis.FailoverOptions{DialerRetries: 1}, true)
		require.Less(t, o.late*10, o.policy, "the policy's answers that waited for the timeout")
	})
}

// sentinelOutcome is what a run of sentinelFailoverUnderLoad saw beyond
// its checks.
type sentinelOutcome struct {
	// policy counts the calls the policy answered, late those of them
	// that took the whole timeout.
	policy, late int
	// unseen is the cost the new master holds, over the hour's rules and
	// the keys, for calls the policy answered (checkUnseen).
	unseen int64
}

// sentinelFailoverUnderLoad is TestSentinelFailoverUnderLoad on a failover
// client with the options o (its master and Sentinel filled in), or on its
// deferred autopipeliner if autopipeline is set.
func sentinelFailoverUnderLoad(t *testing.T, o goredis.FailoverOptions, autopipeline bool) sentinelOutcome {
	base := runtime.NumGoroutine()
	primary, replica, sen := startSentinelPair(t)

	o.MasterName, o.SentinelAddrs, o.ContextTimeoutEnabled = "mymaster", []string{sen.Addr()}, true
	gc := goredis.NewFailoverClient(&o)
	defer func() { _ = gc.Close() }()
	var under goredis.UniversalClient = gc
	var ap *goredis.AutoPipeliner
	if autopipeline {
		var err error
		ap, err = gc.AsyncAutoPipeline()
		require.NoError(t, err)
		defer func() { _ = ap.Close() }()
		under = ap
	}
	c, err := redis.NewGoRedis(under)
	require.NoError(t, err)
	// A client on the replica alone, to read what it holds.
	rgc := goredis.NewClient(&goredis.Options{Addr: replica.Addr(), ContextTimeoutEnabled: true})
	defer func() { _ = rgc.Close() }()
	rc, err := redis.NewGoRedis(rgc)
	require.NoError(t, err)

	const timeout = 300 * time.Millisecond // less than Sentinel's 500 ms
	keys := []string{"k0", "k1", "k2"}
	failed := []bool{true, true, true}
	ls := failoverLimiters(t, c, "", timeout, len(keys))
	load := startFailoverLoad(t, ls, keys, failed)
	defer load.Stop()

	time.Sleep(400 * time.Millisecond)
	var tm failoverTimes
	tm.killing = time.Now()
	primary.Stop()
	tm.killed = time.Now()
	// What the replica holds, read before Sentinel can promote it.
	tm.promote = awaitPromotion(t, load, ls, rc, replica, keys, failed)
	t.Logf("replica promoted %v after the kill", tm.promote.Sub(tm.killed).Round(time.Millisecond))
	load.waitResumed(t)
	t.Logf("every limiter decided by the new master %v after the promotion", time.Since(tm.promote).Round(time.Millisecond))
	// go-redis's pool, after a run of dial failures, answers with the last
	// dial error and probes once a second: so a call can still fail up to a
	// second after the promotion, while others are decided on the new
	// master. The load runs past that.
	tm.settled = tm.promote.Add(1300 * time.Millisecond)
	time.Sleep(max(time.Until(tm.settled)+500*time.Millisecond, 400*time.Millisecond))
	load.Stop()

	t.Logf("first decision of the new master %v after the promotion",
		load.resumed(tm.killed).Sub(tm.promote).Round(time.Millisecond))
	var out sentinelOutcome
	for _, fl := range ls {
		checkFailover(t, fl, failed, tm)
		out.unseen += checkUnseen(t, fl, keys, failed, tm)
		for _, fc := range fl.calls {
			if fc.d.Source != redis.FromRedis {
				out.policy++
				if fc.end.Sub(fc.start) >= timeout {
					out.late++
				}
			}
		}
	}
	t.Logf("the policy answered %d calls, %d of them at the timeout; the new master holds %d for calls the policy answered",
		out.policy, out.late, out.unseen)

	// Each key lives on the new master, which decides it, and Sentinel
	// names it.
	checkOnNewMaster(t, ls, replica, keys, failed)
	addr, err := redistest.Do(sen.Addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1\n"+strconv.Itoa(replica.Port), addr)

	if ap != nil {
		require.NoError(t, ap.Close())
	}
	require.NoError(t, gc.Close())
	require.NoError(t, rgc.Close())
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= base+1 }, 5*time.Second, 20*time.Millisecond,
		"goroutines: %d before, %d after closing the clients", base, runtime.NumGoroutine())
	return out
}
