package window

import (
	"testing"
	"time"
)

// The instants a limiter tells apart, as offsets from the instant New was
// called: [-2^61 + 2^58, 2^61 - 2^58 - 1] ns (about ±63.9 years, the range
// the repository's documentation of window gives). Written out here, not
// taken from the package, so that a change of the bounds fails this test.
const (
	firstOff = -1<<61 + 1<<58
	lastOff  = 1<<61 - 1<<58 - 1
)

// newAround returns a limiter and an instant taken just before New, so that
// New's own instant lies in [before, before+slack].
func newAround(t *testing.T, limit int, w time.Duration) (l *Limiter, before time.Time) {
	t.Helper()
	before = time.Now().Round(0)
	l, err := New(limit, w)
	if err != nil {
		t.Fatal(err)
	}
	return l, before
}

// TestRangeBounds: instants past either end of the documented range are
// decided at that end. A minute past the last instant, time has stopped: a
// call an hour later is the same instant as far as the limiter knows, so a
// full window of a second stays full. A minute before the first instant, the
// first admission anchors the window at the first instant, so a call half a
// window after the first instant is still in that window. Just inside the
// range, instants are told apart.
func TestRangeBounds(t *testing.T) {
	const W = time.Second
	const slack = time.Minute // far above the time between before and New
	l, before := newAround(t, 1, W)
	late := before.Add(lastOff).Add(slack)
	if !l.AllowN(late, 1) {
		t.Fatal("first call past the last instant refused")
	}
	if l.AllowN(late.Add(time.Hour), 1) {
		t.Errorf("an hour later than a call past the last instant admitted: time must have stopped at the last instant")
	}
	if at, ok := l.ReadyAt(late.Add(time.Hour), 1); ok {
		t.Errorf("ReadyAt past the last instant = %v, true; want never", at)
	}

	l, before = newAround(t, 1, W)
	inside := before.Add(lastOff).Add(-2 * slack)
	if !l.AllowN(inside, 1) || !l.AllowN(inside.Add(2*W), 1) {
		t.Errorf("two windows apart just inside the last instant: not both admitted")
	}

	l, before = newAround(t, 1, W)
	// The first instant is base+firstOff, a few microseconds after first.
	first := before.Add(firstOff)
	if !l.AllowN(first.Add(-slack), 1) {
		t.Fatal("first call before the first instant refused")
	}
	if l.AllowN(first.Add(W/2), 1) {
		t.Errorf("half a window after the first instant admitted: the window of a call before it must start at the first instant")
	}
	if !l.AllowN(first.Add(3*W), 1) {
		t.Errorf("three windows after the first instant refused")
	}
}

// TestNewIdleEverywhere: a new limiter is idle at every instant, the
// earliest ones included, whatever its window; its first admission at an
// instant before the range anchors a window at the first instant, which the
// whole limit fits again two windows later.
func TestNewIdleEverywhere(t *testing.T) {
	for _, w := range []time.Duration{time.Second, MaxWindow / 2, MaxWindow/2 + 1, MaxWindow / 4 * 3, MaxWindow} {
		l, before := newAround(t, 3, w)
		for _, now := range []time.Time{{}, before.Add(firstOff - time.Hour), before, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)} {
			if !l.IdleAt(now) {
				t.Errorf("window %v: new limiter not idle at %v", w, now)
			}
		}
		if !l.AllowN(time.Time{}, 3) {
			t.Fatalf("window %v: AllowN(time.Time{}, 3) on a new limiter refused", w)
		}
		at, ok := l.ReadyAt(time.Time{}, 3)
		want := before.Add(firstOff).Add(2 * w)
		if !ok || at.Before(want) || at.After(want.Add(time.Minute)) {
			t.Errorf("window %v: ReadyAt(time.Time{}, 3) after filling = %v, %v; want within a minute after %v", w, at, ok, want)
		}
	}
}
