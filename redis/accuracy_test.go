package redis_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/internal/oracle"
	accuracy "github.com/slidelimit/slidelimit/internal/replay"
	"github.com/slidelimit/slidelimit/redis"
)

// realTimeDecider decides n units for key now, on its own clock (the
// server's or the client's), and returns whether it admitted them and, when
// it knows, the instant it decided at (ours return it; for the peers it is
// the zero Time and the replay takes the middle of the call).
type realTimeDecider func(ctx context.Context, key string, n int) (ok bool, at time.Time, err error)

// realTimeContender is one limiter in the real-time replay; model is the
// two-counter layout its decisions are also judged against, if any.
type realTimeContender struct {
	name   string
	model  func(oracle.Rule) oracle.Model
	decide realTimeDecider
}

// TestAccuracyRealTime replays the accuracy workloads of the in-process
// comparison (internal/replay: 100 per second) in real time through our
// Redis limiters and the Redis peers on one local server, each on its own
// keys, and judges every decision on the limiter's own history as the
// in-process replay does: against the exact sliding log, and for the
// two-counter limiters against their formula in their window layout. The
// peers decide on the server's clock (redis_rate) or the client's (ulule,
// httprate-redis), which cannot be simulated, hence real time; a peer's
// decision is placed at the middle of its call (the server and the client
// share this machine's clock), ours at the instant the script returns.
//
// It asserts that ours are exact: no decision of the log off the log, none
// of the window off its formula. It takes about four minutes, so it runs
// only when REDIS_ACCURACY names a file, where it writes the table
// (bench.sh's ACCURACY=1 sets it); REDIS_ACCURACY_WORKLOADS (comma-separated
// names) replays only those workloads.
//
// Workloads whose calls share an instant (bursts) are replayed for one
// limiter at a time, so that a burst is as short as one client can make it;
// the others for all limiters at once. stale-3x is left out: its stale
// instants only mean something to a limiter that is given instants.
func TestAccuracyRealTime(t *testing.T) {
	out := os.Getenv("REDIS_ACCURACY")
	if out == "" {
		t.Skip("set REDIS_ACCURACY=<file> to replay the accuracy workloads in real time (about four minutes)")
	}
	_, gc, c := standalone(t)
	rule := redis.Rule{Limit: accuracy.Limit, Window: accuracy.Window}
	ours := func(l *redis.Limiter) realTimeDecider {
		return func(ctx context.Context, key string, n int) (bool, time.Time, error) {
			d, err := l.AllowN(ctx, key, time.Time{}, n)
			return d.Allowed, d.At, err
		}
	}
	rr := redis_rate.NewLimiter(gc)
	peer := func(d peerDecider) realTimeDecider {
		return func(ctx context.Context, key string, n int) (bool, time.Time, error) {
			ok, err := d(ctx, key, n)
			return ok, time.Time{}, err
		}
	}
	ul, err := ululeRedis(gc, accuracy.Limit, accuracy.Window)
	require.NoError(t, err)
	cs := []realTimeContender{
		{name: "slidelimit log", decide: ours(mustLog(t, c, redis.Options{Prefix: "acc"}, rule))},
		{name: "slidelimit window", model: anchored, decide: ours(mustWindow(t, c, redis.Options{Prefix: "acc"}, rule))},
		{name: "redis_rate (GCRA, burst 100)", decide: func(ctx context.Context, key string, n int) (bool, time.Time, error) {
			res, err := rr.AllowN(ctx, key, redis_rate.PerSecond(accuracy.Limit), n)
			if err != nil {
				return false, time.Time{}, err
			}
			return res.Allowed > 0, time.Time{}, nil
		}},
		{name: "httprate-redis", model: grid, decide: peer(httprateRedis(gc, accuracy.Limit, accuracy.Window))},
		{name: "ulule (fixed window)", decide: peer(ul)},
	}

	type cell struct {
		s     accuracy.Score
		ratio float64
	}
	var mu sync.Mutex
	results := map[string]map[string]cell{} // workload, contender
	var order []string
	for _, w := range accuracy.Workloads() {
		if w.Name == "stale-3x" || !selected(w.Name) {
			continue
		}
		order = append(order, w.Name)
		results[w.Name] = map[string]cell{}
		run := func(ct realTimeContender, epoch time.Time) {
			s, ratio := replayRealTime(t, ct, w, epoch)
			mu.Lock()
			results[w.Name][ct.name] = cell{s, ratio}
			mu.Unlock()
		}
		if bursty(w) {
			for _, ct := range cs {
				run(ct, nextEpoch())
			}
			continue
		}
		var wg sync.WaitGroup
		epoch := nextEpoch()
		for _, ct := range cs {
			wg.Go(func() { run(ct, epoch) })
		}
		wg.Wait()
	}

	var b strings.Builder
	fmt.Fprintf(&b, "| workload |")
	for _, ct := range cs {
		fmt.Fprintf(&b, " %s |", ct.name)
	}
	fmt.Fprintf(&b, "\n| --- |%s\n", strings.Repeat(" --- |", len(cs)))
	for _, name := range order {
		fmt.Fprintf(&b, "| %s |", name)
		for _, ct := range cs {
			r := results[name][ct.name]
			ratio := fmt.Sprintf("%.2f", r.ratio)
			if r.ratio > 1 {
				ratio = "**" + ratio + "**"
			}
			fmt.Fprintf(&b, " %s (%d of %d) +%d −%d", ratio, r.s.Admitted, r.s.OracleAdmitted, r.s.LogOver, r.s.LogUnder)
			if ct.model != nil {
				fmt.Fprintf(&b, ", formula +%d −%d", r.s.FormulaOver, r.s.FormulaUnder)
			}
			fmt.Fprintf(&b, " |")
		}
		fmt.Fprintf(&b, "\n")
	}
	t.Log("\n" + b.String())
	require.NoError(t, os.WriteFile(out, []byte(b.String()), 0o644))

	for _, name := range order {
		log, win := results[name]["slidelimit log"].s, results[name]["slidelimit window"].s
		if log.Admitted == 0 || win.Admitted == 0 {
			t.Errorf("%s: nothing admitted (log %d, window %d): the replay did not run", name, log.Admitted, win.Admitted)
		}
		if log.LogOver+log.LogUnder != 0 {
			t.Errorf("%s: the log was off the exact log: +%d −%d", name, log.LogOver, log.LogUnder)
		}
		if win.FormulaOver+win.FormulaUnder != 0 {
			t.Errorf("%s: the window was off its formula: +%d −%d", name, win.FormulaOver, win.FormulaUnder)
		}
	}
}

// The two-counter layouts of the in-process replay (bench/accuracy): ours
// anchors its windows at an admission into an idle key, httprate's lie on a
// grid of whole windows (here whole seconds of the clock, as the epoch is).
func anchored(r oracle.Rule) oracle.Model {
	return oracle.NewTwoCounter(oracle.StaleToStart, oracle.AnchorIdle, r)
}

func grid(r oracle.Rule) oracle.Model {
	return oracle.NewTwoCounter(oracle.StaleToSeen, oracle.AnchorGrid, r)
}

// nextEpoch is the whole second of the clock at least one second away, so
// that the workloads' aligned edges fall on the fixed windows' edges and a
// replay starts on a quiet second.
func nextEpoch() time.Time { return time.Now().Truncate(time.Second).Add(2 * time.Second) }

// selected reports whether REDIS_ACCURACY_WORKLOADS, if set, names the
// workload.
func selected(name string) bool {
	only := os.Getenv("REDIS_ACCURACY_WORKLOADS")
	return only == "" || slices.Contains(strings.Split(only, ","), name)
}

// bursty reports whether calls of w share an instant.
func bursty(w accuracy.Workload) bool {
	for i := 1; i < len(w.Calls); i++ {
		if w.Calls[i].At == w.Calls[i-1].At {
			return true
		}
	}
	return false
}

// replayRealTime sends w's calls through ct at their instants after epoch,
// on a key of its own, and judges them; it returns the score and the largest
// admitted cost in any window over the limit.
func replayRealTime(t *testing.T, ct realTimeContender, w accuracy.Workload, epoch time.Time) (accuracy.Score, float64) {
	rule := oracle.R(accuracy.Limit, accuracy.Window)
	var model oracle.Model
	if ct.model != nil {
		model = ct.model(rule)
	}
	j := accuracy.NewJudge(model, rule)
	key := fmt.Sprintf("acc-%s-%d", w.Name, epoch.Unix())
	ctx := context.Background()
	for _, call := range w.Calls {
		time.Sleep(time.Until(epoch.Add(call.At)))
		before := time.Now()
		ok, at, err := ct.decide(ctx, key, call.N)
		if err != nil {
			t.Errorf("%s, %s: %v", ct.name, w.Name, err)
			return accuracy.Score{}, 0
		}
		if at.IsZero() {
			at = before.Add(time.Since(before) / 2)
		}
		off := int64(at.Sub(epoch))
		j.Decided(off, call.N, ok, off)
	}
	return j.Score, float64(oracle.MaxInWindow(j.Stamps(), int64(accuracy.Window))) / accuracy.Limit
}
