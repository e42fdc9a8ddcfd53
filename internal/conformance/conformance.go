// Package conformance is the one test suite every limiter type of this module
// runs: it checks an implementation against the whole shared contract of
// docs/api-contract.md, in the spirit of testing/fstest.TestFS. Each package
// then keeps only the tests of what is its own.
//
// A package's conformance_test.go calls Run (and RunOutside from a test named
// TestOutside...) with a constructor and Options saying what the type
// promises: exact or approximate (and then the stale-instant rule of its
// two-counter formula), its largest limit and window, its error prefix.
// Run checks, each in its own subtest:
//
//   - Constructor: bad limits and windows are rejected with a nil limiter
//     and an error prefixed with the package name that names the argument
//     and the bad value; the extreme good ones are accepted;
//   - Edges: n == 0, n < 0 and n > limit in AllowN, ReadyAt and WaitN, and
//     that none of them changes a later decision;
//   - TimeBackwards: a stale instant never lets more through than the latest
//     admitted one, and never moves state backwards;
//   - ExtremeInstants: at time.Time{}, far in the past and far in the future,
//     AllowN, TokensAt (and RemainingAt) and ReadyAt agree, and ReadyAt
//     answers ok only where AllowN admits at the instant it returns;
//   - TimeBounds: filled at time.Time{}, the limiter is full there; filled
//     at the last instant a time.Time can hold, it says ReadyAt never, is
//     not idle, and WaitN fails at once with ErrNeverReady;
//   - ReadyAt: the answer is not before now, now itself (unchanged) when n
//     fits, admitted at the returned instant and refused one nanosecond
//     before it;
//   - TokensAt: AllowN(now, n) admits iff n <= TokensAt(now);
//   - IdleAt: once IdleAt(x) is true, every call at an instant >= x is
//     decided as by a new limiter;
//   - RefusalWritesNothing: a limiter fed refused calls too decides like a
//     twin fed only the admitted ones;
//   - Wait (unless Options.NoWait): WaitN with a done context, a deadline before ReadyAt
//     (ErrDeadline, without waiting), n out of range (ErrNeverReady), and a
//     wait that ends exactly at ReadyAt, in a testing/synctest bubble;
//   - Oracle (and OracleRules for several rules): every answer on random
//     call sequences equals internal/oracle's; the seed is logged;
//   - Allocs: AllowN allocates nothing on the admit and the deny path
//     (skipped under the race detector).
//
// RunOutside checks safety and maximality from the outside, with many
// goroutines on a shared increasing clock.
//
// Failures are reported through testify's require and assert, always with the
// call, the expected and the actual value.
package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
)

// Limiter is the part of the contract the suite drives.
type Limiter interface {
	AllowN(now time.Time, n int) bool
	TokensAt(now time.Time) int
	ReadyAt(now time.Time, n int) (at time.Time, ok bool)
	WaitN(ctx context.Context, n int) error
}

// Idler is implemented by limiters that report idleness; the IdleAt checks
// run only for them.
type Idler interface {
	IdleAt(now time.Time) bool
}

// Configured is implemented by one-rule limiters that report their
// configuration; the suite checks it against the constructor's arguments.
type Configured interface {
	Limit() int
	Window() time.Duration
}

// Remainer is implemented by several-rule limiters that report each rule's
// room; the oracle replays compare it.
type Remainer interface {
	RemainingAt(now time.Time, dst []int) []int
}

// Rule is one (limit, window) pair.
type Rule struct {
	Limit  int
	Window time.Duration
}

// Kind says which model a limiter promises to follow.
type Kind uint8

const (
	// Exact is the sliding log: at most limit in every window (t-W, t],
	// and no call refused that the log would admit.
	Exact Kind = iota
	// Approx is the two-counter formula, exact in integers.
	Approx
)

// Options says what the limiter under test promises.
type Options struct {
	// Pkg is the prefix of the limiter's errors ("ring").
	Pkg string
	// New returns a new limiter of limit per window. Required.
	New func(limit int, window time.Duration) (Limiter, error)
	// NewRules, if set, returns a new limiter for several rules, all or
	// nothing; OracleRules runs only when it is set.
	NewRules func(rules ...Rule) (Limiter, error)
	// Construct, if set, calls the constructor itself and returns what it
	// returned, so that Constructor can check its errors and that the
	// limiter is nil with them (a typed nil pointer counts as nil).
	Construct func(limit int, window time.Duration) (any, error)
	// Kind is the model the decisions follow.
	Kind Kind
	// Stale is the stale-instant rule of an Approx limiter (ignored for
	// Exact, which decides a stale instant at the latest admitted one).
	Stale oracle.Stale
	// MaxLimit and MaxWindow are the largest limit and window the
	// constructor accepts. Required when Construct is set.
	MaxLimit  int
	MaxWindow time.Duration
	// NoWait, if not empty, says why the suite does not drive the type's
	// WaitN (it has none, or it waits on a clock the suite cannot drive):
	// the WaitN calls of Edges and TimeBounds are left out, Wait is
	// skipped with this reason, and the adapter's WaitN is never called.
	NoWait string
	// Skip names checks (subtest names of Run) that are known to fail,
	// each with the reason and the issue that tracks it. They are skipped
	// with that reason, never silently.
	Skip map[string]string
}

// Adapt turns a constructor of a concrete limiter type into the shape of
// Options.New, returning a nil Limiter (not a typed nil) with an error.
func Adapt[L Limiter](newLimiter func(limit int, window time.Duration) (L, error)) func(limit int, window time.Duration) (Limiter, error) {
	return func(limit int, window time.Duration) (Limiter, error) {
		l, err := newLimiter(limit, window)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

// check is one named part of the contract.
type check struct {
	name string
	run  func(s *suite, t *testing.T)
	// bounded: the check makes a few calls, none of which waits in real
	// time (Wait's waits are on a synctest bubble's fake clock), so it
	// runs under the spin watchdog.
	bounded bool
}

// spinBudget is how long a bounded check may run. They take milliseconds;
// the budget is above TimeBounds' 10 s WaitN deadline. A limiter whose call
// spins there (at instants past its range that it fails to clamp, say) would
// otherwise hang its package until the test timeout, minutes later, naming
// no cause: the watchdog ends the test binary with a panic that names the
// check instead.
const spinBudget = 20 * time.Second

// Watchdog panics, naming what, unless the returned stop is called within d:
// a test whose calls could spin defers its stop, so that a spin ends the
// test binary at once with a message instead of at the package timeout.
func Watchdog(what string, d time.Duration) (stop func()) {
	tm := time.AfterFunc(d, func() {
		panic(fmt.Sprintf("conformance: %s still running after %v: a call spins "+
			"(an instant outside the limiter's range not clamped, or a state it cannot leave)", what, d))
	})
	return func() { tm.Stop() }
}

// suite carries the options through the checks.
type suite struct {
	Options
}

// Run checks the limiter against the whole contract, one subtest per part.
func Run(t *testing.T, opts Options) {
	t.Helper()
	if opts.New == nil {
		t.Fatal("conformance: Options.New is required")
	}
	s := &suite{Options: opts}
	checks := []check{
		{"Constructor", (*suite).constructor, true},
		{"Edges", (*suite).edges, true},
		{"TimeBackwards", (*suite).timeBackwards, true},
		{"ExtremeInstants", (*suite).extremeInstants, true},
		{"TimeBounds", (*suite).timeBounds, true},
		{"ReadyAt", (*suite).readyAt, true},
		{"CallerClock", (*suite).callerClock, false},
		{"TokensAt", (*suite).tokensAt, true},
		{"IdleAt", (*suite).idleAt, true},
		{"RefusalWritesNothing", (*suite).refusalWritesNothing, false},
		{"Wait", (*suite).wait, true},
		{"Oracle", (*suite).oracleOneRule, false},
		{"OracleRules", (*suite).oracleRules, false},
		{"Allocs", (*suite).allocs, false},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if reason, ok := opts.Skip[c.name]; ok {
				t.Skip(reason)
			}
			if c.bounded {
				defer Watchdog(opts.Pkg+" "+t.Name(), spinBudget)()
			}
			c.run(s, t)
		})
	}
}

// newLimiter returns a new one-rule limiter or stops the test.
func (s *suite) newLimiter(t testing.TB, limit int, window time.Duration) Limiter {
	t.Helper()
	l, err := s.New(limit, window)
	if err != nil || l == nil {
		t.Fatalf("New(%d, %v) = %v, %v; want a limiter", limit, window, l, err)
	}
	return l
}

// newModel returns the oracle model for the rules.
func (s *suite) newModel(rules ...Rule) oracle.Model {
	rs := make([]oracle.Rule, len(rules))
	for i, r := range rules {
		rs[i] = oracle.R(r.Limit, r.Window)
	}
	if s.Kind == Exact {
		return oracle.NewLog(rs...)
	}
	return oracle.NewTwoCounter(s.Stale, oracle.AnchorIdle, rs...)
}

// at formats an instant as an offset from t0 for failure messages.
func at(t0, x time.Time) string {
	if x.IsZero() {
		return "time.Time{}"
	}
	d := x.Sub(t0)
	if d == time.Duration(1<<63-1) || d == time.Duration(-1<<63) {
		return x.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("t0%+dns", int64(d))
}
