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
