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

func ExampleApprox_RemainingAt() {
	// What an HTTP 429 reports: the calls left under each rule, and when
	// to retry.
	l, _ := multi.NewApprox(
		multi.Rule{Limit: 2, Window: time.Second},
		multi.Rule{Limit: 3, Window: time.Minute},
	)
	now := time.Now()
	for l.AllowN(now, 1) {
	}
	remaining := make([]int, 0, 2) // reused across requests: no allocation
	at, _ := l.ReadyAt(now, 1)
	fmt.Println("remaining:", l.RemainingAt(now, remaining))
	fmt.Println("retry after:", at.Sub(now))
	// Output:
	// remaining: [0 1]
	// retry after: 1.5s
}
func ExampleLimiter_RemainingAt() {
	// What an HTTP 429 reports: the calls left under each rule, and when
	// to retry.
	l, _ := multi.New(
		multi.Rule{Limit: 2, Window: time.Second},
		multi.Rule{Limit: 3, Window: time.Minute},
	)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for l.AllowN(now, 1) {
	}
	remaining := make([]int, 0, 2) // reused across requests: no allocation
	at, _ := l.ReadyAt(now, 1)
	fmt.Println("remaining:", l.RemainingAt(now, remaining))
	fmt.Println("retry after:", at.Sub(now))
	// Output:
	// remaining: [0 1]
	// retry after: 1s
}

func ExampleLimiter_AllowN_allOrNothing() {
	// A refused call counts in no rule, not even in the rules that would
	// have admitted it.
	l, _ := multi.New(
		multi.Rule{Limit: 1, Window: time.Second},
		multi.Rule{Limit: 10, Window: time.Hour},
	)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l.AllowN(now, 1)
	for range 100 {
		l.AllowN(now, 1) // refused by the first rule
	}
	fmt.Println(l.RemainingAt(now.Add(time.Second), nil))
	// Output:
	// [1 9]
}
