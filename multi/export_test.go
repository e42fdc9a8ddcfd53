package multi

import "time"

// BaseOf returns the instant a limiter measures time from, so that tests can
// present instants at exact offsets from it.
func BaseOf(l interface{ baseTime() time.Time }) time.Time { return l.baseTime() }

func (l *Limiter) baseTime() time.Time { return l.base.Time(0) }
func (a *Approx) baseTime() time.Time  { return a.base.Time(0) }

// StateOf returns every word of an Approx's current snapshot (head, then the
// slot's tag and rule words; the owned bit is left out,
// since it is scratch bookkeeping) for tests that check a refused call
// changed nothing.
func StateOf(a *Approx) []uint64 {
	h, s := a.load()
	out := []uint64{h}
	out = append(out, s[stateW].Load()>>1)
	for i := range s[1:] {
		out = append(out, s[1+i].Load())
	}
	return out
}

// Slots returns how many slots the Approx's table holds.
func Slots(a *Approx) int {
	n := 0
	for c := range maxChunks {
		if a.chunks[c].Load() != nil {
			n += 2 << c
		}
	}
	return n
}
