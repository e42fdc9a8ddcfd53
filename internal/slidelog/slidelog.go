// Package slidelog is the lock-free exact sliding log behind ring (one rule)
// and multi's exact flavour (several rules). See docs/ring.md.
//
// STUB: the signatures are final; the implementation lands in the next commit.
package slidelog

// Rule is one (limit, window) pair; window is in nanoseconds. Callers validate
// rules (limit >= 1, window >= 1, limit <= MaxLimit, window <= MaxWindow).
type Rule struct {
	Limit  int64
	Window int64
}

// MaxLimit is the largest limit (and ring size) the log supports.
const MaxLimit = 1 << 30

// MaxWindow is the largest window in nanoseconds (about 36 years).
const MaxWindow = 1 << 60

// Log is the shared state. Instants are int64 nanosecond offsets from the
// owner's clock.Base; any int64 is accepted (out-of-range values saturate).
type Log struct{}

// New returns a log for the rules, with a ring sized for the largest limit.
func New(rules []Rule) *Log { panic("todo") }

// AllowN admits n at now iff every rule admits it; all-or-nothing.
func (l *Log) AllowN(now int64, n int64) bool { panic("todo") }

// TokensAt returns the largest n AllowN(now, n) would admit now.
func (l *Log) TokensAt(now int64) int64 { panic("todo") }

// ReadyAt returns the earliest instant >= now at which n would be admitted if
// nothing else is; ok is false if n can never be admitted.
func (l *Log) ReadyAt(now int64, n int64) (at int64, ok bool) { panic("todo") }

// IdleAt reports whether the log decides, for every instant >= now, exactly
// as a new log with the same rules.
func (l *Log) IdleAt(now int64) bool { panic("todo") }
