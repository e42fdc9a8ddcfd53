package main

import (
	"bufio"
	"image/color"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// redisRuns holds redis/bench.sh's raw output (its RAW file): per decider and
// number of goroutines, the decisions per second of each run, in run order.
type redisRuns struct {
	dps      map[redisCell][]float64
	deciders []string // in the order first seen
	gs       []int    // ascending
}

type redisCell struct {
	decider string
	g       int
}

// parseRedis reads lines "runN BenchmarkDecide/DECIDER/g=G-P ... X decisions/s ...".
func parseRedis(path string) (redisRuns, error) {
	r := redisRuns{dps: map[redisCell][]float64{}}
	f, err := os.Open(path)
	if err != nil {
		return r, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 || !strings.HasPrefix(fs[1], "BenchmarkDecide/") {
			continue
		}
		parts := strings.Split(fs[1], "/")
		if len(parts) != 3 {
			continue
		}
		gs, _, _ := strings.Cut(strings.TrimPrefix(parts[2], "g="), "-")
		g, err := strconv.Atoi(gs)
		if err != nil {
			continue
		}
		for i := 2; i+1 < len(fs); i++ {
			if fs[i+1] != "decisions/s" {
				continue
			}
			v, err := strconv.ParseFloat(fs[i], 64)
			if err != nil {
				break
			}
			c := redisCell{parts[1], g}
			if !slices.Contains(r.deciders, c.decider) {
				r.deciders = append(r.deciders, c.decider)
			}
			if !slices.Contains(r.gs, g) {
				r.gs = append(r.gs, g)
			}
			r.dps[c] = append(r.dps[c], v)
		}
	}
	slices.Sort(r.gs)
	return r, sc.Err()
}

// plotRedis draws the median decisions per second of each decider at each
// number of goroutines: one panel for go-redis's plain client, one for its
// deferred autopipeliner (the deciders named "-ap").
func plotRedis(r redisRuns, dir string) error {
	if len(r.dps) == 0 {
		return nil
	}
	var panels []*plot.Plot
	for _, ap := range []bool{false, true} {
		// Ours first, redis_rate last; a decider has one colour in both
		// panels.
		order := slices.Clone(r.deciders)
		slices.SortStableFunc(order, func(a, b string) int {
			return redisRank(a) - redisRank(b)
		})
		var shown []string
		for _, d := range order {
			if strings.HasSuffix(d, "-ap") == ap {
				shown = append(shown, d)
			}
		}
		if len(shown) == 0 {
			continue
		}
		p := plot.New()
		p.Title.Text = "go-redis client: decisions per second (median of the runs), higher is better"
		if ap {
			p.Title.Text = "go-redis deferred autopipeliner: decisions per second (median), higher is better"
		}
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.Y.Label.Text = "decisions/s"
		p.X.Label.Text = "goroutines"
		p.Y.Min = 0
		width := vg.Points(14)
		for i, d := range shown {
			vals := make(plotter.Values, len(r.gs))
			for j, g := range r.gs {
				vals[j] = median(r.dps[redisCell{d, g}])
			}
			bc, err := plotter.NewBarChart(vals, width)
			if err != nil {
				return err
			}
			bc.Color = redisColor(redisRank(d))
			bc.LineStyle.Width = 0
			bc.Offset = vg.Length(float64(i)-float64(len(shown)-1)/2) * width
			p.Add(bc)
			p.Legend.Add(d, bc)
		}
		names := make([]string, len(r.gs))
		for j, g := range r.gs {
			names[j] = strconv.Itoa(g)
		}
		p.NominalX(names...)
		p.X.Min, p.X.Max = -0.5, float64(len(r.gs))-0.5
		p.Legend.Top = true
		p.Legend.Left = true
		p.Legend.TextStyle.Font.Size = vg.Points(9)
		panels = append(panels, p)
	}
	header := []string{
		"redis/bench.sh: decisions on a local redis-server, 1000 keys drawn at random, the server's clock.",
		"One rule of 100/s (log-3rules: 100/s, 1000/min, 10000/h; buckets: 100 ms precision).",
		"Peers: redis_rate (GCRA at 100/s, burst 100), httprate-redis (through httprate's middleware), ulule (fixed window);",
		"zset-log: the common sorted-set sliding log, for comparison.",
		"The deciders take turns within each run (docs/redis.md).",
	}
	rows := [][]*plot.Plot{}
	for _, p := range panels {
		rows = append(rows, []*plot.Plot{p})
	}
	return savePNG(dir, "speed-redis.png", 1, len(rows), 24*vg.Centimeter, vg.Length(len(rows))*10*vg.Centimeter, rows, header...)
}

// redisRank orders the deciders in the plot, and picks their colour: the
// same for a decider on the plain client and on the autopipeliner.
func redisRank(d string) int {
	base := strings.TrimSuffix(d, "-ap")
	for i, n := range []string{"log", "window", "buckets", "log-3rules", "redis_rate", "httprate-redis", "ulule", "zset-log"} {
		if n == base {
			return i
		}
	}
	return 8
}

// redisColor is decider rank i's colour: the plot's seven, then grey.
func redisColor(i int) color.Color {
	if i < len(plotutil.DefaultColors) {
		return plotutil.Color(i)
	}
	return color.Gray{Y: 110}
}
