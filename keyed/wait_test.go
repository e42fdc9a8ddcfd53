package keyed

import (
	"context"
	"errors"
	"testing"
	"time"
)

// scripted is a decider whose answers are given in order.
type scripted struct {
	allow []error // per AllowN: nil refuses with no error
	ready []bool  // per ReadyAt: ok
	calls int
}

func (s *scripted) allowN(_ string, _ time.Time, _ int) (bool, error) {
	err := s.allow[0]
	s.allow = s.allow[1:]
	s.calls++
	return false, err
}

func (s *scripted) ReadyAt(_ string, now time.Time, _ int) (time.Time, bool) {
	ok := s.ready[0]
	s.ready = s.ready[1:]
	return now.Add(time.Hour), ok
}

// TestWaitKeyGoneWhileFull: WaitN refused on a present key, whose key is
// then removed and the store filled before WaitN asks when n fits (ReadyAt:
// no room for the key, so false), decides again and fails with Decide's
// ErrFull, not ErrNeverReady. A key whose limiter says "never" twice in a
// row still ends in ErrNeverReady.
func TestWaitKeyGoneWhileFull(t *testing.T) {
	d := &scripted{allow: []error{nil, ErrFull}, ready: []bool{false}}
	err := waitFor[string](context.Background(), d, "a", 1)
	if !errors.Is(err, ErrFull) || errors.Is(err, ErrNeverReady) {
		t.Errorf("WaitN = %v, want ErrFull", err)
	}
	d = &scripted{allow: []error{nil, nil}, ready: []bool{false, false}}
	err = waitFor[string](context.Background(), d, "a", 1)
	if !errors.Is(err, ErrNeverReady) || d.calls != 2 {
		t.Errorf("WaitN = %v after %d decisions, want ErrNeverReady after 2", err, d.calls)
	}
}
