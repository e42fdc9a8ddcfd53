package multi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// ruleFlavour is the flavour whose rules a baseline borrows.
func ruleFlavour(f string) string {
	switch f {
	case "ring":
		return "exact"
	case "window":
		return "approx"
	}
	return f
}

// Benchmarks: one decision, on one goroutine (AllowN at a given instant: the
// decision alone, no clock read) and on all of them (RunParallel), for 1, 2,
// 4 and 8 rules, on the admit path and on the deny path, for both flavours,
// next to ring (one rule, exact) and window (one rule, two counters) in the
// same run. The slope per extra rule
// and the ratios are in docs/multi.md, with the command that produced them.
//
// Admit path: every call is admitted. Exact: rule k is (8+k per k+1 ns) and
// the instant moves 100ns per call, so the check reads one old stamp per
// rule. Approx: rule k is (window.MaxLimit-k per 1ms+k ns) and the instant
// moves 1ns per call (10^6 calls per window), so nearly every call counts in
// the current window of every rule, and one in 10^6 rolls the windows over.
//
// Deny path: every rule but the last admits, the last is full, so a refused
// call reads every rule (the worst case) and writes nothing.

var ruleCounts = []int{1, 2, 4, 8}

// decider is what the benchmarks call.
type decider interface {
	AllowN(now time.Time, n int) bool
	Allow() bool
}

func admitRules(flavour string, k int) []multi.Rule {
	rules := make([]multi.Rule, k)
	for i := range rules {
		if flavour == "exact" {
			rules[i] = multi.Rule{Limit: 8 + i, Window: time.Duration(1 + i)}
		} else {
			rules[i] = multi.Rule{Limit: window.MaxLimit - i, Window: time.Millisecond + time.Duration(i)}
		}
	}
	return rules
}

func denyRules(k int) []multi.Rule {
	rules := make([]multi.Rule, k)
	for i := range rules {
		rules[i] = multi.Rule{Limit: 100 + i, Window: time.Hour}
	}
	rules[k-1] = multi.Rule{Limit: 1, Window: time.Hour}
	return rules
}

func newFlavour(b *testing.B, flavour string, rules []multi.Rule) decider {
	b.Helper()
	var (
		d   decider
		err error
	)
	switch flavour {
	case "exact":
		d, err = multi.New(rules...)
	case "approx":
		d, err = multi.NewApprox(rules...)
	case "ring":
		if len(rules) != 1 {
			b.Fatal("ring takes one rule")
		}
		d, err = ring.New(rules[0].Limit, rules[0].Window)
	case "window":
		if len(rules) != 1 {
			b.Fatal("window takes one rule")
		}
		d, err = window.New(rules[0].Limit, rules[0].Window)
	}
	if err != nil {
		b.Fatal(err)
	}
	return d
}

type benchCase struct {
	flavour string
	rules   int
}

func benchCases() []benchCase {
	cs := []benchCase{{"ring", 1}, {"window", 1}}
	for _, f := range []string{"exact", "approx"} {
		for _, k := range ruleCounts {
			cs = append(cs, benchCase{f, k})
		}
	}
	return cs
}

func BenchmarkAllowN(b *testing.B) {
	for _, c := range benchCases() {
		name := fmt.Sprintf("flavour=%s/rules=%d", c.flavour, c.rules)
		b.Run(name+"/path=admit", func(b *testing.B) {
			af := ruleFlavour(c.flavour)
			l := newFlavour(b, c.flavour, admitRules(af, c.rules))
			step := time.Duration(100)
			if af == "approx" {
				step = 1
			}
			now := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(step)
				if !l.AllowN(now, 1) {
					b.Fatal("refused on the admit path")
				}
			}
		})
		b.Run(name+"/path=deny", func(b *testing.B) {
			l := newFlavour(b, c.flavour, denyRules(c.rules))
			now := time.Now()
			if !l.AllowN(now, 1) || l.AllowN(now, 1) {
				b.Fatal("deny fixture: want one admission, then refusals")
			}
			b.ReportAllocs()
			for b.Loop() {
				if l.AllowN(now, 1) {
					b.Fatal("admitted on the deny path")
				}
			}
		})
	}
}

// BenchmarkParallel is one limiter shared by every goroutine. Admit path:
// Allow (the clock read included), with rules that admit every call at real
// call rates. Deny path: AllowN at one instant on a full limiter.
func BenchmarkParallel(b *testing.B) {
	for _, c := range benchCases() {
		if c.rules == 4 {
			continue
		}
		name := fmt.Sprintf("flavour=%s/rules=%d", c.flavour, c.rules)
		b.Run(name+"/path=admit", func(b *testing.B) {
			af := ruleFlavour(c.flavour)
			l := newFlavour(b, c.flavour, admitRules(af, c.rules))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l.Allow()
				}
			})
		})
		b.Run(name+"/path=deny", func(b *testing.B) {
			l := newFlavour(b, c.flavour, denyRules(c.rules))
			now := time.Now()
			if !l.AllowN(now, 1) || l.AllowN(now, 1) {
				b.Fatal("deny fixture: want one admission, then refusals")
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if l.AllowN(now, 1) {
						b.Error("admitted on the deny path")
						return
					}
				}
			})
		})
	}
}

// BenchmarkQuota is what an HTTP 429 and the RateLimit fields cost per
// request on one goroutine, two rules (100 per second, 1000 per minute), the
// instant moving 1ms per call (about one call in ten admitted): the decision
// with every rule's quota from one call (decide=rules, DecideRules), against
// the decision followed by the per-rule queries (decide=queries: AllowN,
// RemainingAt, ResetsAt), whose answers another goroutine's admission could
// split from the decision.
func BenchmarkQuota(b *testing.B) {
	rules := []multi.Rule{{Limit: 100, Window: time.Second}, {Limit: 1000, Window: time.Minute}}
	type quoter interface {
		decider
		DecideRules(now time.Time, n int, rules []slidelimit.Status) (slidelimit.Status, []slidelimit.Status)
		RemainingAt(now time.Time, dst []int) []int
		ResetsAt(now time.Time, dst []time.Time) []time.Time
	}
	for _, f := range []string{"exact", "approx"} {
		b.Run("flavour="+f+"/decide=rules", func(b *testing.B) {
			l := newFlavour(b, f, rules).(quoter)
			now := time.Now()
			var buf [2]slidelimit.Status
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Millisecond)
				l.DecideRules(now, 1, buf[:0])
			}
		})
		b.Run("flavour="+f+"/decide=queries", func(b *testing.B) {
			l := newFlavour(b, f, rules).(quoter)
			now := time.Now()
			var rem [2]int
			var resets [2]time.Time
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Millisecond)
				l.AllowN(now, 1)
				l.RemainingAt(now, rem[:0])
				l.ResetsAt(now, resets[:0])
			}
		})
	}
}
