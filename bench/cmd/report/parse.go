package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// sample is one benchmark result line.
type sample struct {
	ns, bytes, allocs, admits float64
	hasAdmits                 bool
}

// results maps "name@cpu" (cpu 1 for a name without a -N suffix) to samples.
type results map[string][]sample

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-(\d+))?\s+\d+\s+([\d.e+]+) ns/op(.*)$`)

func parseBench(paths []string) (results, error) {
	r := results{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			m := benchLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			cpu := 1
			if m[2] != "" {
				cpu, _ = strconv.Atoi(m[2])
			}
			var s sample
			s.ns, _ = strconv.ParseFloat(m[3], 64)
			fields := strings.Fields(m[4])
			for i := 0; i+1 < len(fields); i += 2 {
				v, err := strconv.ParseFloat(fields[i], 64)
				if err != nil {
					continue
				}
				switch fields[i+1] {
				case "B/op":
					s.bytes = v
				case "allocs/op":
					s.allocs = v
				case "admits/op":
					s.admits, s.hasAdmits = v, true
				}
			}
			key := fmt.Sprintf("%s@%d", m[1], cpu)
			r[key] = append(r[key], s)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// stat is the median of each measure over a benchmark's samples, as
// benchstat's center.
type stat struct {
	ns, bytes, allocs, admits float64
	n                         int
	ok                        bool
}

func (r results) get(name string, cpu int) stat {
	ss := r[fmt.Sprintf("%s@%d", name, cpu)]
	if len(ss) == 0 {
		return stat{}
	}
	var ns, b, a, ad []float64
	for _, s := range ss {
		ns = append(ns, s.ns)
		b = append(b, s.bytes)
		a = append(a, s.allocs)
		ad = append(ad, s.admits)
	}
	return stat{ns: median(ns), bytes: median(b), allocs: median(a), admits: median(ad), n: len(ss), ok: true}
}

// memResult is one line of cmd/memkey.
type memResult struct {
	store       string
	keys        int
	bytesPerKey float64
	keyBytes    float64 // mean length of a key
}

type ringMem struct {
	limit  int
	bytes  float64
	header float64
}

var memLine = regexp.MustCompile(`^memkey store=(\S+) keys=(\d+) bytes=\d+ bytes/key=([\d.]+)(?: keybytes=([\d.]+))?`)
var ringLine = regexp.MustCompile(`^memring limit=(\d+) bytes/limiter=([\d.]+) slots=\d+ header=([-\d.]+)`)

func parseMem(path string) ([]memResult, []ringMem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var ms []memResult
	var rs []ringMem
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := memLine.FindStringSubmatch(sc.Text()); m != nil {
			k, _ := strconv.Atoi(m[2])
			b, _ := strconv.ParseFloat(m[3], 64)
			kb, _ := strconv.ParseFloat(m[4], 64)
			ms = append(ms, memResult{store: m[1], keys: k, bytesPerKey: b, keyBytes: kb})
		}
		if m := ringLine.FindStringSubmatch(sc.Text()); m != nil {
			l, _ := strconv.Atoi(m[1])
			b, _ := strconv.ParseFloat(m[2], 64)
			h, _ := strconv.ParseFloat(m[3], 64)
			rs = append(rs, ringMem{limit: l, bytes: b, header: h})
		}
	}
	return ms, rs, sc.Err()
}
