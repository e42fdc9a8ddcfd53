// Package slidelogtest holds the reference implementation of package
// slidelog for tests: the same sliding log guarded by a mutex. slidelog's
// tests compare the lock-free Log with it, and ring's tests use it as the
// lock-free Limiter's mutex twin (also the baseline of ring's benchmarks).
package slidelogtest

import "sync"

// Rule is one (limit, window) pair, as slidelog.Rule; window in nanoseconds.
type Rule struct {
	Limit  int64
	Window int64
}

// The limits and the stamp range of slidelog: offsets in
// [1-stampBias, maxStamp-stampBias] are represented exactly, others saturate
// to the ends of that range; stamp 0 means "nothing admitted". slidelog's
// differential tests, which run at both ends of the range, check that the two
// agree.
const (
	maxLimit  = 1 << (26 + 4*(^uint(0)>>63))
	maxWindow = 1 << 60
	stampBias = int64(1) << 61
	maxStamp  = int64(1)<<62 - 1
)

func toStamp(now int64) int64 {
	switch {
	case now > maxStamp-stampBias:
		return maxStamp
	case now < 1-stampBias:
		return 1
	}
	return now + stampBias
}

func fromStamp(s int64) int64 { return s - stampBias }

// Reference is the sliding log guarded by a mutex: the obvious
// implementation. Same rules, same clamping, same saturation, same answers as
// slidelog.Log; only the concurrency differs.
type Reference struct {
	mu        sync.Mutex
	rules     []Rule
	minLimit  int64
	maxWindow int64
	// stamps[i % len] is the stamp of index i; count stamps were written.
	// Guarded by mu.
	stamps []int64
	count  int64
	last   int64
}

// NewReference returns a mutex-guarded log for the rules, with a ring sized
// for the largest limit. It panics on no rule or an invalid one (limit in
// [1, 2^30], window in [1, 2^60]), as slidelog.Log.Init does.
func NewReference(rules []Rule) *Reference {
	if len(rules) == 0 {
		panic("slidelogtest: no rules")
	}
	r := &Reference{rules: append([]Rule(nil), rules...), minLimit: rules[0].Limit}
	var size int64
	for _, ru := range rules {
		if ru.Limit < 1 || ru.Limit > maxLimit || ru.Window < 1 || ru.Window > maxWindow {
			panic("slidelogtest: invalid rule")
		}
		size = max(size, ru.Limit)
		r.minLimit = min(r.minLimit, ru.Limit)
		r.maxWindow = max(r.maxWindow, ru.Window)
	}
	r.stamps = make([]int64, size)
	return r
}

// stampLocked returns the stamp of index i, 0 for an index before the first.
func (r *Reference) stampLocked(i int64) int64 {
	if i < 0 {
		return 0
	}
	return r.stamps[i%int64(len(r.stamps))]
}

// needLocked is the earliest instant at which every rule admits n.
func (r *Reference) needLocked(n int64) int64 {
	var need int64
	for _, ru := range r.rules {
		if s := r.stampLocked(r.count + n - 1 - ru.Limit); s > 0 {
			need = max(need, s+ru.Window)
		}
	}
	return need
}

// AllowN is slidelog.Log.AllowN under a mutex.
func (r *Reference) AllowN(now, n int64) bool {
	if n <= 0 {
		return n == 0
	}
	if n > r.minLimit {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := max(toStamp(now), r.last)
	if r.needLocked(n) > t {
		return false
	}
	for range n {
		r.stamps[r.count%int64(len(r.stamps))] = t
		r.count++
	}
	r.last = t
	return true
}

// TokensAt is slidelog.Log.TokensAt under a mutex.
func (r *Reference) TokensAt(now int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := max(toStamp(now), r.last)
	var k int64
	for k < r.minLimit && r.needLocked(k+1) <= t {
		k++
	}
	return k
}

// RemainingAt is slidelog.Log.RemainingAt under a mutex.
func (r *Reference) RemainingAt(now int64, dst []int) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := max(toStamp(now), r.last)
	for _, ru := range r.rules {
		var k int64
		for k < ru.Limit {
			if s := r.stampLocked(r.count + k - ru.Limit); s > 0 && s > t-ru.Window {
				break
			}
			k++
		}
		dst = append(dst, int(k))
	}
	return dst
}

// ReadyAt is slidelog.Log.ReadyAt under a mutex.
func (r *Reference) ReadyAt(now, n int64) (int64, bool) {
	if n == 0 {
		return now, true
	}
	if n < 0 || n > r.minLimit {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	need := r.needLocked(n)
	if need <= max(toStamp(now), r.last) {
		return now, true
	}
	if need > maxStamp {
		return 0, false
	}
	return fromStamp(need), true
}

// IdleAt is slidelog.Log.IdleAt under a mutex.
func (r *Reference) IdleAt(now int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last == 0 || r.last <= toStamp(now)-r.maxWindow
}
