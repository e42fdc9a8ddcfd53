package multi_test

import (
	"fmt"
	"time"

	"github.com/slidelimit/slidelimit/multi"
)

func ExampleNew() {
	// At most 3 calls in any 100ms and 5 in any second.
	l, err := multi.New(
		multi.Rule{Limit: 3, Window: 100 * time.Millisecond},
		multi.Rule{Limit: 5, Window: time.Second},
	)
	if err != nil {
		panic(err)
	}
	now := time.Now()
	show := func(at time.Duration) {
		fmt.Printf("t+%v: %v\n", at, l.AllowN(now.Add(at), 1))
	}
	for _, at := range []time.Duration{0, 0, 0, 0, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		show(at)
	}
	// Output:
	// t+0s: true
	// t+0s: true
	// t+0s: true
	// t+0s: false
	// t+100ms: true
	// t+100ms: true
	// t+100ms: false
	// t+1s: true
}

func ExampleNewApprox() {
	// Two counters per rule: a few words of memory whatever the limits.
	l, _ := multi.NewApprox(
		multi.Rule{Limit: 4, Window: 100 * time.Millisecond},
		multi.Rule{Limit: 6, Window: time.Second},
	)
	now := time.Now()
	fmt.Println(l.AllowN(now, 4))
	fmt.Println(l.AllowN(now.Add(50*time.Millisecond), 1))
	// In the next 100ms window the previous one's 4 weigh less and less.
	at, _ := l.ReadyAt(now.Add(50*time.Millisecond), 1)
	fmt.Println("ready at t+", at.Sub(now))
	fmt.Println(l.AllowN(at, 1))
	fmt.Println(l.RemainingAt(at, nil))
	// Output:
	// true
	// false
	// ready at t+ 125ms
	// true
	// [0 1]
}
