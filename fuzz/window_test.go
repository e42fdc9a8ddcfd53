package fuzz

import (
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/window"
)

// FuzzWindow decodes a configuration from the first two bytes and a call
// sequence from the rest (decodeOps), replays it on simulated time through
// window.Limiter and through windowOracle, and fails on the first difference
// in AllowN, TokensAt, ReadyAt or IdleAt. Whenever IdleAt is true it also
// starts a new limiter and checks that both decide every later call alike
// (until a call goes back before that instant, which the contract does not
// cover). At the end it checks the bound over windows of every alignment:
// at most 2*limit-1, and max(limit, 2*limit-2) for a sequential history.

// windowWindows are the windows a decoded configuration may get: tiny ones,
// where every nanosecond matters, up to an hour.
var windowWindows = [8]time.Duration{1, 2, 3, 7, 100, 1000, time.Second, time.Hour}

// windowLimits are the limits: small ones, where the rounding a peer does
// would show, and the largest supported.
var windowLimits = [8]int{1, 2, 3, 4, 5, 10, 100, window.MaxLimit}

// windowT0 is the simulated clock's origin. The limiter measures instants
// from its creation (now); any origin within decades of it gives the same
// decisions.
var windowT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// windowMaxOps bounds the calls replayed from one input, so that an input the
// fuzzer grows large still runs in milliseconds.
const windowMaxOps = 400

// windowOracle evaluates the two-counter formula exactly, in math/big, on
// counts taken from the naive log of admissions. Its alignment rule is
// written directly from the package documentation: windows are
// [anchor+k*W, anchor+(k+1)*W); a limiter whose current and previous windows
// are both empty is idle, and an admission into an idle limiter anchors the
// grid at its own instant. An instant before the start of the window of the
// latest admission is treated as that start.
type windowOracle struct {
	limit, window int64
	anchored      bool
	anchor        int64
	floor         int64
	log           []stamp
	floors        []int64 // floors[i] is floor when log[i] was admitted; non-decreasing

	lhs, rhs, x big.Int // scratch for fitsCounts
}

// at returns the clamped instant, its window's start and the two counts;
// idle means both counts are zero (or nothing was ever admitted), in which
// case an admission would start a window at t.
func (o *windowOracle) at(now int64) (t, ws, prev, curr int64, idle bool) {
	if !o.anchored {
		return now, now, 0, 0, true
	}
	t = max(now, o.floor)
	ws = o.anchor + (t-o.anchor)/o.window*o.window
	// Count the stamps in [ws-W, ws) and [ws, ws+W). A stamp admitted when
	// floor was f lies in [f, f+W); floors are grid points of the anchor at
	// the time, and the stamps of an older anchor all lie more than W
	// before the newer one, so stamps with a floor below ws-W lie before
	// ws-W and need not be scanned. (The scan itself is the naive one.)
	from, _ := slices.BinarySearch(o.floors, ws-o.window)
	for _, s := range o.log[from:] {
		switch {
		case s.at >= ws-o.window && s.at < ws:
			prev += s.cost
		case s.at >= ws && s.at < ws+o.window:
			curr += s.cost
		}
	}
	if prev == 0 && curr == 0 {
		return t, t, 0, 0, true
	}
	return t, ws, prev, curr, false
}

// fitsCounts evaluates prev*(W-el) + (curr+n)*W <= limit*W in math/big.
func (o *windowOracle) fitsCounts(prev, curr, el, n int64) bool {
	o.lhs.Mul(o.lhs.SetInt64(prev), o.x.SetInt64(o.window-el))
	o.rhs.Mul(o.rhs.SetInt64(curr+n), o.x.SetInt64(o.window))
	o.lhs.Add(&o.lhs, &o.rhs)
	o.rhs.Mul(o.rhs.SetInt64(o.limit), &o.x)
	return o.lhs.Cmp(&o.rhs) <= 0
}

// fits reports whether n fits at now.
func (o *windowOracle) fits(now, n int64) bool {
	t, ws, prev, curr, _ := o.at(now)
	return o.fitsCounts(prev, curr, t-ws, n)
}

func (o *windowOracle) allowN(now int64, n int) bool {
	if n == 0 {
		return true
	}
	if n < 0 || int64(n) > o.limit {
		return false
	}
	t, ws, prev, curr, idle := o.at(now)
	if !o.fitsCounts(prev, curr, t-ws, int64(n)) {
		return false
	}
	if idle {
		o.anchored, o.anchor = true, t
	}
	o.floor = ws
	o.log = append(o.log, stamp{at: t, cost: int64(n)})
	o.floors = append(o.floors, ws)
	return true
}

// tokens is the largest n that fits: the candidate limit - curr -
// ceil(prev*(W-el)/W), computed in math/big and then checked against the
// definition (it fits, one more does not).
func (o *windowOracle) tokens(now int64) int64 {
	t, ws, prev, curr, _ := o.at(now)
	el := t - ws
	var q, r big.Int
	q.QuoRem(new(big.Int).Mul(big.NewInt(prev), big.NewInt(o.window-el)), big.NewInt(o.window), &r)
	if r.Sign() != 0 {
		q.Add(&q, big.NewInt(1))
	}
	k := max(o.limit-curr-q.Int64(), 0)
	if k > 0 && !o.fitsCounts(prev, curr, el, k) || k < o.limit && o.fitsCounts(prev, curr, el, k+1) {
		panic(fmt.Sprintf("oracle: %d is not the largest n that fits", k))
	}
	return k
}

func windowSeeds(f *testing.F) {
	// Configuration bytes: limit index, window index. Then (step, n) pairs:
	// step 0 -> 0, 8 -> W, 9 -> W-1, 10 -> W+1, 11 -> W/2, 16 -> -1,
	// 18 -> -W, 19 -> 2W, 21 -> 2^40 ns, 0x80|k -> k*W/128; n < 160 -> 1,
	// 230..239 -> limit, 240.. -> limit+1.., 245..249 -> 0, 250.. -> -1...
	// TestSteps of window/: limit 4, W = 1s.
	f.Add([]byte{3, 6, 0, 0, 0, 232, 0, 0, 9, 0, 16, 0, 0xa0, 0, 0, 0, 0xa0, 0, 18, 0, 0xe0, 161, 0xf0, 0, 0x90, 245, 0, 250, 0, 241, 19, 235, 0xc0, 0, 9, 235, 0, 235, 21, 235, 8, 0})
	// Reaching 2*limit-2: anchor 1, limit-1 at W-1, limit-1 at 2W-2 (limit 10, W = 100ns).
	f.Add([]byte{5, 4, 0, 0, 9, 167, 9, 167, 16, 0})
	// Idle gaps: exactly 2W, 5W, 2^40 ns, and back.
	f.Add([]byte{2, 5, 0, 232, 19, 232, 19, 0, 20, 232, 21, 232, 18, 0, 8, 0})
	// One-nanosecond windows, n > limit and n <= 0.
	f.Add([]byte{0, 0, 0, 0, 1, 0, 4, 0, 0, 240, 0, 249, 0, 255, 8, 0, 9, 0})
	// The largest limit with a one-hour window.
	f.Add([]byte{7, 7, 0, 235, 0, 200, 11, 235, 0x90, 180, 8, 0, 19, 235})
}

func FuzzWindow(f *testing.F) {
	windowSeeds(f)
	f.Fuzz(replayWindow)
}

// replayWindow is FuzzWindow's body.
func replayWindow(t *testing.T, data []byte) {
	{
		if len(data) < 2 {
			return
		}
		limit := windowLimits[data[0]%8]
		w := windowWindows[data[1]%8]
		l, err := window.New(limit, w)
		if err != nil {
			t.Fatalf("New(%d, %v): %v", limit, w, err)
		}
		o := &windowOracle{limit: int64(limit), window: int64(w)}
		var shadow *window.Limiter // a new limiter started when l was idle
		var idleSince int64
		var sim int64
		ops := decodeOps(data[2:], w, limit)
		ops = ops[:min(len(ops), windowMaxOps)]
		for i, op := range ops {
			sim += int64(op.dt)
			now := windowT0.Add(time.Duration(sim))

			if got, want := l.TokensAt(now), o.tokens(sim); int64(got) != want {
				t.Fatalf("op %d (limit %d, W %v): TokensAt(t0%+d) = %d, want %d", i, limit, w, sim, got, want)
			}
			checkReadyAt(t, i, l, o, now, sim, op.n)
			_, _, _, _, idle := o.at(sim)
			if got := l.IdleAt(now); got != idle {
				t.Fatalf("op %d (limit %d, W %v): IdleAt(t0%+d) = %v, want %v", i, limit, w, sim, got, idle)
			}
			if shadow != nil && sim < idleSince {
				shadow = nil
			}
			if shadow == nil && idle {
				shadow, _ = window.New(limit, w)
				idleSince = sim
			}

			want := o.allowN(sim, op.n)
			if got := l.AllowN(now, op.n); got != want {
				t.Fatalf("op %d (limit %d, W %v): AllowN(t0%+d, %d) = %v, want %v", i, limit, w, sim, op.n, got, want)
			}
			if shadow != nil {
				if got := shadow.AllowN(now, op.n); got != want {
					t.Fatalf("op %d: a limiter idle since t0%+d decided %v, a new one %v", i, idleSince, want, got)
				}
			}
		}
		best := maxInAnyWindow(o.log, int64(w))
		if best > int64(2*limit-1) {
			t.Fatalf("%d admitted in one window of %v, bound 2*limit-1 = %d", best, w, 2*limit-1)
		}
		if seq := int64(max(limit, 2*limit-2)); best > seq {
			t.Fatalf("%d admitted in one window of %v, sequential bound max(limit, 2*limit-2) = %d", best, w, seq)
		}
	}
}

// checkReadyAt checks ReadyAt(now, n) against the oracle: n fits at the
// returned instant, and not one nanosecond before it unless it is now.
func checkReadyAt(t *testing.T, i int, l *window.Limiter, o *windowOracle, now time.Time, sim int64, n int) {
	t.Helper()
	at, ok := l.ReadyAt(now, n)
	switch {
	case n == 0:
		if !ok || !at.Equal(now) {
			t.Fatalf("op %d: ReadyAt(now, 0) = %v, %v; want now, true", i, at, ok)
		}
		return
	case n < 0 || int64(n) > o.limit:
		if ok || !at.IsZero() {
			t.Fatalf("op %d: ReadyAt(now, %d) = %v, %v; want zero, false", i, n, at, ok)
		}
		return
	}
	if !ok {
		t.Fatalf("op %d: ReadyAt(now, %d) not ok", i, n)
	}
	r := int64(at.Sub(windowT0))
	if r < sim {
		t.Fatalf("op %d: ReadyAt(t0%+d, %d) = t0%+d, before now", i, sim, n, r)
	}
	if !o.fits(r, int64(n)) {
		t.Fatalf("op %d: ReadyAt(t0%+d, %d) = t0%+d, where %d does not fit", i, sim, n, r, n)
	}
	if r > sim && o.fits(r-1, int64(n)) {
		t.Fatalf("op %d: ReadyAt(t0%+d, %d) = t0%+d, but %d fits 1ns earlier", i, sim, n, r, n)
	}
}
