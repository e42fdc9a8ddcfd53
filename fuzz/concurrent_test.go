package fuzz

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
)

// FuzzConcurrentExact drives a ring.Limiter (the first rule) and a multi.New
// (all rules) with the decoded calls: a sequential prefix, checked decision
// by decision against the naive log, then the rest split between two
// goroutines sharing one increasing clock (some admissions present a stale
// instant), while a third asks TokensAt, ReadyAt and IdleAt an hour before
// and after, and makes calls refused for their size, until they are done. The concurrent part
// is checked from the outside (see outside_test.go): the admissions whose
// whole interval [instant passed, clock after return] lies in one window must
// total at most the limit, for every rule and every window, over the whole run.
//
// The interleaving is the scheduler's, so a failure may not replay exactly;
// the property it breaks holds in every interleaving.
func FuzzConcurrentExact(f *testing.F) {
	multiSeeds(f)
	f.Add([]byte{1, 2, 5, 0x20, 0, 200, 0x81, 180, 0x90, 0, 0xff, 170, 0x40, 250, 0, 0x85, 200, 0x83, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, ops := decodeRules(data)
		if len(ops) == 0 {
			return
		}
		split := int(ops[0]) % (len(ops)/2 + 1)
		ops = ops[1:]
		r, err := ring.New(rules[0].Limit, rules[0].Window)
		if err != nil {
			t.Fatal(err)
		}
		m, err := multi.New(rules...)
		if err != nil {
			t.Fatal(err)
		}
		subjects := []struct {
			l     exact
			rules []multi.Rule
		}{{r, rules[:1]}, {m, rules}}
		for _, s := range subjects {
			concurrentReplay(t, s.l, s.rules, ops, split)
		}
	})
}

func concurrentReplay(t *testing.T, l exact, rules []multi.Rule, data []byte, split int) {
	t.Helper()
	minLimit, maxLimit := rules[0].Limit, 0
	for _, r := range rules {
		minLimit, maxLimit = min(minLimit, r.Limit), max(maxLimit, r.Limit)
	}
	w0 := rules[0].Window
	calls := decodeOps(data, w0, maxLimit)
	split = min(split, len(calls))
	t0 := time.Now()
	at := func(off int64) time.Time { return t0.Add(time.Duration(off)) }

	// Sequential prefix: exact equality with the naive log.
	o := oracle.NewLog(oracleRules(rules)...)
	var all []interval
	now := int64(time.Hour) // room for queries an hour before
	for i, c := range calls[:split] {
		now += int64(c.dt)
		if g, w := l.TokensAt(at(now)), o.TokensAt(now); g != w {
			t.Fatalf("rules %v call %d: TokensAt(%d) = %d, naive log %d", rules, i, now, g, w)
		}
		clamped := o.Clamp(now)
		g, w := l.AllowN(at(now), c.n), o.AllowN(now, c.n)
		if g != w {
			t.Fatalf("rules %v call %d: AllowN(%d, %d) = %v, naive log %v", rules, i, now, c.n, g, w)
		}
		if g && c.n > 0 {
			all = append(all, interval{lo: clamped, hi: clamped, n: c.n})
		}
	}

	// Concurrent rest: two goroutines admit, on one shared clock; a third
	// asks at other instants (the decoded queries, or all kinds in turn)
	// until they are done, so that its calls meet admissions in flight.
	var clk atomic.Int64
	latest, _ := o.Latest()
	clk.Store(max(now, latest))
	const admitters = 2
	var oversize atomic.Int64
	var queries []int
	for _, c := range calls[split:] {
		if c.n > maxLimit {
			queries = append(queries, c.n)
		}
	}
	if len(queries) == 0 {
		queries = []int{maxLimit + 1, maxLimit + 2, maxLimit + 3, maxLimit + 4}
	}
	var done atomic.Bool
	var qwg sync.WaitGroup
	qwg.Add(1)
	go func() {
		defer qwg.Done()
		for i := 0; !done.Load(); i++ {
			n := queries[i%len(queries)]
			u := clk.Load() + int64(time.Hour)*int64(1-2*(i%2))
			switch (n + i/len(queries)) % 4 {
			case 0:
				l.TokensAt(at(u))
			case 1:
				l.ReadyAt(at(u), minLimit)
			case 2:
				l.IdleAt(at(u))
			case 3:
				if l.AllowN(at(u), n) {
					oversize.Store(int64(n))
				}
			}
		}
	}()
	recs := make([][]interval, admitters)
	var wg sync.WaitGroup
	for g := range admitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := split + g; i < len(calls); i += admitters {
				c := calls[i]
				n := c.n
				switch {
				case n > maxLimit:
					continue // the querier's
				case n <= 0:
					n = 1
				}
				lo := clk.Add(max(0, int64(c.dt)))
				if c.dt < 0 {
					lo += int64(c.dt) // a stale instant
				}
				if l.AllowN(at(lo), n) {
					recs[g] = append(recs[g], interval{lo: lo, hi: clk.Load(), n: n})
				}
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	qwg.Wait()
	if n := oversize.Load(); n != 0 {
		t.Fatalf("rules %v: AllowN(n=%d) admitted above the smallest limit %d", rules, n, minLimit)
	}
	for _, rs := range recs {
		all = append(all, rs...)
	}
	for _, r := range rules {
		if msg := certainOverLimit(all, r.Limit, int64(r.Window)); msg != "" {
			t.Fatalf("rules %v, rule %v: %s", rules, r, msg)
		}
	}
}
