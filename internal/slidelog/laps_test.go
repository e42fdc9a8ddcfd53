package slidelog

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOutsideTwoLaps: a slot's lap bit tells its index from the next lap's
// but not from the one two laps later, so a slot read after the head check
// must be validated against the head once the call has read everything.
// Here a writer admits one unit at 10, 20, 30, ... (limit 3, window 10: every
// state after its first admission has 2 units of room at its latest instant,
// and the writer is never refused), while a second goroutine calls at the
// stale instant 0, which every state clamps to its latest. Whatever state a
// call is linearized at, it must see exactly that room: a refusal of 2 (the
// batch path), of 1 under two rules (the several-rule path), or a query
// answering anything but "2 now" is read from slots of two different laps.
// Seen only from the instants passed and the answers returned. The window of
// the race is a few loads wide, so each case runs for a while; before the
// fix the refusal cases failed in most runs of a few seconds and the query
// case within a tenth of a second.
func TestOutsideTwoLaps(t *testing.T) {
	budget := 400 * time.Millisecond
	if testing.Short() {
		budget = 100 * time.Millisecond
	}
	cases := []struct {
		name  string
		rules []Rule
		// call is one call of the second goroutine at the stale instant
		// 0, when TokensAt(0) says 2; it returns what it got wrong.
		call func(l *Log) string
	}{
		{"batch-refusal", []Rule{{Limit: 3, Window: 10}}, func(l *Log) string {
			if !l.AllowN(0, 2) {
				return "AllowN(0, 2) refused"
			}
			return ""
		}},
		{"rules-refusal", []Rule{{Limit: 3, Window: 10}, {Limit: 3, Window: 5}}, func(l *Log) string {
			if !l.AllowN(0, 1) {
				return "AllowN(0, 1) refused"
			}
			return ""
		}},
		{"queries", []Rule{{Limit: 3, Window: 10}}, func(l *Log) string {
			if k := l.TokensAt(0); k != 2 {
				return fmt.Sprintf("TokensAt(0) = %d", k)
			}
			if at, ok := l.ReadyAt(0, 2); at != 0 || !ok {
				return fmt.Sprintf("ReadyAt(0, 2) = %d, %v", at, ok)
			}
			if r := l.RemainingAt(0, nil); len(r) != 1 || r[0] != 2 {
				return fmt.Sprintf("RemainingAt(0) = %v", r)
			}
			if _, st := l.DecideStatus(0, 0); st.Remaining != 2 {
				return fmt.Sprintf("DecideStatus(0, 0).Remaining = %d", st.Remaining)
			}
			return ""
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := New(c.rules)
			if !l.AllowN(10, 1) {
				t.Fatal("first admission refused")
			}
			var stop atomic.Bool
			var wrong atomic.Value
			var calls atomic.Int64
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { // the writer
				defer wg.Done()
				for i := int64(2); !stop.Load(); i++ {
					if !l.AllowN(10*i, 1) {
						wrong.CompareAndSwap(nil, fmt.Sprintf("writer refused at %d", 10*i))
						return
					}
				}
			}()
			go func() { // the stale caller
				defer wg.Done()
				for !stop.Load() {
					// An admission at the stale instant uses the room
					// up until the writer's next one: wait for it.
					if l.TokensAt(0) != 2 {
						continue
					}
					calls.Add(1)
					if w := c.call(l); w != "" {
						wrong.CompareAndSwap(nil, w)
						return
					}
				}
			}()
			deadline := time.Now().Add(budget)
			for time.Now().Before(deadline) && wrong.Load() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			stop.Store(true)
			wg.Wait()
			if w := wrong.Load(); w != nil {
				t.Fatalf("after %d calls: %v: no state the log was in gives that answer", calls.Load(), w)
			}
			if calls.Load() == 0 {
				t.Fatal("the stale caller never called")
			}
		})
	}
}
