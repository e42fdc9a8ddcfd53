package bench

import (
	"math"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/bench/stores"
)

// TestKeyOrders checks the key sequences the keyed benchmarks draw: the keys
// are distinct, the random order touches as many distinct keys as uniform
// draws should, the Zipf order's hottest key comes up as often as rank 1 of
// Zipf(1.1) should and its hot keys are scattered, and the sequential walk
// visits every key in turn.
func TestKeyOrders(t *testing.T) {
	const n, length = 10_000, 200_000
	keys, err := stores.ClientKeys(n)
	require.NoError(t, err)
	require.Len(t, keys, n)
	require.Equal(t, "client-0", keys[0])
	require.Equal(t, "client-9999", keys[n-1])

	random, err := stores.Sequence("random", n, length)
	require.NoError(t, err)
	// Expected distinct keys after length uniform draws: n(1-(1-1/n)^length).
	want := float64(n) * (1 - math.Pow(1-1.0/n, length))
	require.InDelta(t, want, float64(stores.Distinct(random)), 0.01*want)

	zipf, err := stores.Sequence("zipf", n, length)
	require.NoError(t, err)
	counts := map[int32]int{}
	hot, hotCount := int32(0), 0
	for _, k := range zipf {
		require.True(t, k >= 0 && k < n, "index %d out of range", k)
		if counts[k]++; counts[k] > hotCount {
			hot, hotCount = k, counts[k]
		}
	}
	var h float64 // generalized harmonic number H(n, s)
	for k := 1; k <= n; k++ {
		h += math.Pow(float64(k), -stores.ZipfS)
	}
	require.InDelta(t, 1/h, float64(hotCount)/length, 0.1/h, "share of the hottest key")
	require.NotEqual(t, int32(0), hot, "the hottest key is key 0: ranks are not permuted")

	seq, err := stores.Sequence("seq", n, length)
	require.NoError(t, err)
	for i, k := range seq {
		require.Equal(t, int32(i%n), k)
	}

	_, err = stores.Sequence("sorted", n, length)
	require.Error(t, err)
	_, err = stores.Sequence("random", 0, length)
	require.Error(t, err)
}

// laidOut is strings laid out one after another in one string: string i is
// all[ends[i]:ends[i+1]]. The collector has one object to mark however many
// strings there are, and nothing to follow in ends; the benchmarks that
// present a copy of a key (or an address) per call take their copies from
// one, so that the stores that allocate do not pay, in their collections,
// for marking millions of the harness's strings.
type laidOut struct {
	all  string
	ends []int32
}

// layOut lays out the strings s(0), ..., s(n-1).
func layOut(n int, s func(i int) string) *laidOut {
	var all strings.Builder
	l := &laidOut{ends: make([]int32, n+1)}
	for i := range n {
		all.WriteString(s(i))
		l.ends[i+1] = int32(all.Len())
	}
	l.all = all.String()
	return l
}

func (l *laidOut) len() int        { return len(l.ends) - 1 }
func (l *laidOut) at(i int) string { return l.all[l.ends[i]:l.ends[i+1]] }

// TestCutCopies checks the random-copies order's keys: equal to the keys
// they copy, none sharing a key's bytes, and laid out one after another in
// one string, in sequence order.
func TestCutCopies(t *testing.T) {
	keys, err := stores.ClientKeys(1000)
	require.NoError(t, err)
	idx, err := stores.Sequence("random", len(keys), 5000)
	require.NoError(t, err)
	orig := make([]string, len(idx))
	for i, k := range idx {
		orig[i] = keys[k]
	}
	seq := append([]string(nil), orig...)
	cutCopies(seq)
	for i := range seq {
		require.Equal(t, orig[i], seq[i])
		at := uintptr(unsafe.Pointer(unsafe.StringData(seq[i])))
		require.NotEqual(t, uintptr(unsafe.Pointer(unsafe.StringData(orig[i]))), at, "call %d uses the key's own bytes", i)
		if i > 0 {
			prev := uintptr(unsafe.Pointer(unsafe.StringData(seq[i-1])))
			require.Equal(t, prev+uintptr(len(seq[i-1])), at, "call %d's copy does not follow call %d's", i, i-1)
		}
	}
}

// TestSequencesHoldEveryStoresKeys: every store's fixture of n keys holds the
// very strings the sequences hand it (the same pointers, not equal copies),
// whichever store asked for the sequence first, so that "random" and "zipf"
// measure the case where the caller passes the key the store was given, and
// only "random-copies" the case where it does not.
func TestSequencesHoldEveryStoresKeys(t *testing.T) {
	const n = 1000
	for _, order := range []string{"random", orderCopies} {
		for _, im := range stores.All() {
			f, err := keyedFixtureFor(im, n, "mixed")
			require.NoError(t, err)
			own := make(map[*byte]bool, n)
			for _, k := range f.keys {
				own[unsafe.StringData(k)] = true
			}
			seq, err := keySequence(f, n, order)
			require.NoError(t, err)
			shared := 0
			for _, k := range seq {
				if own[unsafe.StringData(k)] {
					shared++
				}
			}
			if order == orderCopies {
				require.Zero(t, shared, "%s, %s: sequence strings that are the store's own", im.Name, order)
			} else {
				require.Equal(t, len(seq), shared, "%s, %s: sequence strings that are the store's own", im.Name, order)
			}
		}
	}
}

// TestZipfOrderIsZipfOverEveryKey checks the Zipf order beyond its hottest
// key: the exponent is the s = 1.1 the reports name; the second-hottest key
// comes up 2^-1.1 times as often as the hottest (rank k with weight
// (1+k)^-s); the number of distinct keys drawn is what Zipf over all n ranks
// gives (a sampler over fewer ranks draws fewer); and the hottest keys lie
// all over the key space, not in the part created first.
func TestZipfOrderIsZipfOverEveryKey(t *testing.T) {
	require.Equal(t, 1.1, stores.ZipfS, "the reports label the Zipf order s = 1.1")
	const n, length = 10_000, 200_000
	zipf, err := stores.Sequence("zipf", n, length)
	require.NoError(t, err)
	counts := make([]int, n)
	for _, k := range zipf {
		counts[k]++
	}
	byCount := make([]int, n)
	for i := range byCount {
		byCount[i] = i
	}
	slices.SortFunc(byCount, func(a, b int) int { return counts[b] - counts[a] })
	ratio := float64(counts[byCount[1]]) / float64(counts[byCount[0]])
	require.InDelta(t, math.Pow(2, -stores.ZipfS), ratio, 0.03, "second-hottest over hottest key")

	var h float64
	for k := 1; k <= n; k++ {
		h += math.Pow(float64(k), -stores.ZipfS)
	}
	var want float64 // expected distinct keys: sum over ranks of 1-(1-p)^length
	for k := 1; k <= n; k++ {
		want += 1 - math.Pow(1-math.Pow(float64(k), -stores.ZipfS)/h, length)
	}
	require.InDelta(t, want, float64(stores.Distinct(zipf)), 0.02*want, "distinct keys drawn")

	var quarters [4]int
	for _, k := range byCount[:200] {
		quarters[4*k/n]++
	}
	for q, c := range quarters {
		require.True(t, c >= 25 && c <= 75, "the 200 hottest keys: %d in quarter %d of the key space (%v), want about 50", c, q, quarters)
	}
}

// TestWorkersStartApart: the workers of a keyed benchmark begin evenly
// spaced in the key sequence, each at its own place.
func TestWorkersStartApart(t *testing.T) {
	const length = 1 << 16
	for _, workers := range []int{1, 2, 3, 8} {
		seen := map[int]bool{}
		for w := range workers {
			at := stores.Start(w, workers, length)
			require.Equal(t, w*(length/workers), at, "worker %d of %d", w, workers)
			seen[at] = true
		}
		require.Len(t, seen, workers)
		require.Equal(t, 0, stores.Start(workers, workers, length), "worker %d of %d wraps around", workers, workers)
	}
}
