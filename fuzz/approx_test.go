package fuzz

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/window"
)

// FuzzMultiApprox checks the approximate flavour decision by decision
// against the two-counter model (oracle.TwoCounter: windows anchored at an
// admission into an idle rule, a stale instant decided at its rule's window
// start), and the
// 2*limit-1 bound of every rule over windows of every alignment.
func FuzzMultiApprox(f *testing.F) {
	multiSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, ops := decodeRules(data)
		l, err := multi.NewApprox(rules...)
		if err != nil {
			t.Fatal(err)
		}
		ref := oracle.NewTwoCounter(oracle.StaleToStart, oracle.AnchorIdle, oracleRules(rules)...)
		replayMulti(t, rules, ops, l, ref)
		// The bound on the model's stamps: replayMulti has checked every
		// decision of the limiter against the model's, so this checks the
		// model's arithmetic, and the limiter through it.
		for i, r := range rules {
			if m := oracle.MaxInWindow(ref.Stamps(i), int64(r.Window)); m > int64(2*r.Limit-1) {
				t.Fatalf("rules %v: %d admitted in some window of %v, bound %d", rules, m, r.Window, 2*r.Limit-1)
			}
		}
	})
}

// FuzzWindowApprox requires a one-rule multi.Approx and a window.Limiter with
// the same limit and window to answer every call alike: AllowN, TokensAt
// (and the rule's RemainingAt), ReadyAt and IdleAt, on the sequences of
// FuzzWindow, with the zero time.Time and a far-future instant presented
// now and then. Both are built on internal/twocount; this is what keeps one
// rule for stale instants, one set of limits and one clamping range.
func FuzzWindowApprox(f *testing.F) {
	windowSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		limit := windowLimits[data[0]%8]
		w := windowWindows[data[1]%8]
		wl, err := window.New(limit, w)
		if err != nil {
			t.Fatal(err)
		}
		al, err := multi.NewApprox(multi.Rule{Limit: limit, Window: w})
		if err != nil {
			t.Fatal(err)
		}
		far := windowT0.AddDate(100, 0, 0)
		var sim int64
		var buf []int
		ops := decodeOps(data[2:], w, limit)
		for i, op := range ops[:min(len(ops), windowMaxOps)] {
			sim += int64(op.dt)
			now := windowT0.Add(time.Duration(sim))
			switch i % 23 {
			case 11:
				now = time.Time{}
			case 22:
				now = far
			}
			if a, b := wl.TokensAt(now), al.TokensAt(now); a != b {
				t.Fatalf("op %d (limit %d, W %v): TokensAt(%v) = %d (window), %d (Approx)", i, limit, w, now, a, b)
			}
			if buf = al.RemainingAt(now, buf[:0]); len(buf) != 1 || buf[0] != al.TokensAt(now) {
				t.Fatalf("op %d: RemainingAt(%v) = %v, TokensAt %d", i, now, buf, al.TokensAt(now))
			}
			wa, wok := wl.ReadyAt(now, op.n)
			aa, aok := al.ReadyAt(now, op.n)
			// Answers carry the monotonic reading of each limiter's base;
			// the inputs have none, so they are compared on the wall
			// clock. Beyond the clamping range each limiter measures from
			// its own base (they differ by microseconds), so only in-range
			// answers are compared as instants.
			inRange := i%23 != 11 && i%23 != 22
			if wok != aok || inRange && !wa.Round(0).Equal(aa.Round(0)) {
				t.Fatalf("op %d (limit %d, W %v): ReadyAt(%v, %d) = %v, %v (window); %v, %v (Approx)", i, limit, w, now, op.n, wa, wok, aa, aok)
			}
			if a, b := wl.IdleAt(now), al.IdleAt(now); a != b {
				t.Fatalf("op %d (limit %d, W %v): IdleAt(%v) = %v (window), %v (Approx)", i, limit, w, now, a, b)
			}
			if a, b := wl.AllowN(now, op.n), al.AllowN(now, op.n); a != b {
				t.Fatalf("op %d (limit %d, W %v): AllowN(%v, %d) = %v (window), %v (Approx)", i, limit, w, now, op.n, a, b)
			}
		}
	})
}

// TestOutsideApprox runs runOutsideTwo on multi.Approx with one and two rules:
// every history must linearize with no advance at all (a refused call writes
// nothing), and every rule keep its 2*limit-1 bound.
func TestOutsideApprox(t *testing.T) {
	for _, rules := range [][]multi.Rule{
		{{Limit: 2, Window: 1000}},
		{{Limit: 4, Window: 1000}},
		{{Limit: 3, Window: 1000}, {Limit: 5, Window: 3000}},
		{{Limit: 2, Window: 1000}, {Limit: 3, Window: 700}},
	} {
		runOutsideTwo(t, rules, func() twoUnderTest {
			l, err := multi.NewApprox(rules...)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}, false, 200)
	}
}

// TestLinearizeRejects checks that the search behind the outside tests has
// teeth: answers that no order explains are rejected, with and without
// advances, and the raced outcome of docs/window.md's example ("Races")
// needs an advance.
func TestLinearizeRejects(t *testing.T) {
	rules := []multi.Rule{{Limit: 2, Window: 1000}}
	seq := func(cs ...call) []call {
		for i := range cs {
			cs[i].inv, cs[i].resp = int64(2*i+1), int64(2*i+2)
		}
		return cs
	}
	for _, adv := range []bool{false, true} {
		// Three admitted at one instant with limit 2.
		if _, ok := linearize(rules, seq(call{u: 5, n: 1, ok: true}, call{u: 5, n: 1, ok: true}, call{u: 5, n: 1, ok: true}), adv); ok {
			t.Errorf("advances %v: 3 admitted at one instant explained", adv)
		}
		// A refusal on an empty limiter.
		if _, ok := linearize(rules, seq(call{u: 5, n: 1}), adv); ok {
			t.Errorf("advances %v: a refusal on a new limiter explained", adv)
		}
		// A wrong TokensAt.
		if _, ok := linearize(rules, seq(call{u: 5, n: 2, ok: true}, call{u: 6, tokens: 1}), adv); ok {
			t.Errorf("advances %v: TokensAt 1 in a full window explained", adv)
		}
	}
	raced := []call{
		{u: 0, n: 1, ok: true, inv: 1, resp: 2},
		{u: 500, n: 1, ok: true, inv: 3, resp: 5},
		{u: 1250, n: 1, ok: false, inv: 4, resp: 6},
		{u: 2900, n: 2, ok: false, inv: 7, resp: 8},
		{u: 3500, n: 1, ok: true, inv: 9, resp: 10},
	}
	if _, ok := linearize(rules, raced, false); ok {
		t.Error("the raced outcome of docs/window.md's example explained without an advance")
	}
	if _, ok := linearize(rules, raced, true); !ok {
		t.Error("the raced outcome of docs/window.md's example not explained with an advance")
	}
}

// TestFarInstants, on window.Limiter and
// multi.Approx: beyond the clamping range (about 63 years after the
// constructor; the year 9999 is far beyond) time stops for the limiter.
// ReadyAt used to answer now (Approx: an instant before now) there while
// AllowN refused, and Wait spun; now AllowN, TokensAt and ReadyAt agree at
// every instant, and ReadyAt says never when nothing can fit before time
// stops.
func TestFarInstants(t *testing.T) {
	type limiter interface {
		twoUnderTest
		ReadyAt(now time.Time, n int) (time.Time, bool)
		WaitN(ctx context.Context, n int) error
	}
	mks := map[string]func() (limiter, error){
		"window": func() (limiter, error) { return window.New(3, time.Hour) },
		"approx": func() (limiter, error) { return multi.NewApprox(multi.Rule{Limit: 3, Window: time.Hour}) },
		"approx2": func() (limiter, error) {
			return multi.NewApprox(multi.Rule{Limit: 3, Window: time.Hour}, multi.Rule{Limit: 5, Window: 24 * time.Hour})
		},
	}
	year9999 := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	for name, mk := range mks {
		for _, far := range []time.Time{time.Now().AddDate(64, 0, 0), year9999, time.Unix(1<<62, 0)} {
			l, err := mk()
			if err != nil {
				t.Fatal(err)
			}
			if !l.AllowN(far, 3) {
				t.Fatalf("%s: AllowN(%v, 3) refused on a new limiter", name, far)
			}
			for _, now := range []time.Time{{}, time.Now(), far, far.Add(time.Hour), far.AddDate(1, 0, 0), year9999} {
				for n := 1; n <= 3; n++ {
					tokens := l.TokensAt(now)
					at, ok := l.ReadyAt(now, n)
					switch {
					case ok && at.Equal(now) && tokens < n:
						t.Errorf("%s, far %v: ReadyAt(%v, %d) = now, but TokensAt = %d", name, far, now, n, tokens)
					case ok && at.Before(now):
						t.Errorf("%s, far %v: ReadyAt(%v, %d) = %v, before now", name, far, now, n, at)
					case ok && l.TokensAt(at) < n:
						t.Errorf("%s, far %v: ReadyAt(%v, %d) = %v, where TokensAt = %d", name, far, now, n, at, l.TokensAt(at))
					case !ok && tokens >= n:
						t.Errorf("%s, far %v: ReadyAt(%v, %d) never, but TokensAt = %d", name, far, now, n, tokens)
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = l.WaitN(ctx, 1)
			cancel()
			if !errors.Is(err, multi.ErrNeverReady) {
				t.Errorf("%s, far %v: WaitN = %v, want ErrNeverReady at once", name, far, err)
			}
		}
	}
}
