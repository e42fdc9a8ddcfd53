package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/multi"
	"github.com/slidelimit/slidelimit/ring"
)

// One limit per client address: at most 2 requests per hour each. The
// third request gets 429 with Retry-After and the RateLimit fields.
func Example() {
	perClient, err := keyed.New[string](func() (*ring.Limiter, error) {
		return ring.New(2, time.Hour)
	})
	if err != nil {
		panic(err)
	}
	m, err := httplimit.New(httplimit.Keyed(perClient, httplimit.Rule{Limit: 2, Window: time.Hour}))
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	mux := http.NewServeMux()
	mux.Handle("GET /hello", m.Handler(hello))

	for range 3 {
		r := httptest.NewRequest("GET", "/hello", nil)
		r.RemoteAddr = "192.0.2.1:51234"
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Printf("%d RateLimit: %s Retry-After: %q\n", w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"))
	}
	fmt.Println(w0(mux, "198.51.100.9:40000").Code, "for another client")
	// Output:
	// 200 RateLimit: "2-per-1h";r=1;t=3600 Retry-After: ""
	// 200 RateLimit: "2-per-1h";r=0;t=3600 Retry-After: ""
	// 429 RateLimit: "2-per-1h";r=0;t=3600 Retry-After: "3600"
	// 200 for another client
}

func w0(h http.Handler, remote string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/hello", nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// A limit per client and a global one, in one decision: a request refused by
// the global limit consumes nothing from the client's own quota.
func ExampleAll() {
	perClient, err := keyed.New[string](func() (*ring.Limiter, error) {
		return ring.New(10, time.Minute)
	})
	if err != nil {
		panic(err)
	}
	global, err := multi.New(multi.Rule{Limit: 3, Window: time.Minute}, multi.Rule{Limit: 1000, Window: time.Hour})
	if err != nil {
		panic(err)
	}
	l, err := httplimit.All(
		httplimit.Keyed(perClient, httplimit.Rule{Limit: 10, Window: time.Minute}),
		httplimit.Multi(global),
	)
	if err != nil {
		panic(err)
	}
	m, err := httplimit.New(l, httplimit.PolicyNames("client", "global", "global-hourly"))
	if err != nil {
		panic(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, client := range []string{"192.0.2.1:1", "192.0.2.2:1", "192.0.2.3:1", "192.0.2.4:1"} {
		w := w0(h, client)
		fmt.Println(client, w.Code)
	}
	fmt.Println(w0(h, "192.0.2.4:1").Header().Get("RateLimit"))
	fmt.Println(perClient.TokensAt("192.0.2.4", time.Now()), "left for 192.0.2.4")
	// Output:
	// 192.0.2.1:1 200
	// 192.0.2.2:1 200
	// 192.0.2.3:1 200
	// 192.0.2.4:1 429
	// "client";r=10;t=0, "global";r=0;t=60, "global-hourly";r=997;t=3600
	// 10 left for 192.0.2.4
}

// Behind a load balancer at 10.0.0.0/8 that appends the peer it saw to
// X-Forwarded-For, the client is the hop before it. Whatever a client writes
// in the header itself is never read.
func ExampleIPKey() {
	lb, err := httplimit.NewProxyResolver(httplimit.XForwardedFor, netip.MustParsePrefix("10.0.0.0/8"))
	if err != nil {
		panic(err)
	}
	key, err := httplimit.IPKey(httplimit.DefaultIPv6Prefix, lb)
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.1.2.3:4711"                          // the load balancer
	r.Header.Set("X-Forwarded-For", "6.6.6.6, 203.0.113.7") // a spoofed entry, then the real client
	fmt.Println(key(r))

	r.RemoteAddr = "198.51.100.4:5000" // a client reaching the server directly
	fmt.Println(key(r))

	r.RemoteAddr = "10.1.2.3:4711"
	r.Header.Set("X-Forwarded-For", "[2001:db8:aa:bb:1:2:3:4]:443")
	fmt.Println(key(r))
	// Output:
	// 203.0.113.7 <nil>
	// 198.51.100.4 <nil>
	// 2001:db8:aa:bb::/64 <nil>
}

// A cost per request: uploads count by size, in KiB, against 1 MiB per
// minute. An upload that can never fit is told so, without Retry-After.
func ExampleCost() {
	l, err := ring.New(1024, time.Minute)
	if err != nil {
		panic(err)
	}
	m, err := httplimit.New(httplimit.Ring(l), httplimit.SendFields(httplimit.FieldsOff),
		httplimit.Cost(func(r *http.Request) int {
			return int((r.ContentLength + 1023) / 1024)
		}))
	if err != nil {
		panic(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, size := range []int64{600 << 10, 600 << 10, 2 << 20} {
		r := httptest.NewRequest("POST", "/upload", nil)
		r.ContentLength = size
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d KiB: %d %q %q\n", size>>10, w.Code, w.Header().Get("Retry-After"), w.Body.String())
	}
	// Output:
	// 600 KiB: 200 "" ""
	// 600 KiB: 429 "60" "too many requests\n"
	// 2048 KiB: 429 "" "request cost exceeds the rate limit: it can never be admitted\n"
}

// One two-counter window per client address, kept inline in a keyed.Window:
// about 75 bytes per client whatever the limit, for services with many
// clients. The policy is the Window's own.
func ExampleKeyedWindow() {
	perClient, err := keyed.NewWindow[string](100, time.Minute, keyed.MaxKeys(1_000_000))
	if err != nil {
		panic(err)
	}
	m, err := httplimit.New(httplimit.KeyedWindow(perClient))
	if err != nil {
		panic(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	w := w0(h, "192.0.2.1:51234")
	fmt.Println(w.Code, w.Header().Get("RateLimit-Policy"))
	// Output:
	// 200 "100-per-1m";q=100;w=60
}
