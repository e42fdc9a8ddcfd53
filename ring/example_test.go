package ring_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
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

// ExampleLimiter_ReadyAt answers a refused request with 429 Too Many
// Requests and a Retry-After computed from ReadyAt: whole seconds, rounded
// up, so that a client that waits that long is admitted; and only when ok
// says the cost will ever fit (a cost above the limit never will: then the
// response carries no Retry-After).
func ExampleLimiter_ReadyAt() {
	l, _ := ring.New(2, time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// serve decides a request of the given cost at now, as a handler
	// would at time.Now().
	serve := func(now time.Time, cost int) {
		w := httptest.NewRecorder()
		if l.AllowN(now, cost) {
			w.WriteHeader(http.StatusOK)
		} else {
			if at, ok := l.ReadyAt(now, cost); ok {
				secs := int64(math.Ceil(at.Sub(now).Seconds()))
				w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
			}
			w.WriteHeader(http.StatusTooManyRequests)
		}
		fmt.Printf("t0+%-5v cost %d: %d Retry-After=%q\n", now.Sub(t0), cost, w.Code, w.Header().Get("Retry-After"))
	}
	serve(t0, 1)
	serve(t0.Add(10*time.Second), 1)
	serve(t0.Add(20500*time.Millisecond), 1) // full until the t0 call leaves the window, at t0+60s
	serve(t0.Add(20500*time.Millisecond), 3) // above the limit: never
	serve(t0.Add(60*time.Second), 1)         // the client that waited 40s
	// Output:
	// t0+0s    cost 1: 200 Retry-After=""
	// t0+10s   cost 1: 200 Retry-After=""
	// t0+20.5s cost 1: 429 Retry-After="40"
	// t0+20.5s cost 3: 429 Retry-After=""
	// t0+1m0s  cost 1: 200 Retry-After=""
}

// ExampleLimiter_Wait shows WaitN's answers that need no sleep: an
// admission at once, a deadline that falls before the call could fit, a
// context already done, and a cost that can never fit.
func ExampleLimiter_Wait() {
	l, _ := ring.New(1, time.Hour)
	// The first call fits: Wait admits it and returns nil at once.
	fmt.Println(l.Wait(context.Background()))
	// The next call fits in an hour. With a deadline in a second, Wait
	// does not sleep: it returns at once, wrapping ErrDeadline, having
	// admitted nothing.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	fmt.Println(errors.Is(l.Wait(ctx), ring.ErrDeadline))
	// A context already done: its error, nothing admitted.
	done, stop := context.WithCancel(context.Background())
	stop()
	fmt.Println(l.Wait(done))
	// A cost above the limit can never be admitted.
	fmt.Println(errors.Is(l.WaitN(context.Background(), 2), ring.ErrNeverReady))
	// Output:
	// <nil>
	// true
	// context canceled
	// true
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
