package ring

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
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
// latest instant) while three others ask, at the stale instant t0, what
// remains and when 2 would fit: every state answers 2, and t0, and so does
// DecideStatus(t0, 0). A reader that mixed slots of two laps of the ring
// answered 0 and instants up to a millisecond later. With one reader and
// GOMAXPROCS at the machine's 2, dropping the freshness check from TokensAt
// went unnoticed and from ReadyAt was caught in 2 runs of 3; with three
// readers at GOMAXPROCS 8 for a second each is caught in every run
// (internal/slidelog's TestOutsideTwoLaps has the refusals too).
func TestStressTwoLapReaders(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	for _, impl := range impls {
		l := impl.new(3, 10*time.Nanosecond)
		st, hasStatus := l.(interface {
			DecideStatus(time.Time, int) slidelimit.Status
		})
		at := func(i int64) time.Time { return t0.Add(time.Duration(10 * i)) }
		if !l.AllowN(at(1), 1) {
			t.Fatalf("%s: first admission refused", impl.name)
		}
		var stop atomic.Bool
		var wrong atomic.Value
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := int64(2); !stop.Load(); i++ {
				if !l.AllowN(at(i), 1) {
					wrong.CompareAndSwap(nil, "the writer was refused")
					return
				}
			}
		})
		for range 3 {
			wg.Go(func() {
				for !stop.Load() {
					if k := l.TokensAt(t0); k != 2 {
						wrong.CompareAndSwap(nil, fmt.Sprintf("TokensAt(t0) = %d", k))
						return
					}
					if r, ok := l.ReadyAt(t0, 2); !ok || !r.Equal(t0) {
						wrong.CompareAndSwap(nil, "ReadyAt(t0, 2) = t0+"+r.Sub(t0).String())
						return
					}
					if hasStatus {
						if s := st.DecideStatus(t0, 0); s.Remaining != 2 {
							wrong.CompareAndSwap(nil, fmt.Sprintf("DecideStatus(t0, 0) = %+v", s))
							return
						}
					}
				}
			})
		}
		runUntil(time.Second, &wrong, &stop, &wg)
		if w := wrong.Load(); w != nil {
			t.Fatalf("%s: %v: no state the limiter was in gives that answer", impl.name, w)
		}
	}
}

// TestStressRefusalStatus: three callers at the stale instant t0 ask
// DecideStatus(t0, 1) while a writer fills the limit (3 per 30ns) in bursts
// at later instants. Whatever state a refusal read, its status must leave
// less than 1 and name a RetryAt after t0, also when it had to be read again
// because the writer overwrote the stamps it needed: a fallback that read
// the live state at t0 instead told refused callers their cost fitted now
// (docs/ring.md), and this test catches it in every run.
func TestStressRefusalStatus(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	l, err := New(3, 30*time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wrong atomic.Value
	var refusals atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for k := int64(1); !stop.Load(); k++ {
			at := t0.Add(time.Duration(30 * k))
			for range 3 {
				l.AllowN(at, 1)
			}
		}
	})
	for range 3 {
		wg.Go(func() {
			for !stop.Load() {
				s := l.DecideStatus(t0, 1)
				if s.Admitted {
					continue
				}
				refusals.Add(1)
				if s.Remaining >= 1 || !s.RetryAt.After(t0) {
					wrong.CompareAndSwap(nil, fmt.Sprintf("refused DecideStatus(t0, 1) = %+v", s))
					return
				}
			}
		})
	}
	runUntil(time.Second, &wrong, &stop, &wg)
	if w := wrong.Load(); w != nil {
		t.Fatal(w)
	}
	if refusals.Load() == 0 {
		t.Fatal("no call was refused: the test checked nothing")
	}
}

// runUntil lets the goroutines of wg run for d, or until one of them stores
// what it found wrong, then stops them and waits for them.
func runUntil(d time.Duration, wrong *atomic.Value, stop *atomic.Bool, wg *sync.WaitGroup) {
	for end := time.Now().Add(d); time.Now().Before(end) && wrong.Load() == nil; {
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
}
