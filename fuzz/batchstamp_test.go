package fuzz

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/multi"
)

// Regression tests for one defect: a weighted admission (n >= 2) was recorded
// at whatever instant the first caller to help it offered, including a
// concurrent query or refused call at another instant. Each test here failed
// before the fix within a fraction of its budget.

// stampSubjects are one ring and one multi.New of the given shape.
func stampSubjects(limit int, window time.Duration) []subject {
	return []subject{
		ringSubject(limit, window),
		multiSubject(multi.Rule{Limit: limit, Window: window}, multi.Rule{Limit: 1000 * limit, Window: 1000 * window}),
	}
}

// hammer runs f in a loop on a goroutine until the returned stop is called.
func hammer(f func(i int)) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !done.Load(); i++ {
			f(i)
		}
	}()
	return func() { done.Store(true); wg.Wait() }
}

// queryAt asks the i-th of TokensAt, ReadyAt and IdleAt at u.
func queryAt(l exact, u time.Time, i int) {
	switch i % 3 {
	case 0:
		l.TokensAt(u)
	case 1:
		l.ReadyAt(u, 1)
	case 2:
		l.IdleAt(u)
	}
}

// First scenario: the only admitting goroutine calls AllowN(T, 2)
// twice on a fresh limiter of limit 2, while another only asks at T-1h. The
// second call must be refused: a query must not stamp the first batch an hour
// early.
func TestOutsideStaleQueryStampsBatchEarly(t *testing.T) {
	for _, s := range stampSubjects(2, time.Second) {
		var cur atomic.Pointer[exact]
		T := time.Now().Add(2 * time.Hour)
		stop := hammer(func(i int) {
			if p := cur.Load(); p != nil {
				queryAt(*p, T.Add(-time.Hour), i)
			}
		})
		for i := range 3000 {
			l := s.new(t)
			cur.Store(&l)
			a, b := l.AllowN(T, 2), l.AllowN(T, 2)
			if !a || b {
				stop()
				t.Fatalf("%s iteration %d: AllowN(T, 2) twice = %v, %v; want true, false", s.name, i, a, b)
			}
		}
		stop()
	}
}

// The same with refused calls as the helpers: limit 3, one unit a window
// before T, then AllowN(T, 2) twice while another goroutine makes refused
// calls AllowN(T-1h, 3) (the limiter decides them at its latest instant,
// where they never fit).
func TestOutsideStaleRefusalStampsBatchEarly(t *testing.T) {
	for _, s := range stampSubjects(3, time.Second) {
		var cur atomic.Pointer[exact]
		var wrong atomic.Bool
		T := time.Now().Add(2 * time.Hour)
		stop := hammer(func(int) {
			if p := cur.Load(); p != nil && (*p).AllowN(T.Add(-time.Hour), 3) {
				wrong.Store(true)
			}
		})
		for i := range 3000 {
			l := s.new(t)
			if !l.AllowN(T.Add(-time.Second), 1) {
				t.Fatalf("%s: setup refused", s.name)
			}
			cur.Store(&l)
			a, b := l.AllowN(T, 2), l.AllowN(T, 2)
			cur.Store(nil)
			if wrong.Load() {
				stop()
				t.Fatalf("%s iteration %d: AllowN(T-1h, 3) admitted beside an admission in its window", s.name, i)
			}
			if !a || b {
				stop()
				t.Fatalf("%s iteration %d: AllowN(T, 2) twice = %v, %v; want true, false", s.name, i, a, b)
			}
		}
		stop()
	}
}

// Second scenario: one goroutine admits in time order (limit 10 per
// 100 ms, calls every 10 ms of cost 1 to 3) while another asks at T+1h. Every
// decision must equal the naive log's: a query must not stamp a batch an hour
// late (which clamps every later call there and refuses it).
func TestOutsideFutureQueryHoldsLimiter(t *testing.T) {
	for _, s := range stampSubjects(10, 100*time.Millisecond) {
		for run := range 10 {
			l := s.new(t)
			T := time.Now()
			stop := hammer(func(i int) { queryAt(l, T.Add(time.Hour), i) })
			o := oracle.NewLog(oracleRules(s.rules)...)
			for i := range 300 {
				off := int64(i) * int64(10*time.Millisecond)
				n := 1 + i%3
				if g, w := l.AllowN(T.Add(time.Duration(off)), n), o.AllowN(off, n); g != w {
					stop()
					t.Fatalf("%s run %d call %d: AllowN(T+%v, %d) = %v, naive log %v",
						s.name, run, i, time.Duration(off), n, g, w)
				}
			}
			stop()
		}
	}
}

// Third scenario: 16 goroutines on one shared increasing clock with
// idle gaps, no deliberately stale instant. Before the fix 13 were admitted
// within 14 ns with limit 8 in about one run of four.
func TestOutsideSharedClock(t *testing.T) {
	cfg := outsideConfig{goroutines: 16, rounds: 3, ops: 120, phaseCalls: 2}
	outsideCheck(t, []subject{ringSubject(8, 1000), multiSubject(multi.Rule{Limit: 8, Window: 1000})}, cfg, 6)
}
