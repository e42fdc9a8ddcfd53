package bench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
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

// seqLen is the length of the pregenerated key sequence for n keys: 16 draws
// per key, at least 2^16 and at most 2^21 (32 MB of string headers, far larger
// than any cache), short enough to build in well under a second.
func seqLen(n int) int { return min(1<<21, max(1<<16, 16*n)) }

type keyedFixture struct {
	store stores.Store
	keys  []string
}

// Fixtures and sequences are built once per process and reused by later runs
// of the same benchmark (-count): filling a million keys takes a second or
// more. compare.sh runs each 1M-key fixture in its own process so that only
// one big heap is alive while it is measured.
//
// Every fixture of n keys is filled with the same strings (clientKeys), the
// ones the sequences hold: a sequence is cached per n and order, so a store
// filled with strings of its own would be handed equal strings that are not
// its own, and a store that keeps the caller's string would read its stored
// bytes on every call (the random-copies case) where the order promises a
// pointer check. Until 2026-11-25 only the first store of a process got its
// own strings.
var (
	fixturesMu sync.Mutex
	fixtures   = map[string]*keyedFixture{}
	sequences  = map[string][]string{}
	keySets    = map[int][]string{}
)

// clientKeys returns the n keys every fixture of n keys is filled with.
// fixturesMu must be held.
func clientKeys(n int) ([]string, error) {
	if keys, ok := keySets[n]; ok {
		return keys, nil
	}
	keys, err := stores.ClientKeys(n)
	if err == nil {
		keySets[n] = keys
	}
	return keys, err
}

// keyedPaths: mixed is 100 per second for each key, every key present (the
// fraction admitted depends on how often each key comes round: mostly refused
// with one key or a hot Zipf key, nearly all admitted with a million keys in
// random order); deny is one per hour, used up for every key in setup, so that
// every measured call is refused.
func keyedFixtureFor(im stores.Impl, n int, path string) (*keyedFixture, error) {
	id := fmt.Sprintf("%s/%d/%s", im.Name, n, path)
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if f, ok := fixtures[id]; ok {
		return f, nil
	}
	keys, err := clientKeys(n)
	if err != nil {
		return nil, err
	}
	var s stores.Store
	switch path {
	case "mixed":
		s = im.New(100, time.Second, n)
	case "deny":
		s = im.New(1, time.Hour, n)
	default:
		return nil, fmt.Errorf("unknown path %q", path)
	}
	for i, k := range keys {
		if !s.Allow(k) {
			return nil, fmt.Errorf("%s: first call for key %d (%s) refused", id, i, k)
		}
	}
	if path == "deny" {
		// A refusal for every key shows that the store holds all of them.
		for i, k := range keys {
			if s.Allow(k) {
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

// orderCopies is uniformly random order with every call's key a copy of its
// own: equal bytes, never the string the store was first given. A service
// builds each request's key afresh (from a header, an address, a token), so
// a store that keeps the first string it saw for a key reads that string's
// bytes, one more cache miss, to compare; with the fixture's own strings
// (every other order) the comparison is a pointer check. The copies are
// made in sequence order, so reading a call's own key streams like the
// sequence itself, as a freshly parsed key is in cache, and cut from one
// string, so that the collector (which the stores that allocate pay for)
// marks one object of the harness's, not one per call.
const orderCopies = "random-copies"

// keyedOrders are the orders BenchmarkKeyed draws keys in.
var keyedOrders = append(append([]string(nil), stores.Orders...), orderCopies)

// keySequence returns the pregenerated sequence of keys for n keys in the
// given order: the strings the fixture holds (or copies of them, for
// orderCopies), resolved before timing so that the loop streams through one
// array instead of indexing a second one.
func keySequence(f *keyedFixture, n int, order string) ([]string, error) {
	id := fmt.Sprintf("%d/%s", n, order)
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if s, ok := sequences[id]; ok {
		return s, nil
	}
	base := order
	if order == orderCopies {
		base = "random"
	}
	idx, err := stores.Sequence(base, n, seqLen(n))
	if err != nil {
		return nil, err
	}
	seq := make([]string, len(idx))
	for i, k := range idx {
		seq[i] = f.keys[k]
	}
	if order == orderCopies {
		cutCopies(seq)
	}
	sequences[id] = seq
	return seq, nil
}

// cutCopies replaces each string of seq with a copy of it, the copies laid
// out in seq's order in one string (layOut).
func cutCopies(seq []string) {
	l := layOut(len(seq), func(i int) string { return seq[i] })
	for i := range seq {
		seq[i] = l.at(i)
	}
}

// BenchmarkKeyed is the keyed harness: every keyed store, at each key
// cardinality and key order, every P calling one shared store (run with
// -cpu 1 and -cpu 2). Each goroutine streams through the pregenerated key
// sequence from its own offset. Every key is present before the loop, so
// allocs/op is the cost for present keys; for our stores the benchmark also
// fails if a present key's decision allocates.
//
// On a shared machine the load changes from one minute to the next, and
// -count repeats each benchmark back to back, so stores measured minutes
// apart see different neighbours. BENCH_ROUNDS=r (with -count 1) repeats the
// whole set r times instead, interleaving the stores; go test names the
// repeats name#01, name#02, …, and compare.sh strips the suffix so that
// benchstat sees r samples of each.
func BenchmarkKeyed(b *testing.B) {
	rounds := 1
	if v, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && v > 1 {
		rounds = v
	}
	for range rounds {
		for _, n := range keyCounts() {
			for _, order := range keyedOrders {
				for _, path := range []string{"mixed", "deny"} {
					for _, im := range stores.All() {
						b.Run(fmt.Sprintf("keys=%d/order=%s/path=%s/impl=%s", n, order, path, im.Name), func(b *testing.B) {
							benchKeyed(b, im, n, order, path)
						})
					}
				}
			}
		}
	}
}

func benchKeyed(b *testing.B, im stores.Impl, n int, order, path string) {
	f, err := keyedFixtureFor(im, n, path)
	if err != nil {
		b.Fatal(err)
	}
	seq, err := keySequence(f, n, order)
	if err != nil {
		b.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	b.ReportAllocs()
	var admitted, next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := stores.Start(int(next.Add(1)-1), procs, len(seq))
		var a int64
		for pb.Next() {
			if f.store.Allow(seq[i]) {
				a++
			}
			if i++; i == len(seq) {
				i = 0
			}
		}
		admitted.Add(a)
	})
	b.StopTimer()
	b.ReportMetric(float64(admitted.Load())/float64(b.N), "admits/op")
	if path == "deny" && admitted.Load() != 0 {
		b.Errorf("deny path admitted %d calls", admitted.Load())
	}
	if strings.HasPrefix(im.Name, "keyed") {
		k := seq[len(seq)/2]
		if a := testing.AllocsPerRun(100, func() { f.store.Allow(k) }); a != 0 {
			b.Errorf("%s: %v allocs per decision for a present key, want 0", im.Name, a)
		}
	}
}
