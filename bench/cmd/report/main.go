// Command report turns the raw results of compare.sh into the tables of
// docs/benchmarks.md and the plots:
//
//	go run ./cmd/report -accuracy out/quick/accuracy.json -bench out/quick/bench.txt \
//	    -mem out/quick/mem.txt -latency out/quick/latency.md \
//	    -img out/quick/img -out out/quick/report.md
//
// The full report (wide tables) goes to -out; standard output gets a narrow
// summary for a terminal. Every ratio it prints is a ratio of medians over
// the samples of one run, the same center benchstat reports.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/slidelimit/slidelimit/bench/accuracy"
)

func main() {
	accPath := flag.String("accuracy", "", "accuracy JSON written by TestAccuracy")
	benchPaths := flag.String("bench", "", "comma-separated go test -bench outputs")
	memPath := flag.String("mem", "", "cmd/memkey output")
	latPath := flag.String("latency", "", "cmd/latency output (markdown), included as it is")
	redisPath := flag.String("redis", "", "redis/bench.sh output (markdown), included as it is")
	redisRaw := flag.String("redis-raw", "", "redis/bench.sh's raw runs (its RAW file), for the plot")
	imgDir := flag.String("img", "", "directory for the PNG plots (none if empty)")
	outPath := flag.String("out", "", "file for the full report (standard output if empty, without the summary)")
	shown := flag.String("dir", "", "how the summary names the directory of -out (for example bench/out/quick)")
	flag.Parse()

	full := io.Writer(os.Stdout)
	var sum io.Writer = io.Discard
	if *outPath != "" {
		f, err := os.Create(*outPath)
		check(err)
		defer f.Close()
		full, sum = f, os.Stdout
	}
	var rep *accuracy.Report
	if *accPath != "" {
		b, err := os.ReadFile(*accPath)
		check(err)
		rep = new(accuracy.Report)
		check(json.Unmarshal(b, rep))
		printAccuracy(full, rep)
		printMulti(full, rep)
		if *imgDir != "" {
			check(plotAccuracy(rep, *imgDir))
		}
	}
	var res results
	if *benchPaths != "" {
		var err error
		res, err = parseBench(strings.Split(*benchPaths, ","))
		check(err)
		printSpeed(full, res)
		printHTTP(full, res)
		if *imgDir != "" {
			check(plotSpeed(res, *imgDir))
			check(plotHTTP(res, *imgDir))
		}
	}
	var mem []memResult
	var rings []ringMem
	if *memPath != "" {
		var err error
		mem, rings, err = parseMem(*memPath)
		check(err)
		printMemory(full, mem, rings)
		if *imgDir != "" && len(mem) > 0 {
			check(plotMemory(mem, *imgDir))
		}
	}
	var lat string
	if *latPath != "" {
		b, err := os.ReadFile(*latPath)
		check(err)
		lat = string(b)
		fmt.Fprintln(full, strings.ReplaceAll(lat, "\n## ", "\n### "))
	}
	if *redisPath != "" {
		b, err := os.ReadFile(*redisPath)
		check(err)
		fmt.Fprintf(full, "## Redis (redis/bench.sh)\n\n%s\n", b)
	}
	if *redisRaw != "" && *imgDir != "" {
		r, err := parseRedis(*redisRaw)
		check(err)
		check(plotRedis(r, *imgDir))
	}
	ts := append(targets(rep, res, mem, rings), httpTargets(res)...)
	printTargets(full, ts)
	printSummary(sum, rep, res, mem, ts, lat)
	if *outPath != "" {
		where := *shown
		if where == "" {
			where = "."
		}
		fmt.Fprintf(sum, "\nFull report (wide tables, every target): %s/report.md\n", where)
		if *imgDir != "" {
			fmt.Fprintf(sum, "Plots: %s/img/\n", where)
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

// Names of the single-limiter and keyed implementations, in table order.
var (
	singleOrder = []string{"floor", "clock", "ring", "window", "multi", "multiapprox", "mutexlog", "mutexwindow", "xrate", "juju", "russellluo", "uber"}
	keyedOrder  = []string{"keyed.Window", "keyed-window", "keyed-ring", "sethvargo", "throttled", "ulule", "httprate"}
)

func printAccuracy(w io.Writer, rep *accuracy.Report) {
	fmt.Fprintf(w, "## Accuracy (limit %d per %v, simulated time, seed %d)\n\n", rep.Limit, rep.Window, rep.Seed)
	fmt.Fprintf(w, "Largest admitted count in any window of %v (every alignment), as a ratio to the limit; "+
		"in brackets, the admitted total against the exact sliding log's.\n\n", rep.Window)
	var names []string
	for _, c := range rep.Contenders {
		names = append(names, c.Name)
	}
	fmt.Fprintf(w, "| workload | oracle admits |")
	for _, n := range names {
		fmt.Fprintf(w, " %s |", n)
	}
	fmt.Fprintf(w, "\n| --- | --- |%s\n", strings.Repeat(" --- |", len(names)))
	for _, wl := range rep.Workloads {
		byName := map[string]accuracy.Result{}
		var oracle int64
		for _, r := range rep.Results {
			if r.Workload == wl.Name {
				byName[r.Limiter] = r
				oracle = r.OracleAdmitted
			}
		}
		fmt.Fprintf(w, "| %s | %d |", wl.Name, oracle)
		for _, n := range names {
			r, ok := byName[n]
			if !ok {
				fmt.Fprintf(w, " – |")
				continue
			}
			mark := ""
			if r.Ratio > 1 {
				mark = "**"
			}
			fmt.Fprintf(w, " %s%.2f%s (%d) |", mark, r.Ratio, mark, r.Admitted)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Each decision judged on the limiter's own history, summed over all workloads: admissions the "+
		"exact sliding log would refuse (+) and refusals it would admit (−); for two-counter limiters, the same "+
		"against the two-counter formula computed exactly in integers, in the limiter's window layout.\n\n")
	fmt.Fprintf(w, "| limiter | algorithm | time | vs exact log | vs exact formula |\n| --- | --- | --- | --- | --- |\n")
	for _, c := range rep.Contenders {
		var lo, lu, o, u int
		for _, r := range rep.Results {
			if r.Limiter == c.Name {
				lo += r.LogOver
				lu += r.LogUnder
				o += r.FormulaOver
				u += r.FormulaUnder
			}
		}
		f := "–"
		if c.Model != "" {
			f = fmt.Sprintf("+%d −%d (%s)", o, u, c.Model)
		}
		l := fmt.Sprintf("+%d −%d", lo, lu)
		if c.Pacer {
			l = fmt.Sprintf("(pacer: admits all, +%d delayed)", lo)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", c.Name, c.Algo, c.Clock, l, f)
	}
	fmt.Fprintln(w)
}

func printMulti(w io.Writer, rep *accuracy.Report) {
	if len(rep.Multi) == 0 {
		return
	}
	fmt.Fprintf(w, "### Several rules at once (%s), all-or-nothing\n\n", strings.Join(rep.MultiRules, " and "))
	fmt.Fprintf(w, "Admitted (the exact all-or-nothing logs admit), then the largest count in any window of each rule's "+
		"length as a ratio to its limit, and decisions judged on the limiter's own history against the exact logs.\n\n")
	var names []string
	for _, r := range rep.Multi {
		if len(names) == 0 || names[len(names)-1] != r.Limiter {
			names = append(names, r.Limiter)
		}
	}
	fmt.Fprintf(w, "| workload |")
	for _, n := range names {
		fmt.Fprintf(w, " %s |", n)
	}
	fmt.Fprintf(w, "\n| --- |%s\n", strings.Repeat(" --- |", len(names)))
	for _, wl := range rep.Workloads {
		fmt.Fprintf(w, "| %s |", wl.Name)
		for _, n := range names {
			for _, r := range rep.Multi {
				if r.Workload == wl.Name && r.Limiter == n {
					var rs []string
					for _, x := range r.RatioPerRule {
						f := fmt.Sprintf("%.2f", x)
						if x > 1 {
							f = "**" + f + "**"
						}
						rs = append(rs, f)
					}
					fmt.Fprintf(w, " %d (%d); %s; +%d −%d |", r.Admitted, r.OracleAdmitted, strings.Join(rs, " / "), r.LogOver, r.LogUnder)
				}
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

func ns(s stat) string {
	if !s.ok {
		return "–"
	}
	return fmt.Sprintf("%.1f", s.ns)
}

func printSpeed(w io.Writer, r results) {
	type col struct {
		title, mode, path string
		cpu               int
	}
	cols := []col{
		{"1 goroutine, admit", "serial", "admit", 1},
		{"1 goroutine, deny", "serial", "deny", 1},
		{"-cpu 2, admit", "parallel", "admit", 2},
		{"-cpu 2, deny", "parallel", "deny", 2},
		{"-cpu 8, admit", "parallel", "admit", 8},
		{"-cpu 8, deny", "parallel", "deny", 8},
	}
	fmt.Fprintf(w, "## Speed: one limiter (ns/op, median; allocs/op in brackets when not 0)\n\n| impl |")
	for _, c := range cols {
		fmt.Fprintf(w, " %s |", c.title)
	}
	fmt.Fprintf(w, "\n| --- |%s\n", strings.Repeat(" --- |", len(cols)))
	for _, im := range singleOrder {
		any := false
		line := fmt.Sprintf("| %s |", im)
		for _, c := range cols {
			s := r.get(fmt.Sprintf("BenchmarkOne/mode=%s/path=%s/impl=%s", c.mode, c.path, im), c.cpu)
			any = any || s.ok
			cell := ns(s)
			if s.ok && s.allocs != 0 {
				cell += fmt.Sprintf(" (%g)", s.allocs)
			}
			line += " " + cell + " |"
		}
		if any {
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintln(w)
	for _, path := range []string{"mixed", "deny"} {
		for _, cpu := range []int{1, 2} {
			printKeyed(w, r, path, cpu)
		}
	}
}

// keyedCells are the (keys, order) pairs measured, in table order.
var (
	keyedCards  = []string{"1", "1000", "100000", "1000000"}
	keyedOrders = []string{"random", "zipf", "random-copies", "seq"}
)

func keyedName(keys, order, path, impl string) string {
	return fmt.Sprintf("BenchmarkKeyed/keys=%s/order=%s/path=%s/impl=%s", keys, order, path, impl)
}

func printKeyed(w io.Writer, r results, path string, cpu int) {
	type cell struct{ keys, order string }
	var cells []cell
	for _, k := range keyedCards {
		for _, o := range keyedOrders {
			for _, im := range keyedOrder {
				if r.get(keyedName(k, o, path, im), cpu).ok {
					cells = append(cells, cell{k, o})
					break
				}
			}
		}
	}
	if len(cells) == 0 {
		return
	}
	about := "100 per second per key, every key present; {fraction admitted}"
	if path == "deny" {
		about = "1 per hour per key, used up for every key: every call refused"
	}
	fmt.Fprintf(w, "## Speed: keyed stores, %s path, -cpu %d (%s): ns/op median [allocs/op]\n\n", path, cpu, about)
	fmt.Fprintf(w, "| impl |")
	for _, c := range cells {
		fmt.Fprintf(w, " %s keys, %s |", c.keys, c.order)
	}
	fmt.Fprintf(w, "\n| --- |%s\n", strings.Repeat(" --- |", len(cells)))
	for _, im := range keyedOrder {
		any := false
		line := fmt.Sprintf("| %s |", im)
		for _, c := range cells {
			s := r.get(keyedName(c.keys, c.order, path, im), cpu)
			any = any || s.ok
			cell := ns(s)
			if s.ok {
				cell += fmt.Sprintf(" [%g]", s.allocs)
				if path == "mixed" {
					cell += fmt.Sprintf(" {%.2f}", s.admits)
				}
			}
			line += " " + cell + " |"
		}
		if any {
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintln(w)
}

func printMemory(w io.Writer, mem []memResult, rings []ringMem) {
	if len(mem) > 0 {
		fmt.Fprintf(w, "## Memory per key (limit 100 per hour per key, one admitted call per key, live heap after GC; "+
			"each call's key is built for the call and dropped, so whatever a store keeps of it counts)\n\n| store | keys | bytes/key | key bytes (mean) |\n| --- | --- | --- | --- |\n")
		for _, m := range mem {
			fmt.Fprintf(w, "| %s | %d | %.1f | %.1f |\n", m.store, m.keys, m.bytesPerKey, m.keyBytes)
		}
		fmt.Fprintln(w)
	}
	if len(rings) > 0 {
		fmt.Fprintf(w, "## ring.New footprint\n\n| limit | bytes per limiter | 8 x limit | rest |\n| --- | --- | --- | --- |\n")
		for _, r := range rings {
			fmt.Fprintf(w, "| %d | %.0f | %d | %.0f |\n", r.limit, r.bytes, 8*r.limit, r.header)
		}
		fmt.Fprintln(w)
	}
}
