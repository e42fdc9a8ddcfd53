package window

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/internal/benchfloor"
)

// The benchmarks compare, in one run, the lock-free limiter (impl=lockfree), its
// mutex twin (impl=mutex) and the floor: what any limiter on the Allow path
// must pay, one monotonic clock read (time.Since) plus one compare-and-swap
// on a shared atomic word. Run them as in docs/window.md:
//
//	go test -run='^$' -bench=. -benchmem -count=10 -cpu=1,2,8 ./window/
//
// path=admit: limit MaxLimit per millisecond, far more than the callers can
// reach, so every call is admitted (checked: the benchmark fails on a
// refusal). path=deny: limit 1 per hour, already used, so every call is
// refused (checked before the loop).
// mode=serial runs one goroutine (b.Loop); mode=parallel runs GOMAXPROCS
// goroutines on the one limiter (b.RunParallel); its ns/op is wall time per
// call across all of them.

// allower is what the benchmarks call.
type allower interface{ Allow() bool }

func benchLimiter(b *testing.B, im impl, path string) allower {
	b.Helper()
	switch path {
	case "admit":
		l, err := im.new(MaxLimit, time.Millisecond)
		if err != nil {
			b.Fatal(err)
		}
		return l
	default:
		l, err := im.new(1, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		if !l.Allow() || l.Allow() {
			b.Fatal("deny fixture: want the first call admitted and the second refused")
		}
		return l
	}
}

func BenchmarkWindow(b *testing.B) {
	for _, path := range []string{"admit", "deny"} {
		for _, im := range impls {
			b.Run("impl="+im.name+"/path="+path+"/mode=serial", func(b *testing.B) {
				l := benchLimiter(b, im, path)
				want := path == "admit"
				wrong := 0
				b.ReportAllocs()
				// Call the concrete type, as users do: the floor pays no
				// interface dispatch either.
				switch l := l.(type) {
				case *Limiter:
					for b.Loop() {
						if l.Allow() != want {
							wrong++
						}
					}
				case *mutexLimiter:
					for b.Loop() {
						if l.Allow() != want {
							wrong++
						}
					}
				}
				if wrong > 0 {
					b.Fatalf("%d calls decided against the fixture (want %v)", wrong, want)
				}
			})
			b.Run("impl="+im.name+"/path="+path+"/mode=parallel", func(b *testing.B) {
				l := benchLimiter(b, im, path)
				want := path == "admit"
				var wrong atomic.Int64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					n := 0
					switch l := l.(type) {
					case *Limiter:
						for pb.Next() {
							if l.Allow() != want {
								n++
							}
						}
					case *mutexLimiter:
						for pb.Next() {
							if l.Allow() != want {
								n++
							}
						}
					}
					wrong.Add(int64(n))
				})
				if wrong.Load() > 0 {
					b.Fatalf("%d calls decided against the fixture (want %v)", wrong.Load(), want)
				}
			})
		}
	}
	b.Run("impl=floor/path=cas/mode=serial", benchfloor.Serial)
	b.Run("impl=floor/path=cas/mode=parallel", benchfloor.Parallel)
}
