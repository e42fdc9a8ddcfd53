// Package replay holds the accuracy workloads, sequences of timed calls that
// target the weak spots of each family of rate limiters, and Judge, which
// scores a limiter's decisions on them against the exact models of package
// oracle. The in-process replay (bench/accuracy, on simulated time) and the
// Redis replay (on real time, redis/accuracy_test.go) share both, so that
// their tables mean the same thing.
package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Seed is the fixed seed of every random workload; the report prints it.
const Seed = 20261121

// Limit and Window are the configuration every workload is replayed against:
// 100 events in any window of one second.
const (
	Limit  = 100
	Window = time.Second
)

// Call is one arrival: it happens at At (after the replay's epoch) and asks for
// N. A caller that read its clock a little earlier presents At-Stale to the
// limiter (several goroutines reading the clock before they reach the
// limiter); the event still happens at At.
type Call struct {
	At    time.Duration
	Stale time.Duration
	N     int
}

// Presented is the instant the caller passes to AllowN.
func (c Call) Presented() time.Duration { return c.At - c.Stale }

// Workload is a named sequence of calls in non-decreasing At order.
type Workload struct {
	Name  string
	About string // what it is and whose weak spot it targets
	Calls []Call
}

// Workloads returns the replayed set. Every random one draws from its own
// PCG stream seeded with Seed, so the set is identical on every run.
func Workloads() []Workload {
	var ws []Workload
	ws = append(ws, Workload{
		Name:  "every-8ms",
		About: "one call every 8 ms for 10 s: 1.25x the limit, perfectly smooth",
		Calls: periodic(8*time.Millisecond, 8*time.Millisecond, 10*time.Second),
	})
	for i, load := range []float64{0.5, 1, 3, 10} {
		ws = append(ws, Workload{
			Name:  fmt.Sprintf("poisson-%gx", load),
			About: fmt.Sprintf("Poisson arrivals at %gx the limit for 20 s (seed %d, stream %d)", load, Seed, i+1),
			Calls: poisson(rand.New(rand.NewPCG(Seed, uint64(i+1))), load*Limit, 20*time.Second, 1, 0),
		})
	}
	edge := 2 * Window // an aligned window edge (the epoch is aligned)
	ws = append(ws, Workload{
		Name:  "edge-burst",
		About: "100 calls 1 ms before an aligned window edge, 100 calls 1 ms after: the fixed-window weak spot",
		Calls: append(burst(edge-time.Millisecond, 100), burst(edge+time.Millisecond, 100)...),
	})
	flood := burst(edge-Window, 1)
	flood = append(flood, burst(edge-time.Millisecond, 99)...)
	flood = append(flood, periodic(edge+time.Millisecond, time.Millisecond, edge+2*Window)...)
	ws = append(ws, Workload{
		Name: "edge-burst-flood",
		About: "one call 1 s before an aligned edge (it starts a window there for limiters that align on their " +
			"first admission), 99 calls 1 ms before the edge, then one call per ms for 2 s: the two-counter weak " +
			"spot (the estimate discounts the burst linearly while all of it is still in the window)",
		Calls: flood,
	})
	var onoff []Call
	for t := 500 * time.Millisecond; t < 10*time.Second; t += 600 * time.Millisecond {
		onoff = append(onoff, burst(t, 60)...)
	}
	ws = append(ws, Workload{
		Name:  "bursts-60-every-600ms",
		About: "60 calls at once every 600 ms: a token bucket refills between bursts and lets 120 into one window",
		Calls: onoff,
	})
	ws = append(ws, Workload{
		Name:  "idle-then-flood",
		About: "3 s idle, then one call per ms for 3 s: a full bucket plus its refill",
		Calls: periodic(3*time.Second, time.Millisecond, 6*time.Second),
	})
	ws = append(ws, Workload{
		Name:  "weighted-3x",
		About: fmt.Sprintf("Poisson arrivals of cost 1..10 (uniform), 3x the limit in cost, 20 s (seed %d, stream 10)", Seed),
		Calls: poisson(rand.New(rand.NewPCG(Seed, 10)), 3*Limit/5.5, 20*time.Second, 10, 0),
	})
	ws = append(ws, Workload{
		Name: "stale-3x",
		About: fmt.Sprintf("Poisson at 3x; each caller presents an instant up to 5 ms stale (uniform), "+
			"as goroutines that read the clock before reaching the limiter do (seed %d, stream 11)", Seed),
		Calls: poisson(rand.New(rand.NewPCG(Seed, 11)), 3*Limit, 20*time.Second, 1, 5*time.Millisecond),
	})
	return ws
}

func periodic(from, every, until time.Duration) []Call {
	var cs []Call
	for t := from; t < until; t += every {
		cs = append(cs, Call{At: t, N: 1})
	}
	return cs
}

func burst(at time.Duration, n int) []Call {
	cs := make([]Call, n)
	for i := range cs {
		cs[i] = Call{At: at, N: 1}
	}
	return cs
}

// poisson draws arrivals at rate per second for d; costs are uniform in
// 1..maxCost; each call's presented instant is up to stale earlier.
func poisson(r *rand.Rand, rate float64, d time.Duration, maxCost int, stale time.Duration) []Call {
	var cs []Call
	t := 0.0
	for {
		t += -math.Log(1-r.Float64()) / rate
		at := time.Duration(t * float64(time.Second))
		if at >= d {
			return cs
		}
		c := Call{At: at, N: 1}
		if maxCost > 1 {
			c.N = 1 + r.IntN(maxCost)
		}
		if stale > 0 {
			// Never before the epoch: every limiter starts there.
			c.Stale = min(time.Duration(r.Int64N(int64(stale))), at)
		}
		cs = append(cs, c)
	}
}
