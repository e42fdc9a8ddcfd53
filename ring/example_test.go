package ring_test

import (
	"fmt"
	"time"

	"github.com/slidelimit/slidelimit/ring"
)

func Example() {
	// At most 3 calls in any window of one second.
	l, err := ring.New(3, time.Second)
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	show := func(d time.Duration) {
		fmt.Printf("t0+%-6v %v\n", d, l.AllowN(t0.Add(d), 1))
	}
	show(0)
	show(400 * time.Millisecond)
	show(900 * time.Millisecond)
	show(999 * time.Millisecond) // 3 in (t0-1ms, t0+999ms]
	show(time.Second)            // the t0 call is exactly one window old
	// Output:
	// t0+0s     true
	// t0+400ms  true
	// t0+900ms  true
	// t0+999ms  false
	// t0+1s     true
}

func ExampleLimiter_ReadyAt() {
	l, _ := ring.New(2, time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l.AllowN(t0, 1)
	l.AllowN(t0.Add(10*time.Second), 1)
	now := t0.Add(20 * time.Second)
	fmt.Println("admitted:", l.AllowN(now, 1))
	at, _ := l.ReadyAt(now, 1)
	fmt.Println("Retry-After:", at.Sub(now))
	fmt.Println("remaining:", l.TokensAt(now))
	// Output:
	// admitted: false
	// Retry-After: 40s
	// remaining: 0
}

func ExampleLimiter_AllowN() {
	l, _ := ring.New(5, time.Second)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fmt.Println(l.AllowN(t0, 3)) // cost 3
	fmt.Println(l.AllowN(t0, 3)) // 3 more would make 6 in the window
	fmt.Println(l.AllowN(t0, 2))
	fmt.Println(l.AllowN(t0, 6)) // above the limit: never
	fmt.Println(l.AllowN(t0, 0)) // nothing asked, nothing recorded
	// Output:
	// true
	// false
	// true
	// false
	// true
}
