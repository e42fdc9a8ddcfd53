package refimpl

import (
	"sync"
	"time"
)

// Rule is one (limit, window) pair of the multi-rule references.
type Rule struct {
	Limit  int
	Window time.Duration
}

// MutexMultiLog is multi.Limiter's semantics (an exact sliding log per rule,
// all-or-nothing) guarded by one mutex: n fits at now iff, for every rule, the
// n-th most recent unit of cost stamped within that rule's last Limit units
// has left the rule's window; an admission stamps n units in every rule's
// log, a refusal writes nothing. Safe for concurrent use.
type MutexMultiLog struct {
	base time.Time

	mu     sync.Mutex
	latest int64 // guarded by mu
	logs   []log // guarded by mu
}

type log struct {
	window int64
	head   int
	stamps []int64
}

// NewMutexMultiLog returns an all-or-nothing log for the given rules.
func NewMutexMultiLog(rules ...Rule) *MutexMultiLog {
	l := &MutexMultiLog{base: time.Now(), latest: -1 << 62}
	for _, r := range rules {
		g := log{window: int64(r.Window), stamps: make([]int64, r.Limit)}
		for i := range g.stamps {
			g.stamps[i] = -1 << 62
		}
		l.logs = append(l.logs, g)
	}
	return l
}

// Allow is AllowN at the current monotonic instant.
func (l *MutexMultiLog) Allow() bool { return l.allowAt(int64(time.Since(l.base)), 1) }

// AllowN decides n at now.
func (l *MutexMultiLog) AllowN(now time.Time, n int) bool {
	return l.allowAt(int64(now.Sub(l.base)), n)
}

func (l *MutexMultiLog) allowAt(now int64, n int) bool {
	if n == 0 {
		return true
	}
	if n < 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now = max(now, l.latest)
	for i := range l.logs {
		g := &l.logs[i]
		size := len(g.stamps)
		if n > size || g.stamps[(g.head+n-1)%size] > now-g.window {
			return false
		}
	}
	l.latest = now
	for i := range l.logs {
		g := &l.logs[i]
		for range n {
			g.stamps[g.head] = now
			if g.head++; g.head == len(g.stamps) {
				g.head = 0
			}
		}
	}
	return true
}

// MutexMultiWindow is multi.Approx's semantics (a two-counter window per
// rule, in MutexWindow's layout, all-or-nothing) guarded by one mutex: n is
// admitted iff every rule's two-counter estimate admits it, and only then do
// the counters change. Safe for concurrent use.
type MutexMultiWindow struct {
	base time.Time

	mu    sync.Mutex
	rules []counters // guarded by mu
}

type counters struct {
	limit, window int64
	seen          bool
	start         int64
	prev, curr    int64
}

// NewMutexMultiWindow returns an all-or-nothing two-counter limiter for the
// given rules.
func NewMutexMultiWindow(rules ...Rule) *MutexMultiWindow {
	w := &MutexMultiWindow{base: time.Now()}
	for _, r := range rules {
		w.rules = append(w.rules, counters{limit: int64(r.Limit), window: int64(r.Window)})
	}
	return w
}

// Allow is AllowN at the current monotonic instant.
func (w *MutexMultiWindow) Allow() bool { return w.allowAt(int64(time.Since(w.base)), 1) }

// AllowN decides n at now.
func (w *MutexMultiWindow) AllowN(now time.Time, n int) bool {
	return w.allowAt(int64(now.Sub(w.base)), n)
}

func (w *MutexMultiWindow) allowAt(now int64, n int) bool {
	if n == 0 {
		return true
	}
	if n < 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	next := make([]counters, 0, 4)
	for _, c := range w.rules {
		if int64(n) > c.limit {
			return false
		}
		at := now
		if c.seen {
			at = max(at, c.start)
		}
		switch d := at - c.start; {
		case !c.seen || d >= 2*c.window:
			c.start, c.prev, c.curr = at, 0, 0
		case d >= c.window:
			c.start, c.prev, c.curr = c.start+c.window, c.curr, 0
		}
		if c.prev*(c.window-(at-c.start))+(c.curr+int64(n))*c.window > c.limit*c.window {
			return false
		}
		c.seen = true
		c.curr += int64(n)
		next = append(next, c)
	}
	copy(w.rules, next)
	return true
}
