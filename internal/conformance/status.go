package conformance

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit"
)

// StatusProblem says what is wrong with one decision reported with its quota
// (slidelimit.Status) by a limiter of the given limit, judged only from what its
// caller knows: the instant now and cost n it passed, and the answer. An
// admission leaves at most limit-n and names no RetryAt; a refusal leaves less
// than n and names a RetryAt after now, or none (n never fits); ResetAt is now
// exactly when the whole limit remains, and later otherwise. (A window
// answers a zero ResetAt past the last instant it tells apart, decades away:
// the callers' instants stay far inside.) For n < 1 only Remaining's range is
// checked. It returns "" for a consistent answer.
func StatusProblem(limit, n int, now time.Time, admitted bool, remaining int, retryAt, resetAt time.Time) string {
	switch {
	case remaining < 0 || remaining > limit:
		return "Remaining out of [0, limit]"
	case n < 1:
	case admitted && (remaining > limit-n || !retryAt.IsZero()):
		return "admitted, but Remaining above limit-n or a RetryAt"
	case !admitted && (remaining >= n || (!retryAt.IsZero() && !retryAt.After(now))):
		return "refused, but Remaining at least n or RetryAt not after now"
	case (remaining == limit) != resetAt.Equal(now) || (remaining < limit && !resetAt.After(now)):
		return "ResetAt not now exactly when the whole limit remains"
	}
	return ""
}

// StatusLimiter is a one-rule limiter that decides with its status:
// ring.Limiter and window.Limiter.
type StatusLimiter interface {
	Limiter
	statusDecider
	Limit() int
	Window() time.Duration
}

// RunStatus runs the one-goroutine checks of a one-rule limiter's
// DecideStatus that newL makes: StatusMatchesQueries for limits 1, 5, 7 and
// large (windows of a second down to 10 ms, and an hour), with instants far
// past the last one the limiter tells apart from the 18,000th call on; the
// zero value (zero) admitting only n == 0 with nothing remaining of its
// limit of 0, so the whole of it there now; and no allocation, admitting,
// refusing a cost above the limit, or for n == 0.
func RunStatus(t *testing.T, newL func(limit int, w time.Duration) (StatusLimiter, error), zero StatusLimiter, large int, far time.Duration) {
	t.Helper()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		limit int
		w     time.Duration
	}{
		{1, time.Second},
		{5, time.Second},
		{7, 10 * time.Millisecond},
		{large, time.Hour},
	} {
		t.Run(fmt.Sprintf("limit=%d,window=%v", tc.limit, tc.w), func(t *testing.T) {
			a, err := newL(tc.limit, tc.w)
			if err != nil {
				t.Fatal(err)
			}
			b, err := newL(tc.limit, tc.w)
			if err != nil {
				t.Fatal(err)
			}
			StatusMatchesQueries(t, a, b, t0, far)
		})
	}
	t.Run("zero value", func(t *testing.T) {
		for _, n := range []int{-1, 0, 1, 2} {
			want := slidelimit.Status{Admitted: n == 0, ResetAt: t0}
			if got := zero.DecideStatus(t0, n); got != want {
				t.Errorf("DecideStatus(t0, %d) = %+v, want %+v", n, got, want)
			}
		}
	})
	t.Run("allocations", func(t *testing.T) {
		l, err := newL(1000, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		now := t0
		allocs := testing.AllocsPerRun(1000, func() {
			now = now.Add(time.Microsecond)
			l.DecideStatus(now, 1)
			l.DecideStatus(now, 2000)
			l.DecideStatus(now, 0)
		})
		if allocs != 0 {
			t.Errorf("%v allocs per run, want 0", allocs)
		}
	})
}

// StatusMatchesQueries feeds a and b, two new limiters of one configuration,
// the same random calls, one at a time: a decides with DecideStatus, b with
// AllowN and is then asked TokensAt and ReadyAt at the same instant. Costs
// of every kind (zero, negative, above the limit), stale instants, idle
// gaps, and from the 18,000th call on instants far past the last one the
// limiters tell apart (far must be that far from t0). With nothing in
// between, every field must be what the queries answer.
func StatusMatchesQueries(t *testing.T, a, b StatusLimiter, t0 time.Time, far time.Duration) {
	t.Helper()
	limit, w := a.Limit(), a.Window()
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 11))
	now := t0
	for i := range 20_000 {
		if i == 18_000 {
			now = now.Add(far) // time stops for the limiters from here on
		}
		var at time.Time
		var n int
		now, at, n = RandomCall(r, now, w, limit)
		wantRetry, ready := b.ReadyAt(at, n) // a refusal records nothing
		want := slidelimit.Status{Admitted: b.AllowN(at, n), Remaining: b.TokensAt(at)}
		if !want.Admitted && n != 0 && ready {
			want.RetryAt = wantRetry
		}
		want.ResetAt, _ = b.ReadyAt(at, limit)
		got := a.DecideStatus(at, n)
		// Instants are compared as instants (Equal), on the wall clock
		// alone: the caller's-clock rule is the CallerClock check's.
		if got.Admitted != want.Admitted || got.Remaining != want.Remaining ||
			!got.RetryAt.Round(0).Equal(want.RetryAt.Round(0)) || !got.ResetAt.Round(0).Equal(want.ResetAt.Round(0)) {
			t.Fatalf("seed %d, call %d: DecideStatus(t0+%v, %d) = %+v, the queries say %+v", seed, i, at.Sub(t0), n, got, want)
		}
	}
}

// RandomCall draws the next call of a serial check on a limiter whose
// smallest window is w and largest admissible cost limit: it moves now on,
// by up to w/(4*limit) or, one time in 200, by an idle gap of up to 3w, and
// returns the instant to pass (now, or one time in 10 a stale instant up to
// 2w before it) and a cost from 1 to 4, or one time in 20 each 0, a negative
// cost and one above limit.
func RandomCall(r *rand.Rand, now time.Time, w time.Duration, limit int) (next, at time.Time, n int) {
	if r.IntN(200) == 0 {
		now = now.Add(time.Duration(r.Int64N(int64(3 * w)))) // an idle gap
	} else {
		now = now.Add(time.Duration(r.Int64N(max(int64(w)/int64(4*limit), 1))))
	}
	at = now
	if r.IntN(10) == 0 {
		at = now.Add(-time.Duration(r.Int64N(int64(2 * w)))) // stale
	}
	n = 1 + r.IntN(min(limit, 4))
	switch r.IntN(20) {
	case 0:
		n = 0
	case 1:
		n = -1 - r.IntN(3)
	case 2:
		n = limit + 1 + r.IntN(3)
	}
	return now, at, n
}

// RulesProblem says what is wrong with one answer of a DecideRules (the
// multi limiters', keyed.Limiter's over them), judged only from what its
// caller knows (the instant and cost it passed, the rules' limits): the whole
// status as StatusProblem judges the smallest limit; each rule's alike for
// an admission; for a refusal, each rule's RetryAt is the call's instant
// exactly when that rule alone has room for n, at least one rule has none,
// and the whole RetryAt is the latest of the rules'. It returns "" for a
// consistent answer.
func RulesProblem(limits []int, n int, at time.Time, whole slidelimit.Status, each []slidelimit.Status) string {
	maxN := slices.Min(limits)
	if why := StatusProblem(maxN, n, at, whole.Admitted, whole.Remaining, whole.RetryAt, whole.ResetAt); why != "" {
		return "whole: " + why
	}
	if len(each) != len(limits) {
		return fmt.Sprintf("%d rules' statuses for %d rules", len(each), len(limits))
	}
	least, latest, short := maxN, time.Time{}, false
	for i, s := range each {
		lim := limits[i]
		least = min(least, s.Remaining)
		if s.Admitted != whole.Admitted {
			return fmt.Sprintf("rule %d: Admitted differs from the decision's", i)
		}
		if whole.Admitted {
			if why := StatusProblem(lim, n, at, s.Admitted, s.Remaining, s.RetryAt, s.ResetAt); why != "" {
				return fmt.Sprintf("rule %d: %s", i, why)
			}
			continue
		}
		inRange := n >= 1 && n <= maxN
		switch {
		case s.Remaining < 0 || s.Remaining > lim:
			return fmt.Sprintf("rule %d: Remaining out of [0, limit]", i)
		case !inRange && !s.RetryAt.IsZero():
			return fmt.Sprintf("rule %d: a RetryAt for a cost that never fits", i)
		case inRange && (s.Remaining >= n) != s.RetryAt.Equal(at):
			return fmt.Sprintf("rule %d: RetryAt is the call's instant not exactly when the rule has room for n", i)
		case !s.RetryAt.IsZero() && s.RetryAt.Before(at):
			return fmt.Sprintf("rule %d: RetryAt before the call's instant", i)
		case (s.Remaining == lim) != s.ResetAt.Equal(at) || (s.Remaining < lim && !s.ResetAt.After(at)):
			return fmt.Sprintf("rule %d: ResetAt not the call's instant exactly when the whole limit remains", i)
		}
		if s.Remaining < n {
			short = true
		}
		if s.RetryAt.After(latest) {
			latest = s.RetryAt
		}
	}
	switch {
	case whole.Remaining != least:
		return fmt.Sprintf("whole Remaining %d, the least of the rules' is %d", whole.Remaining, least)
	case whole.Admitted || n < 1 || n > maxN:
	case !short:
		return "refused, but every rule has room for n"
	case !whole.RetryAt.Equal(latest):
		return fmt.Sprintf("whole RetryAt %v, the latest of the rules' is %v", whole.RetryAt, latest)
	}
	return ""
}

// RulesDecider is one decision with every rule's status, for
// RunOutsideRules: a multi limiter's DecideRules (the key ignored), or a
// keyed.Limiter's over multi limiters. An error may only be one that names a
// cost that never fits.
type RulesDecider func(key int, at time.Time, n int, each []slidelimit.Status) (slidelimit.Status, []slidelimit.Status, error)

// RunOutsideRules has six goroutines decide through decide, calls calls each,
// on keys keys (0 to keys-1) of limiters of the given rules' limits, on a
// shared increasing clock (weighted calls, one in ten stale, one in forty
// above the smallest limit), at GOMAXPROCS 2 and 8, and fails on the first
// answer RulesProblem finds inconsistent, or if the runs saw only admissions
// or only refusals. An error must satisfy neverReady.
func RunOutsideRules(t *testing.T, limits []int, keys, calls int, decide func() RulesDecider, neverReady func(error) bool) {
	t.Helper()
	for _, procs := range []int{2, 8} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			d := decide()
			seed := newSeed(t) // the interleaving is not replayed, the calls are
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var clock, admitted, refused atomic.Int64
			var bad atomic.Pointer[string]
			var wg sync.WaitGroup
			for g := range 6 {
				wg.Go(func() {
					r := newRand(seed, uint64(g))
					var each []slidelimit.Status
					for range calls {
						c := clock.Add(1 + r.Int64N(8))
						if r.IntN(10) == 0 {
							c -= r.Int64N(300) // stale
						}
						key, n := r.IntN(keys), 1+r.IntN(3)
						if r.IntN(40) == 0 {
							n = slices.Min(limits) + 1
						}
						at := t0.Add(time.Duration(c))
						var whole slidelimit.Status
						var err error
						whole, each, err = d(key, at, n, each[:0])
						why := RulesProblem(limits, n, at, whole, each)
						if err != nil && !neverReady(err) {
							why = "unexpected error"
						}
						if why != "" {
							msg := fmt.Sprintf("key %d, t0+%d, cost %d: %+v, %+v, %v: %s", key, c, n, whole, each, err, why)
							bad.CompareAndSwap(nil, &msg)
						}
						if whole.Admitted {
							admitted.Add(1)
						} else {
							refused.Add(1)
						}
					}
				})
			}
			wg.Wait()
			if p := bad.Load(); p != nil {
				t.Fatal(*p)
			}
			if admitted.Load() == 0 || refused.Load() == 0 {
				t.Fatalf("%d admissions and %d refusals: the check saw only one kind", admitted.Load(), refused.Load())
			}
		})
	}
}

// StatusChecked is a limiter whose admissions go through DecideStatus, each
// answer checked with StatusProblem, for RunOutside: the bound must hold, and
// every answer be consistent with itself although other goroutines admit at
// the same time.
type StatusChecked struct {
	StatusLimiter
	bad atomic.Pointer[string]
}

// AllowN decides with DecideStatus and keeps the first inconsistent answer.
func (l *StatusChecked) AllowN(now time.Time, n int) bool {
	s := l.DecideStatus(now, n)
	if why := StatusProblem(l.Limit(), n, now, s.Admitted, s.Remaining, s.RetryAt, s.ResetAt); why != "" {
		msg := fmt.Sprintf("DecideStatus(%v, %d) = %+v: %s", now, n, s, why)
		l.bad.CompareAndSwap(nil, &msg)
	}
	return s.Admitted
}

// Problem is the first inconsistent answer, or "".
func (l *StatusChecked) Problem() string {
	if p := l.bad.Load(); p != nil {
		return *p
	}
	return ""
}

// RunOutsideStatus runs RunOutside on opts with every limiter wrapped in
// StatusChecked (newStatus makes them), and fails on the first inconsistent
// answer of any of them.
func RunOutsideStatus(t *testing.T, opts Options, newStatus func(limit int, window time.Duration) (StatusLimiter, error)) {
	t.Helper()
	var mu sync.Mutex
	var made []*StatusChecked
	opts.New = func(limit int, window time.Duration) (Limiter, error) {
		l, err := newStatus(limit, window)
		if err != nil {
			return nil, err
		}
		s := &StatusChecked{StatusLimiter: l}
		mu.Lock()
		made = append(made, s)
		mu.Unlock()
		return s, nil
	}
	RunOutside(t, opts)
	if len(made) == 0 {
		t.Fatal("the check made no limiter")
	}
	for _, l := range made {
		if p := l.Problem(); p != "" {
			t.Error(p)
		}
	}
}
