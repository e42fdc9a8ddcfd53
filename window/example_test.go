package window_test

import (
	"fmt"
	"time"

	"github.com/slidelimit/slidelimit/window"
)

// The examples pass fixed instants, so their output does not depend on the
// clock. Decisions depend only on the distances between instants.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ExampleNew() {
	_, err := window.New(0, time.Second)
	fmt.Println(err)
	l, err := window.New(100, time.Second)
	fmt.Println(l.Limit(), l.Window(), err)
	// Output:
	// window: limit must be between 1 and 1048575, got 0
	// 100 1s <nil>
}

// The previous window's count is weighed by how much of it still overlaps
// the sliding window.
func ExampleLimiter_AllowN() {
	l, _ := window.New(4, 10*time.Second)
	show := func(d time.Duration, n int) {
		fmt.Printf("t0+%-5v AllowN(%d) = %v\n", d, n, l.AllowN(t0.Add(d), n))
	}
	show(0, 4)                      // the first admission starts a window at t0
	show(9*time.Second, 1)          // same window: 4+1 > 4
	show(10*time.Second, 1)         // next window, elapsed 0: prev 4 weighs 4
	show(12500*time.Millisecond, 1) // 4*7.5s + 1*10s = 40s = 4*10s: fits exactly
	show(12500*time.Millisecond, 1) // 4*7.5s + 2*10s > 40s
	show(30*time.Second, 4)         // two windows on: idle, a new window starts here
	// Output:
	// t0+0s    AllowN(4) = true
	// t0+9s    AllowN(1) = false
	// t0+10s   AllowN(1) = false
	// t0+12.5s AllowN(1) = true
	// t0+12.5s AllowN(1) = false
	// t0+30s   AllowN(4) = true
}

// TokensAt and ReadyAt give what an HTTP 429 needs: how much is left, and
// when a call will fit.
func ExampleLimiter_ReadyAt() {
	l, _ := window.New(100, time.Minute)
	l.AllowN(t0, 100)
	for _, n := range []int{1, 50, 100, 101} {
		at, ok := l.ReadyAt(t0, n)
		if !ok {
			fmt.Printf("n=%d: never\n", n)
			continue
		}
		fmt.Printf("n=%d: retry after %v\n", n, at.Sub(t0))
	}
	fmt.Println("tokens at t0+90s:", l.TokensAt(t0.Add(90*time.Second)))
	// Output:
	// n=1: retry after 1m0.6s
	// n=50: retry after 1m30s
	// n=100: retry after 2m0s
	// n=101: never
	// tokens at t0+90s: 50
}

// A limiter with nothing admitted in its current and previous windows is
// idle: it decides like a new one and can be dropped.
func ExampleLimiter_IdleAt() {
	l, _ := window.New(10, time.Second)
	l.AllowN(t0, 1)
	for _, d := range []time.Duration{0, time.Second, 2*time.Second - 1, 2 * time.Second} {
		fmt.Printf("IdleAt(t0+%v) = %v\n", d, l.IdleAt(t0.Add(d)))
	}
	// Output:
	// IdleAt(t0+0s) = false
	// IdleAt(t0+1s) = false
	// IdleAt(t0+1.999999999s) = false
	// IdleAt(t0+2s) = true
}
