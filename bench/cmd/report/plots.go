package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/slidelimit/slidelimit/bench/accuracy"
)

// plottedWorkloads are the workloads drawn, one PNG each.
var plottedWorkloads = []string{"every-8ms", "poisson-3x", "edge-burst-flood", "bursts-60-every-600ms"}

var (
	red   = color.RGBA{R: 200, A: 255}
	blue  = color.RGBA{B: 180, G: 60, A: 255}
	green = color.RGBA{G: 140, B: 60, A: 255}
)

func isPacer(rep *accuracy.Report, name string) bool {
	for _, c := range rep.Contenders {
		if c.Name == name {
			return c.Pacer
		}
	}
	return false
}

// savePNG draws plots in a grid of rows x cols into dir/name, under header
// (one line of text per element, none if empty).
func savePNG(dir, name string, cols, rows int, w, h vg.Length, plots [][]*plot.Plot, header ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lineH := vg.Points(14)
	header = wrap(header, int(w/vg.Centimeter*4.5))
	h += vg.Length(len(header)) * lineH
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96))
	dc := draw.New(img)
	sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(11)), Handler: plot.DefaultTextHandler}
	for i, line := range header {
		dc.FillText(sty, vg.Point{X: vg.Millimeter * 3, Y: h - vg.Length(i+1)*lineH}, line)
	}
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter*2 + vg.Length(len(header))*lineH, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, t, dc)
	for j := range plots {
		for i := range plots[j] {
			if plots[j][i] != nil {
				plots[j][i].Draw(canvases[j][i])
			}
		}
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// wrap breaks each line longer than n bytes at spaces.
func wrap(lines []string, n int) []string {
	var out []string
	for _, l := range lines {
		for len(l) > n {
			i := strings.LastIndex(l[:n], " ")
			if i <= 0 {
				break
			}
			out = append(out, l[:i])
			l = "    " + l[i+1:]
		}
		out = append(out, l)
	}
	return out
}

// grid lays ps out in rows of cols, padding the last row with nils.
func grid(ps []*plot.Plot, cols int) [][]*plot.Plot {
	var out [][]*plot.Plot
	for i := 0; i < len(ps); i += cols {
		row := make([]*plot.Plot, cols)
		copy(row, ps[i:min(i+cols, len(ps))])
		out = append(out, row)
	}
	return out
}

// plotAccuracy draws, for each plotted workload, one panel per limiter: the
// admitted count in the sliding window (t-W, t] over time, against the limit.
func plotAccuracy(rep *accuracy.Report, dir string) error {
	for _, wl := range plottedWorkloads {
		var ps []*plot.Plot
		var ymax float64 = float64(rep.Limit) * 1.3
		// The time axis covers the workload's arrivals plus one window;
		// a pacer's releases run on past it.
		var tEnd float64
		for _, r := range rep.Results {
			if r.Workload == wl && !isPacer(rep, r.Limiter) && len(r.Series) > 0 {
				tEnd = max(tEnd, float64(r.Series[len(r.Series)-1].At)/1e9)
			}
		}
		for _, r := range rep.Results {
			if r.Workload == wl {
				ymax = max(ymax, float64(r.MaxInWindow)*1.08)
			}
		}
		for _, c := range rep.Contenders {
			var res *accuracy.Result
			for i := range rep.Results {
				if rep.Results[i].Workload == wl && rep.Results[i].Limiter == c.Name {
					res = &rep.Results[i]
				}
			}
			if res == nil {
				continue
			}
			p := plot.New()
			p.Title.Text = fmt.Sprintf("%s: peak %d", c.Name, res.MaxInWindow)
			p.Title.TextStyle.Font.Size = vg.Points(10)
			p.X.Label.Text = "time t (s)"
			p.Y.Label.Text = fmt.Sprintf("admitted in last %v", rep.Window)
			p.Y.Min, p.Y.Max = 0, ymax
			p.X.Min, p.X.Max = 0, tEnd
			pts := make(plotter.XYs, 0, len(res.Series)+1)
			pts = append(pts, plotter.XY{X: 0, Y: 0})
			var tmax float64
			for _, pt := range res.Series {
				x := float64(pt.At) / 1e9
				if x > tEnd {
					break
				}
				pts = append(pts, plotter.XY{X: x, Y: float64(pt.Count)})
				tmax = max(tmax, x)
			}
			tmax = max(tmax, tEnd)
			line, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			line.StepStyle = plotter.PostStep
			line.Color = blue
			if strings.HasPrefix(c.Name, "slidelimit") {
				line.Color = green
			}
			lim, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(rep.Limit)}, {X: tmax, Y: float64(rep.Limit)}})
			if err != nil {
				return err
			}
			lim.Color = red
			lim.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(line, lim)
			p.Legend.Add(fmt.Sprintf("admitted in (t-%v, t]", rep.Window), line)
			p.Legend.Add(fmt.Sprintf("limit (%d)", rep.Limit), lim)
			p.Legend.TextStyle.Font.Size = vg.Points(8)
			p.Legend.Top = true
			ps = append(ps, p)
		}
		cols := 3
		rows := (len(ps) + cols - 1) / cols
		about := wl
		for _, w := range rep.Workloads {
			if w.Name == wl {
				about = fmt.Sprintf("Workload %s: %s.", w.Name, w.About)
			}
		}
		header := []string{about, fmt.Sprintf("Each panel: the count each limiter admitted in the sliding window of %v ending at t, "+
			"against the limit %d (green: slidelimit, blue: peers).", rep.Window, rep.Limit)}
		if err := savePNG(dir, "accuracy-"+wl+".png", cols, rows, 30*vg.Centimeter, vg.Length(rows)*6.5*vg.Centimeter, grid(ps, cols), header...); err != nil {
			return err
		}
	}
	return nil
}

type bar struct {
	label string
	value float64
}

// barPlot is a horizontal bar chart of values with their labels.
func barPlot(title, unit string, bars []bar) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = unit
	vals := make(plotter.Values, len(bars))
	names := make([]string, len(bars))
	for i, b := range bars {
		// Bottom-up: the first bar on top.
		vals[len(bars)-1-i] = b.value
		names[len(bars)-1-i] = b.label
	}
	bc, err := plotter.NewBarChart(vals, vg.Points(8))
	if err != nil {
		return nil, err
	}
	bc.Horizontal = true
	bc.Color = blue
	bc.LineStyle.Width = 0
	p.Add(bc)
	p.NominalY(names...)
	p.X.Min = 0
	return p, nil
}

func plotSpeed(r results, dir string) error {
	type panel struct {
		title, mode, path string
		cpu               int
	}
	var ps []*plot.Plot
	for _, pn := range []panel{
		{"1 goroutine, admit path", "serial", "admit", 1},
		{"1 goroutine, deny path", "serial", "deny", 1},
		{"-cpu 2, admit path", "parallel", "admit", 2},
		{"-cpu 2, deny path", "parallel", "deny", 2},
		{"-cpu 8, admit path", "parallel", "admit", 8},
		{"-cpu 8, deny path", "parallel", "deny", 8},
	} {
		var bars []bar
		for _, im := range singleOrder {
			if s := one(r, pn.mode, pn.path, im, pn.cpu); s.ok {
				bars = append(bars, bar{im, s.ns})
			}
		}
		if len(bars) == 0 {
			continue
		}
		p, err := barPlot(pn.title, "ns/op (median)", bars)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	if len(ps) > 0 {
		rows := (len(ps) + 1) / 2
		header := []string{
			"One limiter; admit path: 1024 per microsecond (every call admitted); deny path: limit used up (every call refused).",
			"-cpu N: every P calls the same limiter. floor: one monotonic clock read + one CAS; clock: the clock read alone;",
			"mutexlog, mutexwindow: ring's and window's algorithms behind one sync.Mutex; xrate: golang.org/x/time/rate.",
		}
		if err := savePNG(dir, "speed-one-limiter.png", 2, rows, 26*vg.Centimeter, vg.Length(rows)*7*vg.Centimeter, grid(ps, 2), header...); err != nil {
			return err
		}
	}
	ps = nil
	for _, k := range []string{"1000", "100000", "1000000"} {
		for _, order := range []string{"random", "zipf", "random-copies"} {
			for _, cpu := range []int{1, 2} {
				var bars []bar
				for _, im := range keyedOrder {
					if s := r.get(keyedName(k, order, "mixed", im), cpu); s.ok {
						bars = append(bars, bar{im, s.ns})
					}
				}
				if len(bars) == 0 {
					continue
				}
				p, err := barPlot(fmt.Sprintf("%s keys, %s order, -cpu %d", k, order, cpu), "ns/op (median)", bars)
				if err != nil {
					return err
				}
				ps = append(ps, p)
			}
		}
	}
	if len(ps) > 0 {
		rows := (len(ps) + 1) / 2
		header := []string{
			"Keyed stores, 100 per second per key, every key present, \"client-N\" keys drawn uniformly at random or Zipf(1.1)",
			"(random-copies: uniformly at random, each call's key a fresh copy of the string, as a key built from a request is),",
			"one or two goroutines on one shared store (-cpu 1, -cpu 2). keyed.Window: slidelimit's window per key, inline; keyed-window, keyed-ring: keyed.Limiter over window and ring.",
		}
		return savePNG(dir, "speed-keyed.png", 2, rows, 26*vg.Centimeter, vg.Length(rows)*6*vg.Centimeter, grid(ps, 2), header...)
	}
	return nil
}

func plotMemory(mem []memResult, dir string) error {
	var bars []bar
	ms := append([]memResult(nil), mem...)
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].bytesPerKey < ms[j].bytesPerKey })
	keys := 0
	for _, m := range ms {
		bars = append(bars, bar{m.store, m.bytesPerKey})
		keys = m.keys
	}
	p, err := barPlot(fmt.Sprintf("live heap per key at %d keys, limit 100 per hour per key, one call per key", keys), "bytes/key", bars)
	if err != nil {
		return err
	}
	return savePNG(dir, "memory-per-key.png", 1, 1, 18*vg.Centimeter, 8*vg.Centimeter, [][]*plot.Plot{{p}})
}
