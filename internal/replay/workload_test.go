package replay

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// byName returns the workloads by name, checking the properties every one
// shares: arrivals in non-decreasing order, costs of at least 1, and a
// presented instant neither after the arrival nor before the epoch.
func byName(t *testing.T) map[string]Workload {
	t.Helper()
	ws := map[string]Workload{}
	for _, w := range Workloads() {
		if _, dup := ws[w.Name]; dup {
			t.Fatalf("two workloads named %s", w.Name)
		}
		ws[w.Name] = w
		for i, c := range w.Calls {
			if i > 0 && c.At < w.Calls[i-1].At {
				t.Fatalf("%s: call %d at %v, before call %d at %v", w.Name, i, c.At, i-1, w.Calls[i-1].At)
			}
			if c.N < 1 || c.Stale < 0 || c.Presented() < 0 {
				t.Fatalf("%s: call %d %+v: want N >= 1, Stale >= 0, a presented instant not before the epoch", w.Name, i, c)
			}
		}
	}
	return ws
}

// instants counts the calls at each arrival instant.
func instants(cs []Call) map[time.Duration]int {
	m := map[time.Duration]int{}
	for _, c := range cs {
		m[c.At]++
	}
	return m
}

// TestDeterministicWorkloadsAreAsDescribed pins the workloads without
// randomness to their descriptions: the instants and counts of every call.
func TestDeterministicWorkloadsAreAsDescribed(t *testing.T) {
	ws := byName(t)
	ms := time.Millisecond
	periodic := func(name string, from, every, until time.Duration) {
		t.Helper()
		cs := ws[name].Calls
		want := int((until - from + every - 1) / every)
		if len(cs) != want {
			t.Fatalf("%s: %d calls, want %d", name, len(cs), want)
		}
		for i, c := range cs {
			if c.At != from+time.Duration(i)*every || c.N != 1 || c.Stale != 0 {
				t.Fatalf("%s: call %d %+v, want one of cost 1 at %v", name, i, c, from+time.Duration(i)*every)
			}
		}
	}
	periodic("every-8ms", 8*ms, 8*ms, 10*time.Second)
	periodic("idle-then-flood", 3*time.Second, ms, 6*time.Second)

	edge := 2 * Window
	if got, want := instants(ws["edge-burst"].Calls), map[time.Duration]int{edge - ms: 100, edge + ms: 100}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("edge-burst: calls per instant %v, want %v", got, want)
	}
	flood := instants(ws["edge-burst-flood"].Calls)
	if flood[edge-Window] != 1 || flood[edge-ms] != 99 || len(flood) != 2+1999 {
		t.Errorf("edge-burst-flood: %d at %v, %d at %v, %d instants; want 1, 99 and 2001", flood[edge-Window], edge-Window, flood[edge-ms], edge-ms, len(flood))
	}
	for at := edge + ms; at < edge+2*Window; at += ms {
		if flood[at] != 1 {
			t.Fatalf("edge-burst-flood: %d calls at %v, want 1", flood[at], at)
		}
	}
	bursts := instants(ws["bursts-60-every-600ms"].Calls)
	n := 0
	for at := 500 * ms; at < 10*time.Second; at += 600 * ms {
		if bursts[at] != 60 {
			t.Errorf("bursts-60-every-600ms: %d calls at %v, want 60", bursts[at], at)
		}
		n++
	}
	if len(bursts) != n {
		t.Errorf("bursts-60-every-600ms: %d instants, want %d", len(bursts), n)
	}
}

// TestRandomWorkloadsAreAsDescribed checks the Poisson workloads against
// their descriptions: the number of arrivals (or their total cost) within
// five standard deviations of the rate's, inside the duration; costs uniform
// in 1..10 for weighted-3x; stale instants in [0, 5 ms) for stale-3x, and
// none elsewhere.
func TestRandomWorkloadsAreAsDescribed(t *testing.T) {
	ws := byName(t)
	d := 20 * time.Second
	near := func(name string, got, want, sd float64) {
		t.Helper()
		if math.Abs(got-want) > 5*sd {
			t.Errorf("%s: %.0f, want %.0f ± %.0f", name, got, want, 5*sd)
		}
	}
	for _, load := range []float64{0.5, 1, 3, 10} {
		name := fmt.Sprintf("poisson-%gx", load)
		cs := ws[name].Calls
		mean := load * Limit * d.Seconds()
		near(name+" calls", float64(len(cs)), mean, math.Sqrt(mean))
		for _, c := range cs {
			if c.N != 1 || c.Stale != 0 || c.At >= d {
				t.Fatalf("%s: call %+v, want cost 1, not stale, before %v", name, c, d)
			}
		}
	}

	w := ws["weighted-3x"].Calls
	var cost float64
	seen := map[int]int{}
	for _, c := range w {
		if c.N < 1 || c.N > 10 || c.Stale != 0 || c.At >= d {
			t.Fatalf("weighted-3x: call %+v, want cost 1..10, not stale, before %v", c, d)
		}
		cost += float64(c.N)
		seen[c.N]++
	}
	// Arrivals at 3*Limit/5.5 per second, each of mean cost 5.5 and
	// variance (10^2-1)/12: the total is compound Poisson.
	rate := 3 * Limit / 5.5 * d.Seconds()
	near("weighted-3x cost", cost, 3*Limit*d.Seconds(), math.Sqrt(rate*(5.5*5.5+99.0/12)))
	for n := 1; n <= 10; n++ {
		near(fmt.Sprintf("weighted-3x calls of cost %d", n), float64(seen[n]), float64(len(w))/10, math.Sqrt(float64(len(w))/10))
	}

	s := ws["stale-3x"].Calls
	near("stale-3x calls", float64(len(s)), 3*Limit*d.Seconds(), math.Sqrt(3*Limit*d.Seconds()))
	var largest, sum time.Duration
	for _, c := range s {
		if c.N != 1 || c.Stale >= 5*time.Millisecond || c.At >= d {
			t.Fatalf("stale-3x: call %+v, want cost 1, stale under 5 ms, before %v", c, d)
		}
		largest = max(largest, c.Stale)
		sum += c.Stale
	}
	if largest < 4900*time.Microsecond {
		t.Errorf("stale-3x: the stalest call is %v stale, want up to 5 ms", largest)
	}
	if mean := sum / time.Duration(len(s)); mean < 2400*time.Microsecond || mean > 2600*time.Microsecond {
		t.Errorf("stale-3x: mean staleness %v, want about 2.5 ms (uniform)", mean)
	}
	for _, name := range []string{"every-8ms", "edge-burst", "edge-burst-flood", "bursts-60-every-600ms", "idle-then-flood", "weighted-3x"} {
		for _, c := range ws[name].Calls {
			if c.Stale != 0 {
				t.Fatalf("%s: call %+v is stale", name, c)
			}
		}
	}
}
