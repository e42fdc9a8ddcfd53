package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// The HTTP middleware benchmarks (bench/http_test.go, BenchmarkHTTP): one
// request through each middleware, admit and refuse paths, 1 key and 1k or
// 100k keys in random order.
var (
	httpOrder = []string{"slidelimit", "slidelimit-nofields", "httprate", "sethvargo", "throttled", "tollbooth", "ulule"}
	// httpPeers are the middlewares the targets compare ours with.
	httpPeers = []string{"httprate", "sethvargo", "throttled", "tollbooth", "ulule"}
	httpPaths = []string{"admit", "refuse"}
	httpKeys  = []string{"1", "1000", "100000"}
)

// httpCell is one (path, keys) pair measured.
type httpCell struct{ path, keys string }

func (c httpCell) String() string {
	k := c.keys + " keys"
	switch c.keys {
	case "1":
		k = "1 key"
	case "1000":
		k = "1k keys"
	case "100000":
		k = "100k keys"
	}
	return c.path + ", " + k
}

// httpGet is the median of one HTTP benchmark, at the first of -cpu 2, 1, 8
// the run has (compare.sh runs them at -cpu 2).
func httpGet(r results, c httpCell, impl string) stat {
	for _, cpu := range []int{2, 1, 8} {
		if s := r.get(fmt.Sprintf("BenchmarkHTTP/path=%s/keys=%s/impl=%s", c.path, c.keys, impl), cpu); s.ok {
			return s
		}
	}
	return stat{}
}

// httpCells are the (path, keys) pairs the run has, in table order.
func httpCells(r results) []httpCell {
	var cells []httpCell
	for _, p := range httpPaths {
		for _, k := range httpKeys {
			c := httpCell{p, k}
			for _, im := range httpOrder {
				if httpGet(r, c, im).ok {
					cells = append(cells, c)
					break
				}
			}
		}
	}
	return cells
}

// bestHTTPPeer is the peer with the lowest median ns/op in c, and the
// fewest allocs/op among the peers.
func bestHTTPPeer(r results, c httpCell) (name string, best stat, fewestAllocs float64, ok bool) {
	fewestAllocs = math.Inf(1)
	for _, p := range httpPeers {
		s := httpGet(r, c, p)
		if !s.ok {
			continue
		}
		if !ok || s.ns < best.ns {
			name, best, ok = p, s, true
		}
		fewestAllocs = min(fewestAllocs, s.allocs)
	}
	return name, best, fewestAllocs, ok
}

func printHTTP(w io.Writer, r results) {
	cells := httpCells(r)
	if len(cells) == 0 {
		return
	}
	fmt.Fprintf(w, "## Speed: HTTP middleware, one request (ns/op median [allocs/op, B/op]; ratio to httprate's ns/op)\n\n"+
		"Admit: a limit no request reaches; refuse: 1 request per hour per key, used up in setup. "+
		"Keys: client IPs from RemoteAddr, in random order. slidelimit sends the RateLimit fields on every response; "+
		"slidelimit-nofields is the same middleware with them off.\n\n| middleware |")
	for _, c := range cells {
		fmt.Fprintf(w, " %s |", c)
	}
	fmt.Fprintf(w, "\n| --- |%s\n", strings.Repeat(" --- |", len(cells)))
	for _, im := range httpOrder {
		any := false
		line := fmt.Sprintf("| %s |", im)
		for _, c := range cells {
			s := httpGet(r, c, im)
			any = any || s.ok
			cell := ns(s)
			if s.ok {
				cell += fmt.Sprintf(" [%g, %g B]", s.allocs, s.bytes)
				if x, ok := ratio(s, httpGet(r, c, "httprate")); ok {
					cell += fmt.Sprintf(" %.2fx", x)
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

// httpTargets: fewer ns/op and fewer allocs/op than every peer, and at most
// 0.5x httprate's ns/op, on both paths, for the middleware as configured by
// default (RateLimit fields on).
func httpTargets(r results) []target {
	var ts []target
	for _, c := range httpCells(r) {
		s := httpGet(r, c, "slidelimit")
		name, best, fewest, ok := bestHTTPPeer(r, c)
		t := target{what: fmt.Sprintf("httplimit: %s, vs every peer", c), goal: "fewer ns/op and allocs/op than each", known: s.ok && ok}
		if t.known {
			t.met = s.ns < best.ns && s.allocs < fewest
			t.measured = fmt.Sprintf("%.0f ns vs %.0f (%s, the fastest peer); %g allocs/op vs %g (the fewest)", s.ns, best.ns, name, s.allocs, fewest)
		} else {
			t.measured = "not measured"
		}
		ts = append(ts, t)
		hr := httpGet(r, c, "httprate")
		x, ok := ratio(s, hr)
		t = target{what: fmt.Sprintf("httplimit: %s, vs httprate", c), goal: "<= 0.5x", known: ok, measured: "not measured"}
		if ok {
			t.met = x <= 0.5
			t.measured = fmt.Sprintf("%.2fx (%.0f ns vs %.0f)", x, s.ns, hr.ns)
		}
		ts = append(ts, t)
	}
	return ts
}

// printHTTPSummary prints one line per path: ours against the fastest peer
// and httprate, at each key count.
func printHTTPSummary(w io.Writer, r results) {
	cells := httpCells(r)
	if len(cells) == 0 {
		return
	}
	fmt.Fprintf(w, "\nHTTP middleware (RateLimit fields on), ns/op as a ratio to the fastest peer's\nand to httprate's:\n\n")
	for _, p := range httpPaths {
		var parts []string
		for _, c := range cells {
			if c.path != p {
				continue
			}
			s, hr := httpGet(r, c, "slidelimit"), httpGet(r, c, "httprate")
			name, best, _, ok := bestHTTPPeer(r, c)
			if !s.ok || !ok {
				continue
			}
			x, _ := ratio(s, best)
			k := map[string]string{"1": "1 key", "1000": "1k", "100000": "100k"}[c.keys]
			if name == "httprate" {
				parts = append(parts, fmt.Sprintf("%s %.2fx httprate (fastest)", k, x))
				continue
			}
			y, _ := ratio(s, hr)
			parts = append(parts, fmt.Sprintf("%s %.2fx %s, %.2fx httprate", k, x, trim(name, 9), y))
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "  %-6s %s\n", p, strings.Join(parts, "; "))
		}
	}
}

// plotHTTP draws one grouped bar chart: ns/op per middleware in each
// (path, keys) cell.
func plotHTTP(r results, dir string) error {
	cells := httpCells(r)
	if len(cells) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "HTTP middleware: time per request (median), lower is better"
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.Text = "ns/op (median)"
	p.X.Label.Text = "path, keys (client IPs in random order)"
	p.Y.Min = 0
	var names []string
	for _, c := range cells {
		names = append(names, c.String())
	}
	var shown []string
	for _, im := range httpOrder {
		for _, c := range cells {
			if httpGet(r, c, im).ok {
				shown = append(shown, im)
				break
			}
		}
	}
	width := vg.Points(14)
	for i, im := range shown {
		vals := make(plotter.Values, len(cells))
		for j, c := range cells {
			if s := httpGet(r, c, im); s.ok {
				vals[j] = s.ns
			}
		}
		bc, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bc.Color = plotutil.Color(i)
		bc.LineStyle.Width = 0
		bc.Offset = vg.Length(float64(i)-float64(len(shown)-1)/2) * width
		p.Add(bc)
		p.Legend.Add(im, bc)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(cells))-0.5
	header := []string{
		"ServeHTTP on a prepared request around a handler that does nothing; every middleware keys by RemoteAddr's IP (each request's own copy).",
		"admit: a limit no request reaches; refuse: 1 per hour per key, used up in setup (allocations: see the tables). Each middleware in a process of its own.",
		"slidelimit: RateLimit fields on every response; slidelimit-nofields: the same middleware with the fields off.",
	}
	return savePNG(dir, "speed-http.png", 1, 1, 26*vg.Centimeter, 12*vg.Centimeter, [][]*plot.Plot{{p}}, header...)
}
