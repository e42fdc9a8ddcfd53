package slidelog

import "sync"

// Reference is the same sliding log guarded by a mutex: the obvious
// implementation, kept as the oracle the lock-free Log is tested against and
// as the baseline its benchmarks are measured against. Same rules, same
// clamping, same saturation, same answers; only the concurrency differs.
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

// NewReference returns a mutex-guarded log for the rules (valid, as for New).
func NewReference(rules []Rule) *Reference {
	var l Log
	l.Init(rules) // validates
	return &Reference{
		rules:     l.rules,
		minLimit:  l.minLimit,
		maxWindow: l.maxWindow,
		stamps:    make([]int64, l.size),
	}
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

// AllowN is Log.AllowN under a mutex.
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

// TokensAt is Log.TokensAt under a mutex.
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

// RemainingAt is Log.RemainingAt under a mutex.
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

// ReadyAt is Log.ReadyAt under a mutex.
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

// IdleAt is Log.IdleAt under a mutex.
func (r *Reference) IdleAt(now int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last == 0 || r.last <= toStamp(now)-r.maxWindow
}
