package httplimit

import (
	"sync/atomic"
	"time"
)

// clock reads the instant each request is decided at, for the in-process
// adapters: an anchor taken with time.Now plus the monotonic time elapsed
// since, one read of the monotonic clock instead of the two (wall and
// monotonic) time.Now makes. The monotonic reading, the one the limiters
// compare, is exact. The wall reading is what time.Now would say, except in
// the anchorAge after the system clock is stepped or the machine resumes
// from suspend (neither moves the monotonic clock): the anchor is renewed at
// least every anchorAge, and until then the wall reading lags by the step.
// Between such events the kernel advances both clocks at the same rate. The
// wall reading reaches users only through Decision.RetryAt in the hooks and
// the legacy ResetUnix field.
type clock struct {
	anchor atomic.Pointer[time.Time]
}

// anchorAge is how long an anchor is used.
const anchorAge = time.Second

func newClock() *clock {
	c := &clock{}
	t := time.Now()
	c.anchor.Store(&t)
	return c
}

func (c *clock) now() time.Time {
	a := c.anchor.Load()
	if d := time.Since(*a); d >= 0 && d < anchorAge {
		return a.Add(d)
	}
	// Renewal allocates the new anchor: once per anchorAge at most per
	// goroutine racing here, nothing per request.
	t := time.Now()
	c.anchor.Store(&t)
	return t
}
