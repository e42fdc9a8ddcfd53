package accuracy

import (
	"testing"
	"testing/synctest"
	"time"
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
	// OracleDiffs counts the calls decided differently from the oracle.
	OracleDiffs int `json:"oracle_diffs"`
	// FormulaOver counts admissions the exact two-counter formula refuses,
	// FormulaUnder refusals it admits.
	FormulaOver  int `json:"formula_over"`
	FormulaUnder int `json:"formula_under"`
	// MeanDelay is a pacer's mean delay between arrival and release.
	MeanDelay time.Duration `json:"mean_delay"`
	Series    []Point       `json:"series,omitempty"`
}

// Run replays w through c inside a testing/synctest bubble, so that limiters
// that read time.Now see the bubble's fake clock and every limiter is created
// at the bubble's epoch (2000-01-01 00:00:00 UTC, aligned to the second). The
// oracle and the two-counter model decide the same presented instants,
// independently of the contender.
func Run(t *testing.T, c Contender, w Workload, series bool) Result {
	t.Helper()
	var res Result
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		d, stop := c.New(epoch)
		defer stop()
		oracle := NewOracle(Limit, Window)
		model := NewTwoCounter(Limit, Window)
		res = Result{Workload: w.Name, Limiter: c.Name, Calls: len(w.Calls)}
		var stamps []Stamp
		var delay time.Duration
		for _, call := range w.Calls {
			real := epoch.Add(call.At)
			ok, at := d.Decide(epoch.Add(call.Presented()), real, call.N)
			pres := int64(call.Presented())
			// The oracle follows its own decisions, not the contender's:
			// after a first difference the two states part ways.
			od := oracle.AllowN(pres, int64(call.N))
			if od {
				res.OracleAdmitted += int64(call.N)
			}
			if ok != od {
				res.OracleDiffs++
			}
			if f := model.AllowN(pres, int64(call.N)); ok && !f {
				res.FormulaOver++
			} else if !ok && f {
				res.FormulaUnder++
			}
			if ok {
				res.Admitted += int64(call.N)
				stamps = append(stamps, Stamp{At: int64(at.Sub(epoch)), Cost: int64(call.N)})
				delay += at.Sub(real)
			}
		}
		res.MaxInWindow = MaxInWindow(stamps, int64(Window))
		res.Ratio = float64(res.MaxInWindow) / Limit
		if c.Pacer && len(stamps) > 0 {
			res.MeanDelay = delay / time.Duration(len(stamps))
		}
		if series {
			res.Series = SlidingCount(stamps, int64(Window))
		}
	})
	return res
}
