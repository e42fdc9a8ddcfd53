package stores

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// ClientKey is the i-th key: "client-N", as a per-client limiter keyed by an
// account or API key sees them (8 to 14 bytes).
func ClientKey(i int) string { return "client-" + strconv.Itoa(i) }

// ClientKeys returns n distinct "client-N" keys and checks that they are
// distinct: the published "n keys" must be n keys.
func ClientKeys(n int) ([]string, error) {
	if n <= 0 || n > 1<<24 {
		return nil, fmt.Errorf("ClientKeys(%d): want 1 to %d keys", n, 1<<24)
	}
	keys := make([]string, n)
	seen := make(map[string]struct{}, n)
	for i := range keys {
		keys[i] = ClientKey(i)
		seen[keys[i]] = struct{}{}
	}
	if len(seen) != n {
		return nil, fmt.Errorf("ClientKeys(%d): only %d distinct keys", n, len(seen))
	}
	return keys, nil
}

// Orders are the key orders the keyed benchmarks draw: uniformly random,
// Zipf with exponent ZipfS over a random permutation of the keys (a few hot
// keys, a long cold tail, hot keys scattered over the key space), and the
// sequential walk (key i+1 after key i, which the hardware prefetcher can
// follow: a labelled best case, not what a server sees).
var Orders = []string{"random", "zipf", "seq"}

// ZipfS is the exponent of the Zipf order.
const ZipfS = 1.1

// Sequence returns length key indices in [0, n) drawn in the given order
// from a fixed seed, so that every store and every run sees the same
// sequence.
func Sequence(order string, n, length int) ([]int32, error) {
	if n <= 0 || n > 1<<30 || length <= 0 {
		return nil, fmt.Errorf("Sequence(%q, %d, %d): want 1 <= n <= 2^30 and a positive length", order, n, length)
	}
	r := rand.New(rand.NewPCG(1, uint64(n)))
	seq := make([]int32, length)
	switch order {
	case "random":
		for i := range seq {
			seq[i] = int32(r.IntN(n))
		}
	case "zipf":
		// Rank k (0 the hottest) is drawn with probability proportional
		// to (1+k)^-s; ranks map to keys through a random permutation.
		z := rand.NewZipf(r, ZipfS, 1, uint64(n-1))
		perm := r.Perm(n)
		for i := range seq {
			seq[i] = int32(perm[z.Uint64()])
		}
	case "seq":
		for i := range seq {
			seq[i] = int32(i % n)
		}
	default:
		return nil, fmt.Errorf("Sequence: unknown order %q (want one of %v)", order, Orders)
	}
	return seq, nil
}

// Distinct is the number of distinct indices in seq.
func Distinct(seq []int32) int {
	seen := make(map[int32]struct{}, len(seq)/4)
	for _, i := range seq {
		seen[i] = struct{}{}
	}
	return len(seen)
}

// Start is where worker w of workers begins in a pregenerated sequence of
// length draws: the workers start evenly spaced, so that no two of them
// call the same keys at the same moment (which would measure contention on
// one key, not the order). Worker indices past workers wrap around.
func Start(w, workers, length int) int {
	return w % workers * (length / workers)
}
