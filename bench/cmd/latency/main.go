// Command latency measures the distribution of per-call latency (p50, p90,
// p99, p99.9, max) of one shared limiter called by G goroutines at once, on a
// quiet machine and under a background load that it starts and stops itself:
//
//	go run ./cmd/latency                      # quiet and loaded, G = 2 and 8
//	go run ./cmd/latency -load 0 -g 2         # quiet only, two goroutines
//	go run ./cmd/latency -json out/lat.json -img ../docs/img
//	go run ./cmd/latency -from out/lat.json -img ../docs/img  # plots again, measures nothing
//
// Every limiter is on its admit path (1024 per microsecond, so that nearly
// every call is admitted; multi and its twins add a second rule, 2^14 per
// 100 µs, also far above it). The keyed stores hold 100,000 "client-N" keys, limit 100 per second
// per key, and are called in uniformly random key order from a pregenerated
// sequence.
//
// How a call is timed: every k-th call (-every, 8 by default) of each
// goroutine is timed alone, between two monotonic clock readings; the other
// calls run untimed between them, so the timing adds two clock reads to one
// call in k. A timed call's latency includes one clock read's cost: the row
// "none" (an empty call timed the same way) shows that floor. GOMAXPROCS is
// G, as with go test -cpu G. The wall-clock time per call (wall time of the
// whole run divided by the calls of every goroutine, what RunParallel
// reports as ns/op) is given beside the percentiles.
//
// Open loop (-period P): the closed loop above under-reports stalls. A
// goroutine descheduled for a millisecond delays the one call it is in (and
// that call is timed only one time in k), while the calls it would have made
// meanwhile are never made (coordinated omission). With -period, each
// goroutine instead follows a schedule, call i intended to start at start +
// i*P: it spins until that instant (or starts at once when behind), and a
// call's latency is its end minus its intended start, so time the goroutine
// spent stalled, on its own or behind a lock held by a goroutine that was
// descheduled, counts in every call it delayed. Every call is timed. The
// period must leave room on a quiet machine (the "none" row and wall ns/call
// show how much), or every call reports the backlog.
//
// The background load (-load N) is a child process, this command re-executed
// with -burn N, running N goroutines that spin on arithmetic. The harness
// kills it when the measurement ends, when it fails, and on SIGINT or SIGTERM;
// the child also exits by itself as soon as its standard input (a pipe from
// the parent) closes, so it never outlives the harness.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Result is the distribution of one contender at one (G, load).
type Result struct {
	Impl       string  `json:"impl"`
	Kind       string  `json:"kind"` // "single" or "keyed"
	Goroutines int     `json:"goroutines"`
	Load       int     `json:"load"` // busy goroutines in the background process
	Runs       int     `json:"runs"`
	Samples    int     `json:"samples"` // timed calls over all runs
	WallNs     float64 `json:"wall_ns"` // median over runs of wall time per call
	P50        float64 `json:"p50"`     // each percentile: median over runs
	P90        float64 `json:"p90"`
	P99        float64 `json:"p99"`
	P999       float64 `json:"p999"`
	Max        float64 `json:"max"` // over every run
	Admitted   float64 `json:"admitted"`
	// PeriodNs is the open-loop schedule's period per goroutine (0: closed
	// loop, one call in k timed).
	PeriodNs int64 `json:"period_ns,omitempty"`
}

var base = time.Now()

func nanotime() int64 { return int64(time.Since(base)) }

func main() {
	gs := flag.String("g", "2,8", "comma-separated goroutine counts (GOMAXPROCS is set to each)")
	loads := flag.String("load", "0,2", "comma-separated background loads: busy goroutines in a child process (0: quiet)")
	total := flag.Int("calls", 1<<20, "calls per run, over all goroutines")
	every := flag.Int("every", 8, "time every k-th call of each goroutine (closed loop)")
	period := flag.Duration("period", 0, "open loop: each goroutine starts call i at start + i*period, and a call's latency runs from that instant (0: closed loop)")
	runs := flag.Int("runs", 3, "runs of each contender (interleaved)")
	keys := flag.Int("keys", 100_000, "keys in each keyed store")
	only := flag.String("only", "", "regexp: measure only the contenders it matches")
	noKeyed := flag.Bool("nokeyed", false, "leave out the keyed stores")
	jsonOut := flag.String("json", "", "write the results as JSON to this file")
	img := flag.String("img", "", "write latency plots (PNG) to this directory")
	from := flag.String("from", "", "measure nothing: print the tables and draw the plots of this JSON file (written by -json)")
	burn := flag.Int("burn", 0, "internal: run as the background load with this many busy goroutines")
	flag.Parse()
	if *burn > 0 {
		burnLoop(*burn)
		return
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "latency:", err)
		stopLoad()
		os.Exit(1)
	}
	if *from != "" {
		var results []Result
		b, err := os.ReadFile(*from)
		if err == nil {
			err = json.Unmarshal(b, &results)
		}
		if err != nil {
			fail(fmt.Errorf("-from: %w", err))
		}
		report(results, *every, "", *img, fail)
		return
	}
	gList, err := ints(*gs)
	if err != nil {
		fail(fmt.Errorf("-g: %w", err))
	}
	loadList, err := ints(*loads)
	if err != nil {
		fail(fmt.Errorf("-load: %w", err))
	}
	if *total <= 0 || *every <= 0 || *runs <= 0 || *keys <= 0 || *period < 0 {
		fail(fmt.Errorf("-calls, -every, -runs and -keys must be positive, -period not negative"))
	}
	if *period > 0 {
		*every = 1
	}
	re, err := regexp.Compile(*only)
	if err != nil {
		fail(fmt.Errorf("-only: %w", err))
	}
	var cs []contender
	for _, c := range singles() {
		if re.MatchString(c.name) {
			cs = append(cs, c)
		}
	}
	if !*noKeyed {
		for _, c := range keyedContenders(*keys) {
			if re.MatchString(c.name) {
				cs = append(cs, c)
			}
		}
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		stopLoad()
		os.Exit(130)
	}()

	if *period > 0 {
		fmt.Fprintf(os.Stderr, "latency: %s, %d CPUs, %d calls per run, open loop: one call per %v per goroutine, every call timed from its intended start, %d runs\n",
			runtime.Version(), runtime.NumCPU(), *total, *period, *runs)
	} else {
		fmt.Fprintf(os.Stderr, "latency: %s, %d CPUs, %d calls per run, one call in %d timed, %d runs\n",
			runtime.Version(), runtime.NumCPU(), *total, *every, *runs)
	}
	var results []Result
	for _, load := range loadList {
		if load > 0 {
			if err := startLoad(load); err != nil {
				fail(err)
			}
			time.Sleep(200 * time.Millisecond) // let the load reach every core
		}
		for _, g := range gList {
			fmt.Fprintf(os.Stderr, "latency: %d goroutines, background load %d: measuring %d contenders\n", g, load, len(cs))
			rs, err := measureAll(cs, g, load, *total, *every, *runs, *period)
			if err != nil {
				fail(err)
			}
			results = append(results, rs...)
		}
		stopLoad()
	}
	report(results, *every, *jsonOut, *img, fail)
}

// report prints the tables and the targets of results, and writes them as
// JSON to jsonOut and as plots to img, each unless "".
func report(results []Result, every int, jsonOut, img string, fail func(error)) {
	printTable(os.Stdout, results, every)
	printTargets(os.Stdout, results)
	if jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
	if img != "" {
		if err := plotLatency(results, img); err != nil {
			fail(err)
		}
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q is not a non-negative integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// measureAll runs every contender runs times, interleaved (each run visits
// every contender once), at g goroutines.
func measureAll(cs []contender, g, load, total, every, runs int, period time.Duration) ([]Result, error) {
	old := runtime.GOMAXPROCS(g)
	defer runtime.GOMAXPROCS(old)
	accs := make([]runStats, len(cs))
	for range runs {
		for i, c := range cs {
			call, err := c.setup(g)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			runtime.GC()
			var lat []int64
			var wall, admitted int64
			if period > 0 {
				lat, wall, admitted = runOpen(call, g, total/g, int64(period))
			} else {
				lat, wall, admitted = runOnce(call, g, total/g, every)
			}
			accs[i].add(lat, wall, g, total/g, admitted)
		}
	}
	var out []Result
	for i, c := range cs {
		r := accs[i].result(c, g, load, period)
		if c.kind == "single" && c.name != "none" && r.Admitted < 0.9 {
			return nil, fmt.Errorf("%s: admitted only %.1f%% of the calls on the admit path", c.name, 100*r.Admitted)
		}
		out = append(out, r)
	}
	return out, nil
}

// runStats gathers one contender's runs.
type runStats struct {
	wall, p50, p90, p99, p999 []float64
	max                       float64
	samples                   int
	admitted, calls           int64
}

// add records one run of g goroutines making perWorker calls each: its
// latencies (sorted here), its wall time and the calls admitted.
func (a *runStats) add(lat []int64, wall int64, g, perWorker int, admitted int64) {
	slices.Sort(lat)
	calls := g * perWorker
	a.wall = append(a.wall, float64(wall)/float64(calls))
	a.p50 = append(a.p50, pct(lat, 0.5))
	a.p90 = append(a.p90, pct(lat, 0.9))
	a.p99 = append(a.p99, pct(lat, 0.99))
	a.p999 = append(a.p999, pct(lat, 0.999))
	if len(lat) > 0 {
		a.max = max(a.max, float64(lat[len(lat)-1]))
	}
	a.samples += len(lat)
	a.admitted += admitted
	a.calls += int64(calls)
}

// result is c's Result over the runs added: each percentile and the wall
// time per call the median over the runs, max the largest of all.
func (a *runStats) result(c contender, g, load int, period time.Duration) Result {
	return Result{Impl: c.name, Kind: c.kind, Goroutines: g, Load: load, Runs: len(a.wall), Samples: a.samples,
		WallNs: median(a.wall), P50: median(a.p50), P90: median(a.p90), P99: median(a.p99), P999: median(a.p999),
		Max: a.max, Admitted: float64(a.admitted) / float64(a.calls), PeriodNs: int64(period)}
}

// runOnce starts g goroutines that each make calls calls, timing every
// every-th one, and returns the sampled latencies, the wall time from the
// common start to the last goroutine's end and the number admitted.
func runOnce(call func(worker int) func() bool, g, calls, every int) ([]int64, int64, int64) {
	return runWorkers(call, g, 0, calls/every+1, func(f func() bool, _ int64, lat []int64) ([]int64, int64) {
		var a int64
		for i := range calls {
			if i%every == 0 {
				t0 := nanotime()
				ok := f()
				lat = append(lat, nanotime()-t0)
				if ok {
					a++
				}
			} else if f() {
				a++
			}
		}
		return lat, a
	})
}

// runOpen starts g goroutines that each make calls calls on a schedule, call
// i intended at the common start plus i*period (spinning until then, or
// starting at once when behind), and returns every call's latency from its
// intended start to its end, the wall time and the number admitted.
func runOpen(call func(worker int) func() bool, g, calls int, period int64) ([]int64, int64, int64) {
	// The start lies a millisecond ahead, when every goroutine is waiting
	// for it, so that no schedule begins behind.
	return runWorkers(call, g, int64(time.Millisecond), calls, func(f func() bool, start int64, lat []int64) ([]int64, int64) {
		lat = lat[:calls]
		var a int64
		due := start
		for i := range calls {
			for nanotime() < due {
			}
			if f() {
				a++
			}
			lat[i] = nanotime() - due
			due += period
		}
		return lat, a
	})
}

// runWorkers runs loop on g goroutines at once, each with its own call
// function (call(worker)), the common start instant, lead nanoseconds after
// all of them are ready, and an empty slice of capacity size for its
// latencies (allocated before the start), and returns their latencies
// together, the wall time from the start to the last one's end and the
// number admitted.
func runWorkers(call func(worker int) func() bool, g int, lead int64, size int,
	loop func(f func() bool, start int64, lat []int64) ([]int64, int64)) ([]int64, int64, int64) {
	per := make([][]int64, g)
	fns := make([]func() bool, g)
	for w := range g {
		per[w] = make([]int64, 0, size)
		fns[w] = call(w)
	}
	var ready, done sync.WaitGroup
	var admitted atomic.Int64
	var t0 int64
	start := make(chan struct{})
	ready.Add(g)
	done.Add(g)
	for w := range g {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			lat, a := loop(fns[w], t0, per[w])
			per[w] = lat
			admitted.Add(a)
		}()
	}
	ready.Wait()
	t0 = nanotime() + lead
	close(start)
	done.Wait()
	wall := nanotime() - t0
	var all []int64
	for _, l := range per {
		all = append(all, l...)
	}
	return all, wall, admitted.Load()
}

func pct(sorted []int64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)))
	return float64(sorted[min(i, len(sorted)-1)])
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// The background load.
var (
	loadMu  sync.Mutex
	loadCmd *exec.Cmd
	loadIn  io.WriteCloser
)

func startLoad(n int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-burn", strconv.Itoa(n))
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the background load: %w", err)
	}
	loadMu.Lock()
	loadCmd, loadIn = cmd, in
	loadMu.Unlock()
	fmt.Fprintf(os.Stderr, "latency: background load started: %d busy goroutines in process %d\n", n, cmd.Process.Pid)
	return nil
}

// stopLoad kills the background process, if one runs, and waits for it.
func stopLoad() {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loadCmd == nil {
		return
	}
	loadIn.Close()
	loadCmd.Process.Kill()
	loadCmd.Wait()
	fmt.Fprintf(os.Stderr, "latency: background load stopped (process %d)\n", loadCmd.Process.Pid)
	loadCmd, loadIn = nil, nil
}

var sink atomic.Uint64

// burnLoop is the child: n goroutines spinning on arithmetic until standard
// input closes (the parent exited or stopped it).
func burnLoop(n int) {
	runtime.GOMAXPROCS(n)
	for range n {
		go func() {
			x := uint64(1)
			for i := 0; ; i++ {
				x = x*6364136223846793005 + 1442695040888963407
				if i&(1<<20-1) == 0 {
					sink.Add(x)
				}
			}
		}()
	}
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}
