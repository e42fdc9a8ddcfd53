package accuracy

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/slidelimit/slidelimit/internal/oracle"
	"github.com/slidelimit/slidelimit/internal/replay"
)

// Result is one workload replayed through one contender.
type Result struct {
	Workload string `json:"workload"`
	Limiter  string `json:"limiter"`
	Calls    int    `json:"calls"`
	// Admitted is the admitted cost; OracleAdmitted what the exact sliding
	// log admits on the same presented instants.
	Admitted       int64 `json:"admitted"`
	OracleAdmitted int64 `json:"oracle_admitted"`
	// MaxInWindow is the largest admitted cost in any window (t-W, t] over
	// every alignment, on the instants the events happen; Ratio is it over
	// the limit.
	MaxInWindow int64   `json:"max_in_window"`
	Ratio       float64 `json:"ratio"`
	// LogOver counts admissions the exact sliding log would refuse given
	// what this limiter had admitted before (the log shadows the limiter's
	// own history), LogUnder refusals it would admit. For an exact limiter
	// both are 0.
	LogOver  int `json:"log_over"`
	LogUnder int `json:"log_under"`
	// For a two-counter limiter, FormulaOver counts admissions the exact
	// two-counter formula (in the contender's window layout) refuses,
	// FormulaUnder refusals it admits.
	FormulaOver  int `json:"formula_over"`
	FormulaUnder int `json:"formula_under"`
	// MeanDelay is a pacer's mean delay between arrival and release.
	MeanDelay time.Duration  `json:"mean_delay"`
	Series    []oracle.Point `json:"series,omitempty"`
}

// Run replays w through c inside a testing/synctest bubble, so that limiters
// that read time.Now see the bubble's fake clock and every limiter is created
// at the bubble's epoch (2000-01-01 00:00:00 UTC, aligned to the second). The
// oracle and the two-counter model decide the same presented instants,
// independently of the contender (replay.Judge).
func Run(t *testing.T, c Contender, w Workload, series bool) Result {
	t.Helper()
	var res Result
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		d, stop := c.New(epoch)
		defer stop()
		rule := oracle.R(Limit, Window)
		j := replay.NewJudge(twoCounter(c.Model, rule), rule)
		res = Result{Workload: w.Name, Limiter: c.Name, Calls: len(w.Calls)}
		var delay time.Duration
		for _, call := range w.Calls {
			real := epoch.Add(call.At)
			ok, at := d.Decide(epoch.Add(call.Presented()), real, call.N)
			j.Decided(int64(call.Presented()), call.N, ok, int64(at.Sub(epoch)))
			if ok {
				delay += at.Sub(real)
			}
		}
		stamps := j.Stamps()
		s := j.Score
		res.Admitted, res.OracleAdmitted = s.Admitted, s.OracleAdmitted
		res.LogOver, res.LogUnder, res.FormulaOver, res.FormulaUnder = s.LogOver, s.LogUnder, s.FormulaOver, s.FormulaUnder
		res.MaxInWindow = oracle.MaxInWindow(stamps, int64(Window))
		res.Ratio = float64(res.MaxInWindow) / Limit
		if c.Pacer && len(stamps) > 0 {
			res.MeanDelay = delay / time.Duration(len(stamps))
		}
		if series {
			res.Series = oracle.SlidingCount(stamps, int64(Window))
		}
	})
	return res
}
