package ring

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStressEqualInstants drives both implementations through the exported
// API with 8 goroutines per phase, all presenting the phase's instant; each
// phase must admit exactly the free room (limit 1 and 2 are the hardest).
// internal/slidelog has the heavier stress tests, with free-running clocks.
func TestStressEqualInstants(t *testing.T) {
	for _, impl := range impls {
		for _, limit := range []int{1, 2, 5} {
			l := impl.new(limit, time.Second)
			now := t0
			for phase := range 200 {
				// Steps of 0, 1/3, and exactly one window.
				now = now.Add([]time.Duration{0, time.Second / 3, time.Second}[phase%3])
				room := l.TokensAt(now)
				var admitted atomic.Int64
				var wg sync.WaitGroup
				for range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range 2 {
							if l.AllowN(now, 1) {
								admitted.Add(1)
							}
						}
					}()
				}
				wg.Wait()
				if got := int(admitted.Load()); got != room {
					t.Fatalf("%s limit %d phase %d: admitted %d, room was %d", impl.name, limit, phase, got, room)
				}
			}
		}
	}
}

// TestStressTwoLapReaders: one goroutine admits a unit every 10ns of
// instants (limit 3, window 10ns: every state has 2 units of room at its
// latest instant) while another asks, at the stale instant t0, what remains
// and when 2 would fit: every state answers 2, and t0. A reader that mixed
// slots of two laps of the ring answered 0 and instants up to a millisecond
// later, within a tenth of a second (internal/slidelog's TestOutsideTwoLaps
// has the refusals too).
func TestStressTwoLapReaders(t *testing.T) {
	for _, impl := range impls {
		l := impl.new(3, 10*time.Nanosecond)
		at := func(i int64) time.Time { return t0.Add(time.Duration(10 * i)) }
		if !l.AllowN(at(1), 1) {
			t.Fatalf("%s: first admission refused", impl.name)
		}
		var stop atomic.Bool
		var wrong atomic.Value
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := int64(2); !stop.Load(); i++ {
				if !l.AllowN(at(i), 1) {
					wrong.CompareAndSwap(nil, "the writer was refused")
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if k := l.TokensAt(t0); k != 2 {
					wrong.CompareAndSwap(nil, "TokensAt(t0) != 2")
					return
				}
				if r, ok := l.ReadyAt(t0, 2); !ok || !r.Equal(t0) {
					wrong.CompareAndSwap(nil, "ReadyAt(t0, 2) = t0+"+r.Sub(t0).String())
					return
				}
			}
		}()
		for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end) && wrong.Load() == nil; {
			time.Sleep(5 * time.Millisecond)
		}
		stop.Store(true)
		wg.Wait()
		if w := wrong.Load(); w != nil {
			t.Fatalf("%s: %v: no state the limiter was in gives that answer", impl.name, w)
		}
	}
}
