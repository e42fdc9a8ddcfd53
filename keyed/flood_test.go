package keyed_test

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/window"
)

// TestFloodBoundedMemory: goroutines invent keys as fast as they can, on the
// real clock (the point is memory under load, not timing; no decision is
// checked against time here). The Limiter must stay at or below MaxKeys keys
// and the live heap under a stated bound, with no panic and no goroutine
// left behind.
//
// The bound: maxKeys keys at bytesPerKeyBound each (the measured cost of a
// window key is about 200 bytes, docs/keyed.md) on top of the heap before the
// flood. The flood offers at least floodFactor times more keys than that, so
// an unbounded map would break the bound several times over.
// floodMaxKeys is the MaxKeys of the stores TestFloodBoundedMemory floods.
const floodMaxKeys = 10_000

func TestFloodBoundedMemory(t *testing.T) {
	type store interface {
		Allow(key string) bool
		Len() int
		Sweep(now time.Time) int
	}
	for _, tc := range []struct {
		name   string
		window time.Duration
	}{
		// Nothing becomes idle during the flood: once full, every new key
		// is refused.
		{"long-window", time.Hour},
		// Keys become idle within 2ms: automatic sweeps make room, and new
		// keys keep being admitted.
		{"short-window", time.Millisecond},
	} {
		for _, st := range []struct {
			name string
			new  func() (store, error)
		}{
			{"Limiter", func() (store, error) {
				return keyed.New[string](func() (*window.Limiter, error) {
					return window.New(10, tc.window)
				}, keyed.MaxKeys(floodMaxKeys))
			}},
			{"Window", func() (store, error) { return keyed.NewWindow[string](10, tc.window, keyed.MaxKeys(floodMaxKeys)) }},
		} {
			t.Run(tc.name+"/"+st.name, func(t *testing.T) {
				floodOne(t, tc.window, st.name == "Window", st.new)
			})
		}
	}
}

// floodOne is one flood of TestFloodBoundedMemory on the store mk makes. If
// shrinks is true, the store must also give its memory back once a sweep has
// removed every key.
func floodOne[S interface {
	Allow(key string) bool
	Len() int
	Sweep(now time.Time) int
}](t *testing.T, window time.Duration, shrinks bool, mk func() (S, error)) {
	const (
		maxKeys          = floodMaxKeys
		bytesPerKeyBound = 1024
		floodFactor      = 5
		goroutines       = 4
		// Each flood lasts at least minPhase, and then until it has offered
		// floodFactor*maxKeys keys or maxPhase has passed (a loaded
		// machine, or the race detector, can slow it down tenfold). With
		// a short window it also lasts, up to maxSweepWait, until a key
		// has been admitted after the store was first full: an automatic
		// sweep waits 16 times the previous one's duration, and the first
		// sweep has no estimate to cap that duration with, so one
		// preempted for 100 ms on a loaded machine holds the next back
		// for 1.6 s.
		minPhase     = time.Second
		maxPhase     = 2 * time.Second
		maxSweepWait = 10 * time.Second
	)
	goroutinesBefore := runtime.NumGoroutine()
	base := liveHeap()
	k, err := mk()
	if err != nil {
		t.Fatal(err)
	}
	var attempts, admittedAfterFull atomic.Int64
	// fullSeen is set once a goroutine has seen the store full. Every key
	// offered is new, and nothing but a sweep removes keys, so a key
	// admitted by a call that began after that proves an automatic sweep
	// made room. (Counting only calls that themselves found the store full
	// is not such a proof: while a slow sweep frees room, the other
	// goroutines can take every freed slot before the sweeping call does.)
	var fullSeen atomic.Bool
	var maxLen atomic.Int64
	stop := make(chan struct{}) // closed by the monitoring loop below
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
			for i := 0; ; i++ {
				if i%64 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
				key := strconv.FormatUint(r.Uint64(), 36)
				if k.Len() >= maxKeys {
					fullSeen.Store(true)
				}
				afterFull := fullSeen.Load()
				if k.Allow(key) && afterFull {
					admittedAfterFull.Add(1)
				}
				attempts.Add(1)
			}
		})
	}
	var peak uint64
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	var ms runtime.MemStats
	for range tick.C {
		if n := int64(k.Len()); n > maxLen.Load() {
			maxLen.Store(n)
		}
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
		d := time.Since(start)
		waitSweep := window < time.Second && admittedAfterFull.Load() == 0 && d < maxSweepWait
		if !waitSweep && (d >= maxPhase || d >= minPhase && attempts.Load() >= floodFactor*maxKeys) {
			break
		}
	}
	tick.Stop()
	close(stop)
	wg.Wait()

	live := liveHeap()
	grown := int64(live) - int64(base)
	bound := int64(maxKeys * bytesPerKeyBound)
	t.Logf("%d keys offered, %d admitted after the store was first full, max Len %d, Len %d; live heap grew %d bytes (bound %d), peak heap %d bytes",
		attempts.Load(), admittedAfterFull.Load(), maxLen.Load(), k.Len(), grown, bound, peak)
	if got := maxLen.Load(); got > maxKeys {
		t.Errorf("Len() reached %d, above MaxKeys %d", got, maxKeys)
	}
	if grown > bound {
		t.Errorf("live heap grew by %d bytes for at most %d keys, above the bound %d", grown, maxKeys, bound)
	}
	// The peak includes garbage (the flood's key strings); the
	// collector lets the heap reach about twice the live heap.
	if limit := 2*(base+uint64(bound)) + 16<<20; peak > limit {
		t.Errorf("peak heap %d bytes, above %d", peak, limit)
	}
	if got := attempts.Load(); got < floodFactor*maxKeys {
		t.Logf("WARNING: the machine is slow or loaded: the flood offered only %d keys in %v, not the %d it should", got, maxPhase, floodFactor*maxKeys)
	}
	if window < time.Second && admittedAfterFull.Load() == 0 {
		t.Error("no new key was admitted after the store was full, though keys became idle: automatic sweeps made no room")
	}
	if got := runtime.NumGoroutine(); got > goroutinesBefore {
		t.Errorf("%d goroutines after the flood, %d before", got, goroutinesBefore)
	}
	// Every key is idle two windows on: a sweep removes them all,
	// and a store that shrinks gives back all but its fixed part
	// (a few tens of KB: 256 shards and their smallest arrays).
	k.Sweep(time.Now().Add(3 * window))
	if n := k.Len(); n != 0 {
		t.Errorf("Len = %d after sweeping every idle key", n)
	}
	if shrinks {
		if after := int64(liveHeap()) - int64(base); after > 128<<10 {
			t.Errorf("live heap still %d bytes above the start once every key was removed", after)
		}
	}
	runtime.KeepAlive(k)
}

// liveHeap returns the heap in use after a full collection.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
