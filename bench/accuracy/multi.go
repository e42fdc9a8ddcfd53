package accuracy

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/slidelimit/slidelimit/multi"
)

// MultiRules are the rules of the multi-rule replay: 100 per second and 20
// per 100 ms, so that bursts meet the short rule and sustained load the long
// one.
var MultiRules = []multi.Rule{{Limit: 100, Window: time.Second}, {Limit: 20, Window: 100 * time.Millisecond}}

// MultiOracle is the all-or-nothing exact log of several rules: one naive
// Oracle per rule; a call fits iff it fits every rule, and is then recorded
// by every rule.
type MultiOracle []*Oracle

// NewMultiOracle returns the oracle for rules.
func NewMultiOracle(rules []multi.Rule) MultiOracle {
	var m MultiOracle
	for _, r := range rules {
		m = append(m, NewOracle(r.Limit, r.Window))
	}
	return m
}

// Fits reports whether every rule admits n at now.
func (m MultiOracle) Fits(now, n int64) bool {
	for _, o := range m {
		if !o.Fits(now, n) {
			return false
		}
	}
	return true
}

// Record applies one decision to every rule.
func (m MultiOracle) Record(now, n int64, admitted bool) {
	for _, o := range m {
		o.Record(now, n, admitted)
	}
}

// MultiResult is one workload replayed through one multi-rule limiter.
type MultiResult struct {
	Workload       string    `json:"workload"`
	Limiter        string    `json:"limiter"`
	Admitted       int64     `json:"admitted"`
	OracleAdmitted int64     `json:"oracle_admitted"`
	LogOver        int       `json:"log_over"`
	LogUnder       int       `json:"log_under"`
	MaxPerRule     []int64   `json:"max_per_rule"`
	RatioPerRule   []float64 `json:"ratio_per_rule"`
}

// MultiContender is a multi-rule limiter under replay.
type MultiContender struct {
	Name  string
	Exact bool
	New   func() allowNer
}

// MultiContenders returns both flavours of package multi for MultiRules.
func MultiContenders() []MultiContender {
	return []MultiContender{
		{Name: "slidelimit multi (exact)", Exact: true, New: func() allowNer { return must(multi.New(MultiRules...)) }},
		{Name: "slidelimit multi (approx)", New: func() allowNer { return must(multi.NewApprox(MultiRules...)) }},
	}
}

// RunMulti replays w through c, judging each decision against the
// all-or-nothing exact log on c's own history.
func RunMulti(t *testing.T, c MultiContender, w Workload) MultiResult {
	t.Helper()
	var res MultiResult
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		l := c.New()
		oracle, shadow := NewMultiOracle(MultiRules), NewMultiOracle(MultiRules)
		res = MultiResult{Workload: w.Name, Limiter: c.Name}
		var stamps []Stamp
		for _, call := range w.Calls {
			p, n := int64(call.Presented()), int64(call.N)
			ok := l.AllowN(epoch.Add(call.Presented()), call.N)
			if f := oracle.Fits(p, n); f {
				res.OracleAdmitted += n
				oracle.Record(p, n, true)
			} else {
				oracle.Record(p, n, false)
			}
			if f := shadow.Fits(p, n); ok && !f {
				res.LogOver++
			} else if !ok && f {
				res.LogUnder++
			}
			shadow.Record(p, n, ok)
			if ok {
				res.Admitted += n
				stamps = append(stamps, Stamp{At: int64(call.At), Cost: n})
			}
		}
		for _, r := range MultiRules {
			m := MaxInWindow(stamps, int64(r.Window))
			res.MaxPerRule = append(res.MaxPerRule, m)
			res.RatioPerRule = append(res.RatioPerRule, float64(m)/float64(r.Limit))
		}
	})
	return res
}
