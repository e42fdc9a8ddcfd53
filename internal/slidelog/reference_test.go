package slidelog

import "github.com/slidelimit/slidelimit/internal/slidelog/slidelogtest"

// New returns an initialized log for the rules (the owners embed a Log and
// call Init).
func New(rules []Rule) *Log {
	l := new(Log)
	l.Init(rules)
	return l
}

// NewReference returns the mutex-guarded reference for the rules.
func NewReference(rules []Rule) *slidelogtest.Reference {
	rs := make([]slidelogtest.Rule, len(rules))
	for i, r := range rules {
		rs[i] = slidelogtest.Rule(r)
	}
	return slidelogtest.NewReference(rs)
}
