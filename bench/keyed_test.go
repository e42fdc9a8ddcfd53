package bench

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/bench/stores"
)

// keyCounts returns the cardinalities measured. 100k and 1M keys only when
// BENCH_FULL is set (compare.sh sets it and picks the cardinalities with
// -bench), so that CI's one-iteration run under the race detector stays fast.
func keyCounts() []int {
	if os.Getenv("BENCH_FULL") != "" {
		return []int{1, 1_000, 100_000, 1_000_000}
	}
	return []int{1, 1_000}
}

type keyedFixture struct {
	store stores.Store
	keys  []string
}

// Fixtures are built once per process and reused by later runs of the same
// benchmark (-count): filling a million keys takes a second or more.
// compare.sh runs each 1M-key fixture in its own process so that only one big
// heap is alive while it is measured.
var (
	fixturesMu sync.Mutex
	fixtures   = map[string]*keyedFixture{}
)

// keyedPaths: mixed is 100 per second for each key, every key present (the
// fraction admitted depends on how often each key comes round: mostly refused
// with one key, all admitted with a million); deny is one per hour, used up for
// every key in setup, so that every measured call is refused.
func keyedFixtureFor(im stores.Impl, n int, path string) (*keyedFixture, error) {
	id := fmt.Sprintf("%s/%d/%s", im.Name, n, path)
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if f, ok := fixtures[id]; ok {
		return f, nil
	}
	keys, err := stores.KeySet(n)
	if err != nil {
		return nil, err
	}
	var s stores.Store
	switch path {
	case "mixed":
		s = im.New(100, time.Second, n)
	case "deny":
		s = im.New(1, time.Hour, n)
	}
	for i, k := range keys {
		if !s.Allow(k) {
			return nil, fmt.Errorf("%s: first call for key %d (%s) refused", id, i, k)
		}
	}
	if path == "deny" {
		for i := 0; i < n; i += max(1, n/1000) {
			if s.Allow(keys[i]) {
				return nil, fmt.Errorf("%s: key %d admitted after its limit was used", id, i)
			}
		}
	}
	if kk, ok := s.(interface{ Len() int }); ok && kk.Len() != n {
		return nil, fmt.Errorf("%s: store holds %d keys, want %d", id, kk.Len(), n)
	}
	f := &keyedFixture{store: s, keys: keys}
	fixtures[id] = f
	return f, nil
}

// BenchmarkKeyed is the keyed harness: every keyed store, at each key
// cardinality, every P calling one shared store (run with -cpu 2), each
// goroutine walking the keys from its own starting point. Every key is
// present before the loop, so allocs/op is the cost for present keys.
func BenchmarkKeyed(b *testing.B) {
	for _, n := range keyCounts() {
		for _, path := range []string{"mixed", "deny"} {
			for _, im := range stores.All() {
				b.Run(fmt.Sprintf("keys=%d/path=%s/impl=%s", n, path, im.Name), func(b *testing.B) {
					f, err := keyedFixtureFor(im, n, path)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportAllocs()
					var admitted, next atomic.Int64
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						i := int(next.Add(1)) * 7919 % n
						var a int64
						for pb.Next() {
							if f.store.Allow(f.keys[i]) {
								a++
							}
							if i++; i == n {
								i = 0
							}
						}
						admitted.Add(a)
					})
					b.ReportMetric(float64(admitted.Load())/float64(b.N), "admits/op")
					if path == "deny" && admitted.Load() != 0 {
						b.Errorf("deny path admitted %d calls", admitted.Load())
					}
				})
			}
		}
	}
}
