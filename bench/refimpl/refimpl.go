// Package refimpl holds the mutex-guarded references the benchmarks compare
// our lock-free limiters with: the same algorithms, written the obvious way
// with a sync.Mutex around the state. They are what "faster than a mutex"
// means in docs/benchmarks.md, and they are replayed against the exact oracle
// and the two-counter model in the accuracy tests, so a fast result cannot
// come from a wrong answer.
package refimpl

import (
	"sync"
	"time"
)

// MutexLog is the exact sliding log of ring/, guarded by one mutex: a ring of
// limit stamps, one per admitted unit of cost, oldest first. n fits at now iff
// the n-th oldest stamp has left the window (now-W, now]. Safe for concurrent
// use.
type MutexLog struct {
	base   time.Time
	window int64

	mu     sync.Mutex
	latest int64   // guarded by mu: the latest admitted instant
	head   int     // guarded by mu: index of the oldest stamp
	stamps []int64 // guarded by mu
}

// NewMutexLog returns a log for limit events per window.
func NewMutexLog(limit int, window time.Duration) *MutexLog {
	l := &MutexLog{base: time.Now(), window: int64(window), stamps: make([]int64, limit)}
	for i := range l.stamps {
		l.stamps[i] = -1 << 62 // long before any instant: free
	}
	l.latest = -1 << 62
	return l
}

// Allow is AllowN at the current monotonic instant.
func (l *MutexLog) Allow() bool { return l.allowAt(int64(time.Since(l.base)), 1) }

// AllowN decides n at now.
func (l *MutexLog) AllowN(now time.Time, n int) bool { return l.allowAt(int64(now.Sub(l.base)), n) }

func (l *MutexLog) allowAt(now int64, n int) bool {
	if n == 0 {
		return true
	}
	if n < 0 || n > len(l.stamps) {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// An instant before the latest admission is decided and stamped at that
	// admission's instant; a refusal moves nothing.
	now = max(now, l.latest)
	size := len(l.stamps)
	if l.stamps[(l.head+n-1)%size] > now-l.window {
		return false
	}
	l.latest = now
	for range n {
		l.stamps[l.head] = now
		l.head++
		if l.head == size {
			l.head = 0
		}
	}
	return true
}

// MutexWindow is the two-counter estimate of window/, guarded by one mutex:
// the same formula in integers (prev*(W-elapsed) + (curr+n)*W <= limit*W,
// fine while limit*W is below 2^63) and the same window layout (the first
// admission into an idle limiter starts a window at its own instant; a later
// window starts W after the previous one; an instant before the current
// window's start is treated as that start; a refused call writes nothing).
// Safe for concurrent use.
type MutexWindow struct {
	base          time.Time
	limit, window int64

	mu         sync.Mutex
	seen       bool  // guarded by mu
	start      int64 // guarded by mu: start of the current window
	prev, curr int64 // guarded by mu
}

// NewMutexWindow returns a two-counter limiter for limit events per window.
func NewMutexWindow(limit int, window time.Duration) *MutexWindow {
	return &MutexWindow{base: time.Now(), limit: int64(limit), window: int64(window)}
}

// Allow is AllowN at the current monotonic instant.
func (w *MutexWindow) Allow() bool { return w.allowAt(int64(time.Since(w.base)), 1) }

// AllowN decides n at now.
func (w *MutexWindow) AllowN(now time.Time, n int) bool { return w.allowAt(int64(now.Sub(w.base)), n) }

func (w *MutexWindow) allowAt(now int64, n int) bool {
	if n == 0 {
		return true
	}
	if n < 0 || int64(n) > w.limit {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen {
		now = max(now, w.start)
	}
	start, prev, curr := w.start, w.prev, w.curr
	switch d := now - start; {
	case !w.seen || d >= 2*w.window:
		start, prev, curr = now, 0, 0
	case d >= w.window:
		start, prev, curr = start+w.window, curr, 0
	}
	if prev*(w.window-(now-start))+(curr+int64(n))*w.window > w.limit*w.window {
		return false
	}
	w.seen, w.start, w.prev, w.curr = true, start, prev, curr+int64(n)
	return true
}
