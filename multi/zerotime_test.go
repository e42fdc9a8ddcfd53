package multi_test

import (
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/multi"
)

// TestApproxZeroTime: the zero time.Time, about
// 2000 years before NewApprox, used to saturate to the value that meant
// "nothing admitted yet", so every call there was admitted (10 of 10 with
// limit 2). Every instant gets a decision now.
func TestApproxZeroTime(t *testing.T) {
	l, err := multi.NewApprox(multi.Rule{Limit: 2, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for range 10 {
		if l.AllowN(time.Time{}, 1) {
			admitted++
		}
	}
	if admitted != 2 {
		t.Errorf("%d of 10 admitted at time.Time{} with limit 2", admitted)
	}
	if got := l.TokensAt(time.Time{}); got != 0 {
		t.Errorf("TokensAt(time.Time{}) = %d, want 0", got)
	}
	if l.IdleAt(time.Time{}) {
		t.Error("IdleAt(time.Time{}) = true right after two admissions there")
	}
}
