package keyed

// Benchmarks of a Limiter against its parts, measured in the same run:
//
//   - AllowN: a decision through the Limiter, for 1, 1k, 100k and 1M keys;
//   - Lookup: the bare map lookup, on the Limiter's own map;
//   - Bare: the bare limiter decision, on one limiter (hot in cache) and
//     cycling over the Limiter's own limiters (as cold as in AllowN);
//
// so that AllowN can be compared with Lookup + Bare (docs/keyed.md). Keys are
// visited in a fixed random order, the same in every benchmark of a size,
// and independent of the order they were created in: limiters, entries and
// key copies are allocated one after another at creation, so visiting keys
// in creation order walks memory in address order, which the hardware
// prefetcher follows (until 2026-11-25 it did: Bare at 100k limiters cost
// what Bare on one limiter does).
// Each benchmark runs serially (b.Loop) and with RunParallel.
//
// The "admit" workload advances the instant so that every key stays well
// under its limit (each key is revisited at most limit/2 times per window by
// each goroutine); the "deny" workload exhausts every key first and then
// calls at that instant. Each benchmark reports the fraction it admitted.
//
// BytesPerKey builds 1M keys and reports the heap they take.
//
// Run: go test -run='^$' -bench=. -benchmem -count=10 -cpu=1,2 ./keyed/

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

const (
	benchLimit  = 10
	benchWindow = time.Second
	// benchSeed fixes the order in which keys are visited.
	benchSeed = 20261121
)

// benchKeys returns n distinct keys in a fixed random order. It checks
// that they are distinct (a fixture that is never checked measures something
// else).
func benchKeys(b *testing.B, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("user-%08d", i)
	}
	r := rand.New(rand.NewPCG(benchSeed, uint64(n)))
	r.Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	seen := make(map[string]struct{}, n)
	for _, k := range keys {
		seen[k] = struct{}{}
	}
	if len(seen) != n {
		b.Fatalf("fixture: %d distinct keys, want %d", len(seen), n)
	}
	return keys
}

// fixture is a Limiter holding n keys, with its limiters in key order (the
// visiting order), cached across the runs of a benchmark (-count) because
// building 1M keys is slow.
type fixture[L PerKey] struct {
	keys []string
	k    *Limiter[string, L]
	lims []L // lims[i] is keys[i]'s limiter
	// next is an instant after every instant any benchmark used: each run
	// starts there, so that no run presents instants older than the state.
	next time.Time
}

var (
	fixturesMu sync.Mutex
	fixtures   = map[string]any{}
)

func getFixture[L PerKey](b *testing.B, name string, n int, newLimiter func() (L, error)) *fixture[L] {
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	id := fmt.Sprint(name, "/", n)
	if f, ok := fixtures[id]; ok {
		return f.(*fixture[L])
	}
	keys := benchKeys(b, n)
	k, err := New[string](newLimiter, MaxKeys(max(n, 1)))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Unix(1_700_000_000, 0)
	f := &fixture[L]{keys: keys, k: k, lims: make([]L, n), next: start}
	for i, key := range keys {
		if !k.AllowN(key, start, 1) {
			b.Fatalf("fixture: key %d refused at creation", i)
		}
		e, ok := k.keys.load(key)
		if !ok {
			b.Fatalf("fixture: key %d absent after creation", i)
		}
		f.lims[i] = e.lim
	}
	if k.Len() != n {
		b.Fatalf("fixture: Len() = %d, want %d", k.Len(), n)
	}
	// Sweep once, as a server does periodically, so that calls take the
	// path with a floor. Nothing is idle yet.
	if got := k.Sweep(start); got != 0 {
		b.Fatalf("fixture: Sweep removed %d keys", got)
	}
	// Visit in an order independent of the creation order (see the top).
	r := rand.New(rand.NewPCG(benchSeed+1, uint64(n)))
	r.Shuffle(n, func(i, j int) {
		f.keys[i], f.keys[j] = f.keys[j], f.keys[i]
		f.lims[i], f.lims[j] = f.lims[j], f.lims[i]
	})
	f.next = start.Add(3 * benchWindow)
	fixtures[id] = f
	return f
}

// stepFor returns how far the instant advances per call so that each key
// is called at most limit/2 times per window by each of procs goroutines.
func stepFor(n, procs int) time.Duration {
	return 2 * benchWindow * time.Duration(procs) / benchLimit / time.Duration(n)
}

// workload says how a benchmark calls: decide(i, now) makes call i (on key
// i) at now and reports whether it admitted.
type workload struct {
	// deny: exhaust every key first, then call at that instant; otherwise
	// the instant advances by stepFor per call and every call should admit.
	deny bool
	// lookup: decide's result is not a decision; report no admit/op.
	lookup bool
	decide func(i int, now time.Time) bool
}

// run runs w serially and in parallel. Every invocation starts at the
// fixture's next instant, where every key is idle (or, for deny, has just
// been exhausted), so that invocations do not depend on each other.
func run[L PerKey](b *testing.B, f *fixture[L], w workload) {
	n := len(f.keys)
	begin := func(b *testing.B) time.Time {
		start := f.next
		if w.deny {
			exhaust(b, f, start)
		}
		b.ReportAllocs()
		b.ResetTimer()
		return start
	}
	end := func(b *testing.B, admitted, calls int64, last time.Time) {
		b.StopTimer()
		if calls > 0 && !w.lookup {
			b.ReportMetric(float64(admitted)/float64(calls), "admit/op")
		}
		f.next = last.Add(3 * benchWindow) // everything is idle there
	}
	b.Run("serial", func(b *testing.B) {
		start := begin(b)
		step := stepFor(n, 1)
		if w.deny {
			step = 0
		}
		var admitted, i int64
		now := start
		for b.Loop() {
			now = now.Add(step)
			if w.decide(int(i%int64(n)), now) {
				admitted++
			}
			i++
		}
		end(b, admitted, i, now)
	})
	b.Run("parallel", func(b *testing.B) {
		procs := runtime.GOMAXPROCS(0)
		start := begin(b)
		step := stepFor(n, procs)
		if w.deny {
			step = 0
		}
		var admitted, calls atomic.Int64
		var last atomic.Int64 // largest offset from start used
		var id atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			// Each goroutine starts at its own place in the key order.
			i := int(id.Add(1)-1) * (n / procs)
			now := start
			var a, c int64
			for pb.Next() {
				now = now.Add(step)
				if w.decide(i%n, now) {
					a++
				}
				i++
				c++
			}
			admitted.Add(a)
			calls.Add(c)
			for d := int64(now.Sub(start)); ; {
				old := last.Load()
				if d <= old || last.CompareAndSwap(old, d) {
					break
				}
			}
		})
		end(b, admitted.Load(), calls.Load(), start.Add(time.Duration(last.Load())))
	})
}

// exhaust takes every key to its limit at instant at.
func exhaust[L PerKey](b *testing.B, f *fixture[L], at time.Time) {
	for i, key := range f.keys {
		f.k.AllowN(key, at, benchLimit)
		if f.k.TokensAt(key, at) != 0 {
			b.Fatalf("fixture: key %d not exhausted", i)
		}
	}
}

// benchLimiter runs the benchmarks of one limiter type.
func benchLimiter[L PerKey](b *testing.B, name string, newLimiter func() (L, error), sizes []int, denySizes []int) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("AllowN/lim=%s/keys=%s/admit", name, size(n)), func(b *testing.B) {
			f := getFixture(b, name, n, newLimiter)
			run(b, f, workload{decide: func(i int, now time.Time) bool { return f.k.AllowN(f.keys[i], now, 1) }})
		})
	}
	for _, n := range denySizes {
		b.Run(fmt.Sprintf("AllowN/lim=%s/keys=%s/deny", name, size(n)), func(b *testing.B) {
			f := getFixture(b, name, n, newLimiter)
			run(b, f, workload{deny: true, decide: func(i int, now time.Time) bool { return f.k.AllowN(f.keys[i], now, 1) }})
		})
	}
	for _, n := range denySizes {
		// The bare decision, on the Limiter's own limiters, same order.
		b.Run(fmt.Sprintf("Bare/lim=%s/limiters=%s/admit", name, size(n)), func(b *testing.B) {
			f := getFixture(b, name, n, newLimiter)
			run(b, f, workload{decide: func(i int, now time.Time) bool { return f.lims[i].AllowN(now, 1) }})
		})
		// The bare lookup, on the Limiter's own map, same order.
		b.Run(fmt.Sprintf("Lookup/lim=%s/keys=%s", name, size(n)), func(b *testing.B) {
			f := getFixture(b, name, n, newLimiter)
			run(b, f, workload{lookup: true, decide: func(i int, now time.Time) bool {
				_, ok := f.k.keys.load(f.keys[i])
				return ok
			}})
		})
	}
	// The bare decision on one limiter, hot in cache.
	b.Run(fmt.Sprintf("Bare/lim=%s/limiters=1/admit", name), func(b *testing.B) {
		f := getFixture(b, name, 1, newLimiter)
		run(b, f, workload{decide: func(i int, now time.Time) bool { return f.lims[0].AllowN(now, 1) }})
	})
}

func size(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprint(n/1_000_000, "M")
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprint(n/1000, "k")
	}
	return fmt.Sprint(n)
}

func newWindow() (*window.Limiter, error) { return window.New(benchLimit, benchWindow) }
func newRing() (*ring.Limiter, error)     { return ring.New(benchLimit, benchWindow) }

// The two rules of multi: 10 per second and 100 per minute. The exact
// flavour keeps 8 bytes per unit of the largest limit (100 here).
var multiRules = []multi.Rule{{Limit: benchLimit, Window: benchWindow}, {Limit: 10 * benchLimit, Window: time.Minute}}

func newMulti() (*multi.Limiter, error)      { return multi.New(multiRules...) }
func newMultiApprox() (*multi.Approx, error) { return multi.NewApprox(multiRules...) }

func BenchmarkKeyed(b *testing.B) {
	benchLimiter(b, "window", newWindow, []int{1, 1000, 100_000, 1_000_000}, []int{100_000})
	benchLimiter(b, "ring", newRing, []int{100_000, 1_000_000}, []int{100_000})
	// Allow reads time.Now itself: the decision plus a clock read.
	b.Run("Allow/lim=window/keys=100k", func(b *testing.B) {
		// Its own fixture: Allow leaves state at real instants, later than
		// the simulated ones the other benchmarks use.
		f := getFixture(b, "window-realclock", 100_000, newWindow)
		run(b, f, workload{decide: func(i int, _ time.Time) bool { return f.k.Allow(f.keys[i]) }})
	})
}

// bytesPerKey measures, once per process, the heap taken by n keys of a
// Limiter over L (the keys' strings excluded: they belong to the caller), and
// by n bare limiters.
type memResult struct{ total, limiter float64 }

var (
	memMu      sync.Mutex
	memResults = map[string]memResult{}
)

func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func measureBytes[L PerKey](b *testing.B, name string, n int, newLimiter func() (L, error)) memResult {
	memMu.Lock()
	defer memMu.Unlock()
	if r, ok := memResults[name]; ok {
		return r
	}
	keys := benchKeys(b, n)
	lims := make([]L, n)
	before := liveHeap()
	for i := range lims {
		l, err := newLimiter()
		if err != nil {
			b.Fatal(err)
		}
		lims[i] = l
	}
	limBytes := float64(liveHeap()-before) / float64(n)
	runtime.KeepAlive(lims)
	clear(lims)
	lims = nil

	k, err := New[string](newLimiter, MaxKeys(n))
	if err != nil {
		b.Fatal(err)
	}
	r := memResult{total: heapPerKey(b, keys, k), limiter: limBytes} // lims was allocated before the first reading
	memResults[name] = r
	return r
}

// heapPerKey returns the live heap per key that s takes to hold keys, each
// with one admission. s is made (empty) before the first reading.
func heapPerKey(b *testing.B, keys []string, s interface {
	AllowN(key string, now time.Time, n int) bool
	Len() int
}) float64 {
	before := liveHeap()
	at := time.Unix(1_700_000_000, 0)
	for _, key := range keys {
		s.AllowN(key, at, 1)
	}
	if s.Len() != len(keys) {
		b.Fatalf("Len() = %d, want %d", s.Len(), len(keys))
	}
	total := float64(liveHeap()-before) / float64(len(keys))
	runtime.KeepAlive(s)
	runtime.KeepAlive(keys)
	return total
}

// measureWindowBytes returns, once per process, the heap per key of a Window
// holding n keys (the keys' strings excluded: they belong to the caller).
func measureWindowBytes(b *testing.B, n int) float64 {
	memMu.Lock()
	defer memMu.Unlock()
	if r, ok := memResults["Window"]; ok {
		return r.total
	}
	w, err := NewWindow[string](benchLimit, benchWindow, MaxKeys(n))
	if err != nil {
		b.Fatal(err)
	}
	total := heapPerKey(b, benchKeys(b, n), w)
	memResults["Window"] = memResult{total: total}
	return total
}

// BenchmarkBytesPerKey reports the heap per key of a Limiter holding 1M keys:
// B/key in total, the limiter's share (lim-B/key) and the rest, the map and
// the Limiter's entry (map-B/key). The measurement is made once per process;
// the timed loop is empty.
func BenchmarkBytesPerKey(b *testing.B) {
	const n = 1_000_000
	report := func(b *testing.B, r memResult) {
		for b.Loop() {
		}
		b.ReportMetric(r.total, "B/key")
		b.ReportMetric(r.limiter, "lim-B/key")
		b.ReportMetric(r.total-r.limiter, "map-B/key")
	}
	b.Run("Window", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(measureWindowBytes(b, n), "B/key")
	})
	b.Run("lim=window", func(b *testing.B) { report(b, measureBytes(b, "window", n, newWindow)) })
	b.Run("lim=ring10", func(b *testing.B) { report(b, measureBytes(b, "ring10", n, newRing)) })
	b.Run("lim=multi2", func(b *testing.B) { report(b, measureBytes(b, "multi2", n, newMulti)) })
	b.Run("lim=multiApprox2", func(b *testing.B) { report(b, measureBytes(b, "multiApprox2", n, newMultiApprox)) })
}

// BenchmarkSweep measures a sweep over n keys of which none is idle (the
// cost of visiting a key: ns/key), and, once per n, a sweep that removes
// every key (evict-ns/key).
func BenchmarkSweep(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("lim=window/keys=%s", size(n)), func(b *testing.B) {
			f := getFixture(b, "window-sweep", n, newWindow)
			at := f.next
			for _, key := range f.keys {
				f.k.AllowN(key, at, 1)
			}
			for b.Loop() {
				if got := f.k.Sweep(at); got != 0 {
					b.Fatalf("Sweep removed %d keys, want 0", got)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
			b.ReportMetric(evictAll(b, n), "evict-ns/key")
		})
	}
}

// BenchmarkSweepWindow is BenchmarkSweep for a Window.
func BenchmarkSweepWindow(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%s", size(n)), func(b *testing.B) {
			keys := benchKeys(b, n)
			w, err := NewWindow[string](benchLimit, benchWindow, MaxKeys(n))
			if err != nil {
				b.Fatal(err)
			}
			at := time.Unix(1_700_000_000, 0)
			for _, key := range keys {
				w.AllowN(key, at, 1)
			}
			for b.Loop() {
				if got := w.Sweep(at); got != 0 {
					b.Fatalf("Sweep removed %d keys, want 0", got)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
			b.StopTimer()
			start := time.Now()
			if got := w.Sweep(at.Add(time.Hour)); got != n {
				b.Fatalf("Sweep removed %d keys, want %d", got, n)
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n), "evict-ns/key")
		})
	}
}

var (
	evictMu      sync.Mutex
	evictResults = map[int]float64{}
)

// evictAll returns the time per key of a sweep that removes all of n keys,
// measured once per process.
func evictAll(b *testing.B, n int) float64 {
	evictMu.Lock()
	defer evictMu.Unlock()
	if r, ok := evictResults[n]; ok {
		return r
	}
	keys := benchKeys(b, n)
	k, err := New[string](newWindow, MaxKeys(n))
	if err != nil {
		b.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 0)
	for _, key := range keys {
		k.AllowN(key, at, 1)
	}
	start := time.Now()
	if got := k.Sweep(at.Add(time.Hour)); got != n {
		b.Fatalf("Sweep removed %d keys, want %d", got, n)
	}
	r := float64(time.Since(start).Nanoseconds()) / float64(n)
	evictResults[n] = r
	return r
}
