package multi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/multi"
)

// TestIssue10ApproxZeroTime (issue 10, item 2): the zero time.Time, about
// 2000 years before NewApprox, used to saturate to the value that meant
// "nothing admitted yet", so every call there was admitted (10 of 10 with
// limit 2). Every instant gets a decision now.
func TestIssue10ApproxZeroTime(t *testing.T) {
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

// TestIssue10ApproxFarInstants (issue 10, item 3): beyond the clamping range
// (about 63 years after NewApprox; the year 9999 is far beyond) time stops
// for the limiter. ReadyAt used to answer an instant before now there while
// AllowN refused, and Wait spun; now AllowN, TokensAt and ReadyAt agree at
// every instant, and ReadyAt says never when nothing can fit before time
// stops.
func TestIssue10ApproxFarInstants(t *testing.T) {
	year9999 := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	for _, far := range []time.Time{time.Now().AddDate(64, 0, 0), year9999, time.Unix(1<<62, 0)} {
		l, err := multi.NewApprox(multi.Rule{Limit: 3, Window: time.Hour}, multi.Rule{Limit: 5, Window: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if !l.AllowN(far, 3) {
			t.Fatalf("AllowN(%v, 3) refused on a new limiter", far)
		}
		for _, now := range []time.Time{time.Time{}, time.Now(), far, far.Add(time.Hour), far.AddDate(1, 0, 0), year9999} {
			for n := 1; n <= 3; n++ {
				tokens := l.TokensAt(now)
				at, ok := l.ReadyAt(now, n)
				switch {
				case ok && at.Equal(now) && tokens < n:
					t.Errorf("far %v: ReadyAt(%v, %d) = now, but TokensAt = %d", far, now, n, tokens)
				case ok && at.Before(now):
					t.Errorf("far %v: ReadyAt(%v, %d) = %v, before now", far, now, n, at)
				case ok && l.TokensAt(at) < n:
					t.Errorf("far %v: ReadyAt(%v, %d) = %v, where TokensAt = %d", far, now, n, at, l.TokensAt(at))
				case !ok && tokens >= n:
					t.Errorf("far %v: ReadyAt(%v, %d) never, but TokensAt = %d", far, now, n, tokens)
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = l.WaitN(ctx, 1)
		cancel()
		if !errors.Is(err, multi.ErrNeverReady) {
			t.Errorf("far %v: WaitN = %v, want ErrNeverReady at once", far, err)
		}
	}
}
