package fuzz

import (
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/ring"
)

// ringConfig decodes a limit and a window from the first bytes.
func ringConfig(data []byte) (limit int, window time.Duration, rest []byte) {
	if len(data) < 2 {
		return 3, time.Second, nil
	}
	limit = 1 + int(data[0])%12
	windows := []time.Duration{1, 2, 10, 1000, time.Millisecond, time.Second, time.Hour, 7 * 24 * time.Hour}
	window = windows[int(data[1])%len(windows)]
	return limit, window, data[2:]
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// FuzzRing replays a decoded call sequence through ring.Limiter and the naive
// sliding log (oracle.Log), and requires every AllowN, TokensAt, ReadyAt and IdleAt answer
// to be equal, every other decision made with DecideStatus to report what the
// oracle's queries around it answer, and the admitted cost in every window of
// the run, over any alignment, to be at most the limit (counted on the
// oracle's stamps: the limiter's decisions equal the oracle's call by call,
// so this bounds the limiter's admissions through the model; a wrong model
// fails it, a limiter that differs from the model fails the calls before).
func FuzzRing(f *testing.F) {
	// Seeds: the shapes of the table tests in ring/.
	f.Add([]byte{2, 5, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 9, 0})                  // fill, full, edges at exactly W
	f.Add([]byte{0, 4, 0, 0, 8, 0, 8, 0, 9, 0, 16, 0})                       // limit 1
	f.Add([]byte{3, 5, 0, 235, 0, 0, 16, 250, 16, 255, 8, 240})              // n == limit, 0, negative, > limit
	f.Add([]byte{2, 5, 0, 0, 19, 0, 18, 0, 0, 0, 10, 0})                     // steps backwards
	f.Add([]byte{5, 6, 0x81, 0, 0x90, 0, 0xff, 0, 0xc0, 170, 0xa0, 0, 1, 0}) // fine steps, batches
	f.Add([]byte{11, 7, 0, 235, 22, 0, 0, 0, 9, 180})                        // long idle gaps, a week window
	f.Fuzz(func(t *testing.T, data []byte) {
		limit, window, rest := ringConfig(data)
		l, err := ring.New(limit, window)
		if err != nil {
			t.Fatal(err)
		}
		o := oracle.NewLog(oracle.R(limit, window))
		now := int64(0)
		for i, c := range decodeOps(rest, window, limit) {
			now += int64(c.dt)
			at := epoch.Add(time.Duration(now))
			if g, w := l.TokensAt(at), o.TokensAt(now); g != w {
				t.Fatalf("call %d: TokensAt(%d) = %d, oracle %d", i, now, g, w)
			}
			gr, gok := l.ReadyAt(at, c.n)
			wr, wok := o.ReadyAt(now, c.n)
			if gok != wok || (gok && gr.Sub(epoch) != time.Duration(wr)) {
				t.Fatalf("call %d: ReadyAt(%d, %d) = %d, %v; oracle %d, %v", i, now, c.n, gr.Sub(epoch), gok, wr, wok)
			}
			if g, wantIdle := l.IdleAt(at), o.IdleAt(now); g != wantIdle {
				t.Fatalf("call %d: IdleAt(%d) = %v, oracle %v", i, now, g, wantIdle)
			}
			if i%2 == 0 {
				if g, w := l.AllowN(at, c.n), o.AllowN(now, c.n); g != w {
					t.Fatalf("call %d: AllowN(%d, %d) = %v, oracle %v (limit %d, window %v)", i, now, c.n, g, w, limit, window)
				}
				continue
			}
			// Every other call decides with DecideStatus, whose fields
			// must be the oracle's queries around the same decision.
			s := l.DecideStatus(at, c.n)
			w := o.AllowN(now, c.n)
			wantRetry := time.Duration(-1)
			if !w && wok && c.n != 0 {
				wantRetry = time.Duration(wr)
			}
			wantReset := time.Duration(-1)
			if rr, rok := o.ReadyAt(now, limit); rok {
				wantReset = time.Duration(rr)
			}
			since := func(x time.Time) time.Duration {
				if x.IsZero() {
					return -1
				}
				return x.Sub(epoch)
			}
			if s.Admitted != w || s.Remaining != o.TokensAt(now) || since(s.RetryAt) != wantRetry || since(s.ResetAt) != wantReset {
				t.Fatalf("call %d: DecideStatus(%d, %d) = %+v (retry %v, reset %v); oracle admitted %v, remaining %d, retry %v, reset %v",
					i, now, c.n, s, since(s.RetryAt), since(s.ResetAt), w, o.TokensAt(now), wantRetry, wantReset)
			}
		}
		if m := oracle.MaxInWindow(o.Stamps(), int64(window)); m > int64(limit) {
			t.Fatalf("%d admitted in one window of %v, limit %d", m, window, limit)
		}
	})
}
