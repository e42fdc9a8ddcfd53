package httplimit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/ring"
	"github.com/slidelimit/slidelimit/window"
)

// The middleware's own cost per request, without the peers of the bench
// module: one key, admit path (a limit never reached) and refuse path (a
// limit used up before the loop), with the RateLimit fields on and off, over
// the two stores of one window per key: keyed.Window, as in the bench
// module's HTTP benchmark (httplimit.KeyedWindow), and a keyed.Limiter of
// window.Limiters (httplimit.Keyed). Profile one case with
//
//	go test -run '^$' -bench 'Middleware/store=keyed.Window/path=admit/fields=on' -cpuprofile cpu.out ./httplimit
func BenchmarkMiddleware(b *testing.B) {
	stores := []struct {
		name string
		new  func(limit int, per time.Duration) (httplimit.Limiter, error)
	}{
		{"keyed.Window", func(limit int, per time.Duration) (httplimit.Limiter, error) {
			w, err := keyed.NewWindow[string](limit, per)
			return httplimit.KeyedWindow(w), err
		}},
		{"keyed.Limiter", func(limit int, per time.Duration) (httplimit.Limiter, error) {
			k, err := keyed.New[string](func() (*window.Limiter, error) { return window.New(limit, per) })
			return httplimit.Keyed(k, httplimit.Rule{Limit: limit, Window: per}), err
		}},
	}
	for _, st := range stores {
		for _, path := range []string{"admit", "refuse"} {
			for _, fields := range []struct {
				name string
				f    httplimit.Fields
			}{{"on", httplimit.FieldsAlways}, {"off", httplimit.FieldsOff}} {
				b.Run("store="+st.name+"/path="+path+"/fields="+fields.name, func(b *testing.B) {
					// About 10^8 per second: never reached.
					limit, per := window.MaxLimit, 10*time.Millisecond
					if path == "refuse" {
						limit, per = 1, time.Hour
					}
					l, err := st.new(limit, per)
					if err != nil {
						b.Fatal(err)
					}
					m, err := httplimit.New(l, httplimit.SendFields(fields.f))
					if err != nil {
						b.Fatal(err)
					}
					h := m.Handler(ok200)
					r := request("192.0.2.1:1234")
					w := &reusable{h: http.Header{}}
					want := http.StatusOK
					if path == "refuse" {
						h.ServeHTTP(w, r) // uses the limit
						want = http.StatusTooManyRequests
					}
					b.ReportAllocs()
					code := 0
					for b.Loop() {
						code = w.serve(h, r)
					}
					if code != want {
						b.Fatalf("status %d, want %d", code, want)
					}
				})
			}
		}
	}
}

func BenchmarkRemoteAddr(b *testing.B) {
	for _, addr := range []string{"192.0.2.1:1234", "[2001:db8::1]:1234"} {
		b.Run(addr, func(b *testing.B) {
			r := request(addr)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := httplimit.RemoteAddr(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSharedWindow: one window.Limiter shared by every request, served
// from every P at once (b.RunParallel), RateLimit fields on: "status" is
// Window, which decides and reads the quota from one snapshot
// (DecideStatus); "queries" is the same adapter deciding with AllowN and
// reading the quota with TokensAt and ReadyAt, each a read of the shared
// state that other cores keep writing. Run with -cpu 1,2 and compare the
// two in the same process.
func BenchmarkSharedWindow(b *testing.B) {
	benchShared(b, func(limit int, per time.Duration) (*window.Limiter, error) { return window.New(limit, per) },
		window.MaxLimit, httplimit.Window)
}

// BenchmarkSharedRing is BenchmarkSharedWindow for Ring, which decides with
// ring.Limiter.DecideStatus (the quota at the log's state right after the
// decision).
func BenchmarkSharedRing(b *testing.B) {
	benchShared(b, func(limit int, per time.Duration) (*ring.Limiter, error) { return ring.New(limit, per) },
		1<<20, httplimit.Ring)
}

// sharedLimiter is what benchShared needs of ring.Limiter and window.Limiter.
type sharedLimiter interface {
	Allow() bool
	AllowN(now time.Time, n int) bool
	TokensAt(now time.Time) int
	ReadyAt(now time.Time, n int) (time.Time, bool)
	Limit() int
	Window() time.Duration
}

// benchShared runs the shared-limiter benchmark: on the admit path a limiter
// admitting admitLimit per 10 ms (never reached), on the refuse path one of
// limit 1 per hour, used up; each adapted by adapt ("status") and through
// ByQueries ("queries").
func benchShared[L sharedLimiter](b *testing.B, newL func(int, time.Duration) (L, error), admitLimit int, adapt func(L) httplimit.Limiter) {
	for _, path := range []string{"admit", "refuse"} {
		for _, decide := range []struct {
			name  string
			adapt func(L) httplimit.Limiter
		}{{"status", adapt}, {"queries", func(l L) httplimit.Limiter { return httplimit.ByQueries(l, true) }}} {
			b.Run("path="+path+"/decide="+decide.name, func(b *testing.B) {
				limit, per := admitLimit, 10*time.Millisecond
				want := http.StatusOK
				if path == "refuse" {
					limit, per, want = 1, time.Hour, http.StatusTooManyRequests
				}
				l, err := newL(limit, per)
				if err != nil {
					b.Fatal(err)
				}
				if path == "refuse" {
					l.Allow() // uses the limit
				}
				m, err := httplimit.New(decide.adapt(l))
				if err != nil {
					b.Fatal(err)
				}
				h := m.Handler(ok200)
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					r := request("192.0.2.1:1234")
					w := &reusable{h: http.Header{}}
					for pb.Next() {
						if code := w.serve(h, r); code != want {
							b.Errorf("status %d, want %d", code, want)
							return
						}
					}
				})
			})
		}
	}
}
