package window

import (
	"cmp"
	"math/big"
	"slices"
)

// refModel is the naive reference: the admitted stamps in a slice, the
// formula evaluated in math/big, windows counted by scanning the slice. Its
// alignment rule is stated directly: windows are [anchor+k*W,
// anchor+(k+1)*W); when both the current and the previous window are empty
// (or nothing was ever admitted) the limiter is idle, and an admission at t
// sets anchor = t. An instant earlier than the start of the window of the
// latest admission is treated as that start.
type refModel struct {
	limit, window int64
	anchored      bool
	anchor        int64
	floor         int64 // start of the window of the latest admission
	stamps        []refStamp
}

type refStamp struct{ at, cost int64 }

// costIn returns the cost stamped in [lo, hi).
func (r *refModel) costIn(lo, hi int64) int64 {
	var c int64
	for _, s := range r.stamps {
		if s.at >= lo && s.at < hi {
			c += s.cost
		}
	}
	return c
}

// state returns the clamped instant, the start of its window and the two
// counts, with ws = t and zero counts when the limiter is idle at t.
func (r *refModel) state(now int64) (t, ws, prev, curr int64, idle bool) {
	t = now
	if !r.anchored {
		return t, t, 0, 0, true
	}
	t = max(t, r.floor)
	k := (t - r.anchor) / r.window // t >= floor >= anchor
	ws = r.anchor + k*r.window
	prev, curr = r.costIn(ws-r.window, ws), r.costIn(ws, ws+r.window)
	if prev == 0 && curr == 0 {
		return t, t, 0, 0, true
	}
	return t, ws, prev, curr, false
}

func (r *refModel) fits(prev, curr, el, n int64) bool {
	lhs := new(big.Int).Mul(big.NewInt(prev), big.NewInt(r.window-el))
	lhs.Add(lhs, new(big.Int).Mul(big.NewInt(curr+n), big.NewInt(r.window)))
	rhs := new(big.Int).Mul(big.NewInt(r.limit), big.NewInt(r.window))
	return lhs.Cmp(rhs) <= 0
}

func (r *refModel) allowN(now int64, n int) bool {
	if n == 0 {
		return true
	}
	if n < 0 || int64(n) > r.limit {
		return false
	}
	t, ws, prev, curr, idle := r.state(now)
	if !r.fits(prev, curr, t-ws, int64(n)) {
		return false
	}
	if idle {
		r.anchored, r.anchor = true, t
	}
	r.floor = ws
	r.stamps = append(r.stamps, refStamp{t, int64(n)})
	return true
}

func (r *refModel) tokensAt(now int64) int64 {
	t, ws, prev, curr, _ := r.state(now)
	lo, hi := int64(0), r.limit // fits(lo) holds or lo == 0; find the largest
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if r.fits(prev, curr, t-ws, mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// maxInAnyWindow returns the largest cost stamped in any (t-w, t]. The
// maximum is reached by a window ending at a stamp.
func maxInAnyWindow(stamps []refStamp, w int64) int64 {
	s := slices.Clone(stamps)
	slices.SortFunc(s, func(a, b refStamp) int { return cmp.Compare(a.at, b.at) })
	var best, sum int64
	lo := 0
	for hi := range s {
		sum += s[hi].cost
		for s[lo].at <= s[hi].at-w {
			sum -= s[lo].cost
			lo++
		}
		best = max(best, sum)
	}
	return best
}
