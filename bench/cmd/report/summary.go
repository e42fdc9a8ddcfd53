package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/slidelimit/slidelimit/bench/accuracy"
)

// printSummary prints what a terminal has room for (80 columns): per
// limiter the worst accuracy ratio, the headline speeds, the keyed ratios,
// memory per key and the targets not met. The wide tables stay in the report.
func printSummary(w io.Writer, rep *accuracy.Report, r results, mem []memResult, ts []target, lat string) {
	if rep != nil {
		fmt.Fprintf(w, "\nAccuracy (limit %d per %v, %d workloads on simulated time): the largest count\n"+
			"admitted in any window of %v, as a ratio to the limit, on the worst workload;\n"+
			"and decisions that differ from the exact sliding log's (+admitted, -refused).\n\n",
			rep.Limit, rep.Window, len(rep.Workloads), rep.Window)
		fmt.Fprintf(w, "  %-28s %6s  %-24s %s\n", "limiter", "worst", "on", "vs exact log")
		for _, c := range rep.Contenders {
			worst, on := 0.0, ""
			var over, under int
			for _, res := range rep.Results {
				if res.Limiter != c.Name {
					continue
				}
				if res.Ratio > worst {
					worst, on = res.Ratio, res.Workload
				}
				over += res.LogOver
				under += res.LogUnder
			}
			diff := fmt.Sprintf("+%d -%d", over, under)
			if c.Pacer {
				diff = "pacer: delays, never refuses"
			}
			fmt.Fprintf(w, "  %-28s %6.2f  %-24s %s\n", trim(c.Name, 28), worst, trim(on, 24), diff)
		}
	}
	if r != nil {
		fmt.Fprintf(w, "\nSpeed, one limiter on its admit path (ns/op, median of the run):\n\n")
		fmt.Fprintf(w, "  %-12s %12s %12s %12s\n", "impl", "1 goroutine", "-cpu 2", "-cpu 8")
		for _, im := range []string{"floor", "ring", "window", "multi", "multiapprox", "mutexlog", "mutexwindow", "xrate"} {
			a, b, c := one(r, "serial", "admit", im, 1), one(r, "parallel", "admit", im, 2), one(r, "parallel", "admit", im, 8)
			if a.ok || b.ok || c.ok {
				fmt.Fprintf(w, "  %-12s %12s %12s %12s\n", im, ns(a), ns(b), ns(c))
			}
		}
		fmt.Fprintf(w, "  (floor: one clock read + one CAS; mutexlog, mutexwindow: ring's and\n"+
			"  window's algorithms behind one sync.Mutex; xrate: golang.org/x/time/rate)\n")
		var lines []string
		for _, k := range keyedCards {
			for _, o := range keyedOrders {
				for _, cpu := range []int{2, 1} {
					sv := r.get(keyedName(k, o, "mixed", "sethvargo"), cpu)
					kw := r.get(keyedName(k, o, "mixed", "keyed.Window"), cpu)
					kr := r.get(keyedName(k, o, "mixed", "keyed-ring"), cpu)
					if !sv.ok || (!kw.ok && !kr.ok) {
						continue
					}
					lines = append(lines, fmt.Sprintf("  %8s %-7s %4d %10s %10s %10s", k, o, cpu, ns(kw), ns(kr), ns(sv)))
				}
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(w, "\nKeyed stores, 100 per second per key, every key present (ns/op):\n\n")
			fmt.Fprintf(w, "  %8s %-7s %4s %10s %10s %10s\n", "keys", "order", "cpu", "Window", "kd-ring", "sethvargo")
			fmt.Fprintln(w, strings.Join(lines, "\n"))
		}
		printHTTPSummary(w, r)
	}
	if len(mem) > 0 {
		fmt.Fprintf(w, "\nMemory per key (limit 100 per hour per key, live heap after GC):\n\n")
		for _, m := range mem {
			fmt.Fprintf(w, "  %-14s %9d keys %8.1f B/key\n", m.store, m.keys, m.bytesPerKey)
		}
	}
	if lat != "" {
		if i := strings.Index(lat, "## Targets"); i >= 0 {
			var rows []string
			for _, l := range strings.Split(lat[i:], "\n") {
				if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| goroutines") && !strings.HasPrefix(l, "| ---") {
					f := strings.Split(strings.Trim(l, "| "), " | ")
					if len(f) == 6 {
						rows = append(rows, fmt.Sprintf("  G=%s %-7s %-36s %-24s %s", f[0], f[1], trim(f[2], 36), trim(f[3], 24), f[5]))
					}
				}
			}
			if len(rows) > 0 {
				fmt.Fprintf(w, "\nTail latency (one shared limiter; no added load: wall time per call; 2 busy: p99):\n\n")
				fmt.Fprintln(w, strings.Join(rows, "\n"))
			}
		}
	}
	var met, notMet, unknown int
	var missed []string
	for _, t := range ts {
		switch {
		case !t.known:
			unknown++
		case t.met:
			met++
		default:
			notMet++
			missed = append(missed, fmt.Sprintf("  - %s\n      %s; goal %s", t.what, t.measured, t.goal))
		}
	}
	fmt.Fprintf(w, "\nTargets: %d met, %d not met, %d not measured in this run.\n", met, notMet, unknown)
	for _, m := range missed {
		fmt.Fprintln(w, m)
	}
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
