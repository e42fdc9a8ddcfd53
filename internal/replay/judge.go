package replay

import "github.com/slidelimit/slidelimit/internal/oracle"

// Score is what a Judge counts over one replay. Instants are offsets from
// the replay's epoch.
type Score struct {
	// Admitted is the admitted cost; OracleAdmitted what the exact sliding
	// log admits deciding on its own at the same presented instants.
	Admitted       int64
	OracleAdmitted int64
	// LogOver counts admissions the exact sliding log would refuse given
	// what this limiter had admitted before (the log shadows the limiter's
	// own history), LogUnder refusals it would admit. For an exact limiter
	// both are 0.
	LogOver  int
	LogUnder int
	// With a two-counter model, FormulaOver counts admissions the model
	// refuses on the limiter's own history, FormulaUnder refusals it admits.
	FormulaOver  int
	FormulaUnder int
}

// Judge scores a limiter's decisions one by one, in the order they were
// made, against the exact sliding log of the rules (deciding on its own, and
// shadowing the limiter's history) and, if given, a two-counter model.
type Judge struct {
	Score
	exact, shadow *oracle.Log
	model         oracle.Model
	stamps        []oracle.Stamp
}

// NewJudge returns a Judge for rules; model may be nil.
func NewJudge(model oracle.Model, rules ...oracle.Rule) *Judge {
	return &Judge{exact: oracle.NewLog(rules...), shadow: oracle.NewLog(rules...), model: model}
}

// Decided records one decision: the limiter was presented instant pres and
// cost n, answered ok, and an admitted event happened at instant at.
func (j *Judge) Decided(pres int64, n int, ok bool, at int64) {
	if j.exact.AllowN(pres, n) {
		j.OracleAdmitted += int64(n)
	}
	// The shadows judge the decision on the limiter's own history, then
	// record it.
	if f := j.shadow.Fits(pres, n); ok && !f {
		j.LogOver++
	} else if !ok && f {
		j.LogUnder++
	}
	j.shadow.Record(pres, n, ok)
	if j.model != nil {
		if f := j.model.Fits(pres, n); ok && !f {
			j.FormulaOver++
		} else if !ok && f {
			j.FormulaUnder++
		}
		j.model.Record(pres, n, ok)
	}
	if ok {
		j.Admitted += int64(n)
		j.stamps = append(j.stamps, oracle.Stamp{At: at, Cost: int64(n)})
	}
}

// Stamps returns the admitted events, in the order decided.
func (j *Judge) Stamps() []oracle.Stamp { return j.stamps }
