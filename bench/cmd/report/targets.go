package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/slidelimit/slidelimit/bench/accuracy"
)

// target is one of the project's performance and accuracy goals, as
// measured in this run.
type target struct {
	what, measured, goal string
	met                  bool
	known                bool
}

func ratio(a, b stat) (float64, bool) {
	if !a.ok || !b.ok || b.ns == 0 {
		return math.NaN(), false
	}
	return a.ns / b.ns, true
}

func one(r results, mode, path, impl string, cpu int) stat {
	return r.get(fmt.Sprintf("BenchmarkOne/mode=%s/path=%s/impl=%s", mode, path, impl), cpu)
}

// twin is the mutex-guarded reference of the same algorithm.
var twin = map[string]string{"ring": "mutexlog", "window": "mutexwindow"}

// targets evaluates every goal the run has the measurements for.
func targets(rep *accuracy.Report, r results, mem []memResult, rings []ringMem) []target {
	var ts []target
	add := func(what, goal string, v float64, ok bool, met bool, format string, args ...any) {
		t := target{what: what, goal: goal, known: ok}
		if ok {
			t.measured = fmt.Sprintf(format, args...)
			t.met = met
		} else {
			t.measured = "not measured"
		}
		ts = append(ts, t)
	}
	if r != nil {
		for _, im := range []string{"ring", "window"} {
			a := one(r, "serial", "admit", im, 1)
			x, ok := ratio(a, one(r, "serial", "admit", "floor", 1))
			add(im+": 1 goroutine, admit, vs floor", "<= 1.3x", x, ok, x <= 1.3, "%.2fx (%.1f ns vs %.1f)", x, a.ns, one(r, "serial", "admit", "floor", 1).ns)
			x, ok = ratio(a, one(r, "serial", "admit", "xrate", 1))
			add(im+": 1 goroutine, admit, vs x/time/rate", "<= 0.5x", x, ok, x <= 0.5, "%.2fx (%.1f ns vs %.1f)", x, a.ns, one(r, "serial", "admit", "xrate", 1).ns)
			d := one(r, "serial", "deny", im, 1)
			x, ok = ratio(d, one(r, "serial", "deny", "floor", 1))
			add(im+": 1 goroutine, deny, vs floor", "<= 1.2x", x, ok, x <= 1.2, "%.2fx (%.1f ns vs %.1f)", x, d.ns, one(r, "serial", "deny", "floor", 1).ns)
			x, ok = ratio(d, one(r, "serial", "deny", "xrate", 1))
			add(im+": 1 goroutine, deny, vs x/time/rate", "<= 0.4x", x, ok, x <= 0.4, "%.2fx (%.1f ns vs %.1f)", x, d.ns, one(r, "serial", "deny", "xrate", 1).ns)
			for _, cpu := range []int{2, 8} {
				p := one(r, "parallel", "admit", im, cpu)
				x, ok = ratio(p, one(r, "parallel", "admit", "xrate", cpu))
				add(fmt.Sprintf("%s: -cpu %d, admit, vs x/time/rate", im, cpu), "<= 0.7x", x, ok, x <= 0.7, "%.2fx (%.1f ns vs %.1f)", x, p.ns, one(r, "parallel", "admit", "xrate", cpu).ns)
				x, ok = ratio(p, one(r, "parallel", "admit", twin[im], cpu))
				add(fmt.Sprintf("%s: -cpu %d, admit, vs mutex twin (%s)", im, cpu, twin[im]), "<= 1x", x, ok, x <= 1, "%.2fx (%.1f ns vs %.1f)", x, p.ns, one(r, "parallel", "admit", twin[im], cpu).ns)
			}
			p := one(r, "parallel", "deny", im, 2)
			x, ok = ratio(p, one(r, "parallel", "deny", "xrate", 2))
			add(im+": -cpu 2, deny, vs x/time/rate", "<= 0.3x", x, ok, x <= 0.3, "%.2fx (%.1f ns vs %.1f)", x, p.ns, one(r, "parallel", "deny", "xrate", 2).ns)
		}
		for _, im := range []string{"keyed.Window", "keyed-window", "keyed-ring"} {
			for _, k := range []string{"100000", "1000000"} {
				for _, order := range []string{"random", "zipf", "random-copies"} {
					for _, cpu := range []int{1, 2} {
						s := r.get(keyedName(k, order, "mixed", im), cpu)
						sv := r.get(keyedName(k, order, "mixed", "sethvargo"), cpu)
						x, ok := ratio(s, sv)
						add(fmt.Sprintf("%s: %s keys, %s order, -cpu %d, vs sethvargo", im, k, order, cpu), "<= 0.5x, 0 allocs/op", x, ok,
							x <= 0.5 && s.allocs == 0, "%.2fx (%.0f ns vs %.0f), %g allocs/op", x, s.ns, sv.ns, s.allocs)
					}
				}
			}
		}
	}
	if len(mem) > 0 {
		best := math.Inf(1)
		bestName := ""
		for _, m := range mem {
			if m.keys == 1_000_000 && !isOurs(m.store) && !keepsHash[m.store] && m.bytesPerKey < best {
				best, bestName = m.bytesPerKey, m.store
			}
		}
		for _, m := range mem {
			if m.store == "keyed.Window" && m.keys == 1_000_000 && m.keyBytes > 0 {
				add("keyed.Window: bytes per key at 1M keys", "<= 64 B + the key's bytes", 0, true,
					m.bytesPerKey <= 64+m.keyBytes, "%.1f B/key vs %.1f (64 + %.1f key bytes)", m.bytesPerKey, 64+m.keyBytes, m.keyBytes)
			}
			if isOurs(m.store) && m.keys == 1_000_000 {
				add(m.store+": bytes per key at 1M keys vs every keyed peer that keeps the key", "below the smallest such peer", 0, !math.IsInf(best, 1),
					m.bytesPerKey < best, "%.1f B/key vs %.1f (%s): %.2fx", m.bytesPerKey, best, bestName, m.bytesPerKey/best)
			}
		}
	}
	for _, rg := range rings {
		add(fmt.Sprintf("ring: memory at limit %d", rg.limit), "8 B per slot + small fixed header", 0, true,
			rg.header <= 256 || rg.header <= 0.03*float64(8*rg.limit), "%.0f B = 8 x %d + %.0f", rg.bytes, rg.limit, rg.header)
	}
	if rep != nil {
		for _, c := range rep.Contenders {
			var diffs, over, n int
			for _, res := range rep.Results {
				if res.Limiter == c.Name {
					diffs += res.LogOver + res.LogUnder
					over += res.FormulaOver
					n++
				}
			}
			switch c.Name {
			case "slidelimit ring":
				add("ring: identical to the oracle on every replayed workload", "0 differing decisions", 0, true, diffs == 0,
					"%d differing decisions over %d workloads", diffs, n)
			case "slidelimit window":
				add("window: never above the formula", "0 admissions the formula refuses", 0, true, over == 0,
					"%d admissions above the formula over %d workloads", over, n)
			}
		}
	}
	return ts
}

// printTargets prints every goal with its measurement. The floor is one
// monotonic clock read plus one compare-and-swap (impl=floor); the mutex
// twins are the same algorithms behind one sync.Mutex (bench/refimpl).
func printTargets(w io.Writer, ts []target) {
	fmt.Fprintf(w, "## Targets, from this run\n\n"+
		"The floor is one monotonic clock read plus one compare-and-swap on a padded word (impl=floor); a mutex twin "+
		"is the same algorithm behind one sync.Mutex (mutexlog for ring, mutexwindow for window, in bench/refimpl). "+
		"Keyed stores: 100 per second per key, every key present, keys in random or Zipf(1.1) order.\n\n"+
		"| target | goal | measured | met |\n| --- | --- | --- | --- |\n")
	for _, t := range ts {
		m := "not measured"
		if t.known {
			m = map[bool]string{true: "met", false: "**not met**"}[t.met]
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.what, t.goal, t.measured, m)
	}
	fmt.Fprintln(w)
}

func isOurs(store string) bool { return strings.HasPrefix(store, "keyed") }

// keepsHash names the peers that keep a 64-bit hash of each key instead of
// the key (httprate's counters are a map[uint64]int): two keys whose hashes
// collide share one limit, so their memory per key is not compared with
// that of the stores that keep the key.
var keepsHash = map[string]bool{"httprate": true}
