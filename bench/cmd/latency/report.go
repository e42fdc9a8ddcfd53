package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func loadName(n int) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprintf("%d busy", n)
}

func printTable(w io.Writer, rs []Result, every int) {
	if len(rs) > 0 && rs[0].PeriodNs > 0 {
		fmt.Fprintf(w, "## Latency per call (ns), open loop: each goroutine starts a call every %d ns, and a call's latency runs from "+
			"its intended start; percentiles are medians over runs, max over all runs\n\n", rs[0].PeriodNs)
	} else {
		fmt.Fprintf(w, "## Latency per call (ns): one call in %d timed alone; percentiles are medians over runs, max over all runs\n\n", every)
	}
	fmt.Fprintf(w, "| goroutines | background | impl | wall ns/call | p50 | p90 | p99 | p99.9 | max | admitted |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rs {
		fmt.Fprintf(w, "| %d | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f |\n",
			r.Goroutines, loadName(r.Load), r.Impl, r.WallNs, r.P50, r.P90, r.P99, r.P999, r.Max, r.Admitted)
	}
	fmt.Fprintln(w)
}

func find(rs []Result, impl string, g, load int) (Result, bool) {
	for _, r := range rs {
		if r.Impl == impl && r.Goroutines == g && r.Load == load {
			return r, true
		}
	}
	return Result{}, false
}

// printTargets compares, at each goroutine count, the wall time per call on
// a quiet machine and the p99 under load with the goals.
func printTargets(w io.Writer, rs []Result) {
	type goal struct {
		a, b  string
		max   float64
		field string // "wall" (quiet) or "p99" (loaded)
	}
	goals := []goal{
		{"ring", "mutexlog", 1.0, "wall"},
		{"window", "mutexwindow", 1.0, "wall"},
		{"multi", "ring", 1.3, "wall"},
		{"multiapprox", "window", 1.5, "wall"},
		{"ring", "xrate", 0.7, "wall"},
		{"window", "xrate", 0.7, "wall"},
		{"multi", "xrate", 0.7, "wall"},
		{"multiapprox", "xrate", 0.7, "wall"},
		{"ring", "mutexlog", 0.5, "p99"},
		{"window", "mutexwindow", 0.5, "p99"},
		{"multi", "mutexmulti", 0.5, "p99"},
		{"multiapprox", "mutexmultiapprox", 0.5, "p99"},
	}
	gs, loads := map[int]bool{}, map[int]bool{}
	open := false // on a schedule, wall time is the schedule's: only p99 is judged
	for _, r := range rs {
		gs[r.Goroutines] = true
		loads[r.Load] = true
		open = open || r.PeriodNs > 0
	}
	if open {
		fmt.Fprintf(w, "## Targets\n\nOpen loop: only the p99 under background load is judged (wall time is the schedule's): "+
			"p99 of every lock-free limiter <= 0.5x its mutex twin's.\n\n")
	} else {
		fmt.Fprintf(w, "## Targets\n\nNo added load (background none): wall time per call, lock-free within noise of its mutex twin "+
			"or better (shown against 1.0x; a few percent above is noise), multi (two rules) <= 1.3x ring, "+
			"multi.Approx <= 1.5x window, every one <= 0.7x x/time/rate. Under background load: p99 of every "+
			"lock-free limiter <= 0.5x its mutex twin's.\n\n")
	}
	fmt.Fprintf(w, "| goroutines | background | measure | ratio | goal | met |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, g := range sortedKeys(gs) {
		for _, ld := range sortedKeys(loads) {
			for _, gl := range goals {
				if (gl.field == "wall") != (ld == 0) || open && gl.field == "wall" {
					continue
				}
				a, ok1 := find(rs, gl.a, g, ld)
				b, ok2 := find(rs, gl.b, g, ld)
				if !ok1 || !ok2 {
					continue
				}
				va, vb := a.WallNs, b.WallNs
				if gl.field == "p99" {
					va, vb = a.P99, b.P99
				}
				x := va / vb
				met := "met"
				if x > gl.max {
					met = "not met"
					if gl.max == 1.0 && x <= 1.05 {
						met = "within noise (<= 1.05x)"
					}
				}
				fmt.Fprintf(w, "| %d | %s | %s %s / %s | %.2fx (%.0f / %.0f ns) | <= %.1fx | %s |\n",
					g, loadName(ld), gl.field, gl.a, gl.b, x, va, vb, gl.max, met)
			}
		}
	}
	fmt.Fprintln(w)
}

func sortedKeys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

var palette = []color.Color{
	color.RGBA{G: 140, B: 60, A: 255},  // green
	color.RGBA{B: 200, G: 80, A: 255},  // blue
	color.RGBA{R: 200, A: 255},         // red
	color.RGBA{R: 150, B: 150, A: 255}, // purple
	color.RGBA{R: 220, G: 140, A: 255}, // orange
	color.RGBA{A: 255},                 // black
	color.RGBA{G: 170, B: 190, A: 255}, // teal
}

// style gives each implementation a colour (one per algorithm) and a dash
// pattern (solid: lock-free or a peer; dashed: the mutex twin).
func style(impl string) (color.Color, []vg.Length) {
	dashed := []vg.Length{vg.Points(5), vg.Points(3)}
	switch impl {
	case "ring":
		return palette[0], nil
	case "mutexlog":
		return palette[0], dashed
	case "window":
		return palette[1], nil
	case "mutexwindow":
		return palette[1], dashed
	case "multi":
		return palette[3], nil
	case "mutexmulti":
		return palette[3], dashed
	case "multiapprox":
		return palette[4], nil
	case "mutexmultiapprox":
		return palette[4], dashed
	case "xrate":
		return palette[2], nil
	case "none":
		return color.Gray{Y: 150}, []vg.Length{vg.Points(1), vg.Points(2)}
	case "keyed.Window":
		return palette[6], nil
	case "keyed-window":
		return palette[1], nil
	case "keyed-ring":
		return palette[0], nil
	case "sethvargo":
		return palette[2], nil
	case "throttled":
		return palette[3], nil
	case "ulule":
		return palette[4], nil
	case "httprate":
		return palette[5], nil
	}
	return palette[5], nil
}

var quantiles = []string{"p50", "p90", "p99", "p99.9", "max"}

func values(r Result) []float64 { return []float64{r.P50, r.P90, r.P99, r.P999, r.Max} }

// plotLatency draws latency-single.png and latency-keyed.png: one panel per
// (goroutines, background load), x the percentile, y the latency on a log
// scale, one line per implementation.
func plotLatency(rs []Result, dir string) error {
	for _, kind := range []string{"single", "keyed"} {
		var panels []*plot.Plot
		gs, loads := map[int]bool{}, map[int]bool{}
		for _, r := range rs {
			if r.Kind == kind {
				gs[r.Goroutines], loads[r.Load] = true, true
			}
		}
		for _, g := range sortedKeys(gs) {
			for _, ld := range sortedKeys(loads) {
				p := plot.New()
				what := "one shared limiter, admit path"
				if kind == "keyed" {
					what = "keyed, 100k keys, random order"
				}
				p.Title.Text = fmt.Sprintf("%s: %d goroutines, %s", what, g, map[bool]string{true: "no added load", false: fmt.Sprintf("%d busy goroutines beside", ld)}[ld == 0])
				p.Title.TextStyle.Font.Size = vg.Points(10)
				p.X.Label.Text = "percentile of per-call latency (max: over all runs)"
				p.Y.Label.Text = "ns per call (log scale)"
				p.Y.Scale = plot.LogScale{}
				p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
				p.NominalX(quantiles...)
				p.Legend.Top = true
				p.Legend.Left = true
				p.Legend.TextStyle.Font.Size = vg.Points(8)
				top := 1.0
				for _, r := range rs {
					if r.Kind != kind || r.Goroutines != g || r.Load != ld {
						continue
					}
					top = max(top, r.Max)
					pts := make(plotter.XYs, len(quantiles))
					for i, v := range values(r) {
						pts[i] = plotter.XY{X: float64(i), Y: math.Max(v, 1)}
					}
					l, err := plotter.NewLine(pts)
					if err != nil {
						return err
					}
					l.Color, l.Dashes = style(r.Impl)
					l.Width = vg.Points(1.5)
					p.Add(l)
					p.Legend.Add(r.Impl, l)
				}
				// Room above the lines for the legend.
				p.Y.Min, p.Y.Max = 10, top*1000
				panels = append(panels, p)
			}
		}
		if len(panels) == 0 {
			continue
		}
		cols := len(loads)
		rows := (len(panels) + cols - 1) / cols
		if err := save(filepath.Join(dir, "latency-"+kind+".png"), panels, cols, rows); err != nil {
			return err
		}
	}
	return nil
}

func save(path string, ps []*plot.Plot, cols, rows int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(cols)*15*vg.Centimeter, vg.Length(rows)*10*vg.Centimeter), vgimg.UseDPI(96))
	dc := draw.New(img)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	grid := make([][]*plot.Plot, rows)
	for j := range grid {
		grid[j] = make([]*plot.Plot, cols)
		for i := range cols {
			if k := j*cols + i; k < len(ps) {
				grid[j][i] = ps[k]
			}
		}
	}
	canvases := plot.Align(grid, t, dc)
	for j := range grid {
		for i := range grid[j] {
			if grid[j][i] != nil {
				grid[j][i].Draw(canvases[j][i])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
