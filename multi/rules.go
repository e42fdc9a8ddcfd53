package multi

import (
	"errors"
	"fmt"
	"time"

	"github.com/slidelimit/slidelimit/internal/slidelog"
	"github.com/slidelimit/slidelimit/internal/twocount"
)

// MaxLimit is the largest limit a rule of New may have: 2^30 on 64-bit
// platforms, 2^26 on 32-bit ones. New allocates 8 bytes per unit of the
// largest limit.
const MaxLimit = 1 << (26 + 4*(^uint(0)>>63)) // 1,073,741,824 on 64-bit platforms, 67,108,864 on 32-bit ones

// MaxWindow is the longest window a rule of New may have, 2^60 ns (about 36
// years).
const MaxWindow time.Duration = 1 << 60 // 1,152,921,504,606,846,976ns

// The exact flavour's limits are the log's (array lengths must be
// non-negative).
var (
	_ [MaxLimit - slidelog.MaxLimit]struct{}
	_ [slidelog.MaxLimit - MaxLimit]struct{}
	_ [MaxWindow - slidelog.MaxWindow]struct{}
	_ [slidelog.MaxWindow - MaxWindow]struct{}
)

// MaxRules is the most rules New and NewApprox accept. Each rule adds a load
// or two to every decision, and to an Approx snapshot two words, of which its
// table may hold up to 4094 under contention: a few limits at once (per
// second, minute, hour, day) are what several rules are for, and a bound
// keeps a mistaken list of thousands from costing gigabytes.
const MaxRules = 64

// MaxApproxLimit is the largest limit a rule of NewApprox may have; it is
// window.MaxLimit.
const MaxApproxLimit = 1<<20 - 1 // 1,048,575

// MaxApproxWindow is the longest window a rule of NewApprox may have, 2^57 ns
// (about 4.6 years); it is window.MaxWindow.
const MaxApproxWindow time.Duration = 1 << 57 // 144,115,188,075,855,872ns

// Approx and package window share the arithmetic and its limits (array
// lengths must be non-negative).
var (
	_ [twocount.MaxLimit - MaxApproxLimit]struct{}
	_ [MaxApproxLimit - twocount.MaxLimit]struct{}
	_ [twocount.MaxWindow - MaxApproxWindow]struct{}
	_ [MaxApproxWindow - twocount.MaxWindow]struct{}
)

// Rule is one limit: at most Limit units of cost per Window.
type Rule struct {
	Limit  int
	Window time.Duration
}

// validate checks the rules against a flavour's largest limit and window,
// and returns the smallest limit and the longest window. The errors name the
// rule by its index in the argument list.
func validate(rules []Rule, limitMax int, windowMax time.Duration) (minLimit int, maxWindow time.Duration, err error) {
	if len(rules) == 0 {
		return 0, 0, errors.New("multi: at least one rule is required, got none")
	}
	if len(rules) > MaxRules {
		return 0, 0, fmt.Errorf("multi: at most %d rules are allowed, got %d", MaxRules, len(rules))
	}
	minLimit = limitMax
	for i, r := range rules {
		if r.Limit < 1 || r.Limit > limitMax {
			return 0, 0, fmt.Errorf("multi: rule %d: limit must be between 1 and %d, got %d", i, limitMax, r.Limit)
		}
		if r.Window < 1 || r.Window > windowMax {
			return 0, 0, fmt.Errorf("multi: rule %d: window must be between 1ns and %v, got %v", i, windowMax, r.Window)
		}
		minLimit = min(minLimit, r.Limit)
		maxWindow = max(maxWindow, r.Window)
	}
	return minLimit, maxWindow, nil
}
