package httplimit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/window"
)

// The middleware's own cost per request, without the peers of the bench
// module: one key, a keyed window per key as in the bench module's HTTP
// benchmark, admit path (a limit never reached) and refuse path (a limit
// used up before the loop), with the RateLimit fields on and off. Profile
// one case with
//
//	go test -run '^$' -bench 'Middleware/path=admit/fields=on' -cpuprofile cpu.out ./httplimit
func BenchmarkMiddleware(b *testing.B) {
	for _, path := range []string{"admit", "refuse"} {
		for _, fields := range []struct {
			name string
			f    httplimit.Fields
		}{{"on", httplimit.FieldsAlways}, {"off", httplimit.FieldsOff}} {
			b.Run("path="+path+"/fields="+fields.name, func(b *testing.B) {
				// About 10^8 per second: never reached.
				limit, per := window.MaxLimit, 10*time.Millisecond
				if path == "refuse" {
					limit, per = 1, time.Hour
				}
				k, err := keyed.New[string](func() (*window.Limiter, error) { return window.New(limit, per) })
				if err != nil {
					b.Fatal(err)
				}
				m, err := httplimit.New(httplimit.Keyed(k, httplimit.Rule{Limit: limit, Window: per}), httplimit.SendFields(fields.f))
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
				for b.Loop() {
					clear(w.h)
					w.code = 0
					h.ServeHTTP(w, r)
				}
				if w.code != want {
					b.Fatalf("status %d, want %d", w.code, want)
				}
			})
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
