package accuracy

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/internal/replay"
	"github.com/slidelimit/slidelimit/multi"
)

// MultiRules are the rules of the multi-rule replay: 100 per second and 20
// per 100 ms, so that bursts meet the short rule and sustained load the long
// one.
var MultiRules = []multi.Rule{{Limit: 100, Window: time.Second}, {Limit: 20, Window: 100 * time.Millisecond}}

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
// all-or-nothing exact log of the rules (oracle.Log) on c's own history.
func RunMulti(t *testing.T, c MultiContender, w Workload) MultiResult {
	t.Helper()
	var res MultiResult
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		l := c.New()
		var rules []oracle.Rule
		for _, r := range MultiRules {
			rules = append(rules, oracle.R(r.Limit, r.Window))
		}
		j := replay.NewJudge(nil, rules...)
		res = MultiResult{Workload: w.Name, Limiter: c.Name}
		for _, call := range w.Calls {
			ok := l.AllowN(epoch.Add(call.Presented()), call.N)
			j.Decided(int64(call.Presented()), call.N, ok, int64(call.At))
		}
		res.Admitted, res.OracleAdmitted = j.Admitted, j.OracleAdmitted
		res.LogOver, res.LogUnder = j.LogOver, j.LogUnder
		stamps := j.Stamps()
		for _, r := range MultiRules {
			m := oracle.MaxInWindow(stamps, int64(r.Window))
			res.MaxPerRule = append(res.MaxPerRule, m)
			res.RatioPerRule = append(res.RatioPerRule, float64(m)/float64(r.Limit))
		}
	})
	return res
}
