package redis_test

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// A limit shared by every instance of a service: at most 2 calls per second
// and 3 per minute for each key, kept in Redis as an exact sliding log and
// checked all or nothing. The instants are given so that the output is the
// same on every run; a service passes the zero time.Time (or calls Allow) to
// decide on the Redis server's clock.
func ExampleNewLog() {
	ctx := context.Background()
	gc := goredis.NewClient(&goredis.Options{Addr: exampleAddr(), ContextTimeoutEnabled: true})
	defer gc.Close()
	c, err := redis.NewGoRedis(gc)
	if err != nil {
		log.Fatal(err)
	}
	lim, err := redis.NewLog(c, redis.Options{Timeout: time.Second, OnError: redis.FailClosed},
		redis.Rule{Limit: 2, Window: time.Second}, redis.Rule{Limit: 3, Window: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, dt := range []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, time.Second, 1500 * time.Millisecond} {
		d, err := lim.AllowN(ctx, "tenant-42", t0.Add(dt), 1)
		if err != nil {
			log.Fatal(err) // Redis failed: FailClosed refuses and returns the error
		}
		if d.Allowed {
			fmt.Printf("t0+%-6v admitted, remaining %v\n", dt, d.Remaining)
		} else {
			fmt.Printf("t0+%-6v refused until t0+%v, remaining %v\n", dt, d.ReadyAt.Sub(t0), d.Remaining)
		}
	}
	// Output:
	// t0+0s     admitted, remaining [1 2]
	// t0+100ms  admitted, remaining [0 1]
	// t0+200ms  refused until t0+1s, remaining [0 1]
	// t0+1s     admitted, remaining [0 0]
	// t0+1.5s   refused until t0+1m0s, remaining [1 0]
}

// A cost per call on the two-counter window: at most 10 units per minute,
// the previous minute's count weighted by the part of it still inside the
// sliding window. CheckN asks whether a cost would be admitted and records
// nothing; AllowN records it when admitted.
func ExampleNewWindow() {
	ctx := context.Background()
	gc := goredis.NewClient(&goredis.Options{Addr: exampleAddr(), ContextTimeoutEnabled: true})
	defer gc.Close()
	c, err := redis.NewGoRedis(gc)
	if err != nil {
		log.Fatal(err)
	}
	lim, err := redis.NewWindow(c, redis.Options{Timeout: time.Second}, redis.Rule{Limit: 10, Window: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	show := func(what string, dt time.Duration, d redis.Decision, err error) {
		if err != nil {
			log.Fatal(err)
		}
		if d.Allowed {
			fmt.Printf("%s at t0+%v: admitted, remaining %v\n", what, dt, d.Remaining)
		} else {
			fmt.Printf("%s at t0+%v: refused until t0+%v, remaining %v\n", what, dt, d.ReadyAt.Sub(t0), d.Remaining)
		}
	}
	at := func(dt time.Duration) time.Time { return t0.Add(dt) }

	d, err := lim.AllowN(ctx, "import-job", at(0), 8) // a batch of 8 items
	show("AllowN 8", 0, d, err)
	// Half a minute into the next minute, the 8 count for 4.
	dt := 90 * time.Second
	d, err = lim.CheckN(ctx, "import-job", at(dt), 6)
	show("CheckN 6", dt, d, err)
	d, err = lim.AllowN(ctx, "import-job", at(dt), 7)
	show("AllowN 7", dt, d, err)
	d, err = lim.AllowN(ctx, "import-job", at(dt), 6)
	show("AllowN 6", dt, d, err)
	// Output:
	// AllowN 8 at t0+0s: admitted, remaining [2]
	// CheckN 6 at t0+1m30s: admitted, remaining [6]
	// AllowN 7 at t0+1m30s: refused until t0+1m37.5s, remaining [6]
	// AllowN 6 at t0+1m30s: admitted, remaining [0]
}

// The failure policy decides when Redis does not answer: here no server
// listens at the client's address, so every call fails once its timeout
// (Options.Timeout, 100 ms by default) has passed, go-redis dialling again
// until then. FailClosed refuses and returns the error (the HTTP middleware
// answers 503), FailOpen admits, and FallBack decides with an in-process
// limit per key; the last two report the Redis error in Decision.Err.
func ExamplePolicy() {
	ctx := context.Background()
	gc := goredis.NewClient(&goredis.Options{Addr: unreachableAddr(), ContextTimeoutEnabled: true})
	defer gc.Close()
	c, err := redis.NewGoRedis(gc)
	if err != nil {
		log.Fatal(err)
	}
	rule := redis.Rule{Limit: 100, Window: time.Minute}
	policies := []struct {
		name string
		opts redis.Options
	}{
		{"FailClosed", redis.Options{OnError: redis.FailClosed}},
		{"FailOpen", redis.Options{OnError: redis.FailOpen}},
		// Each instance allows 1 call per minute per key while Redis is down.
		{"FallBack", redis.Options{OnError: redis.FallBack, Fallback: []redis.Rule{{Limit: 1, Window: time.Minute}}}},
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range policies {
		lim, err := redis.NewLog(c, p.opts, rule)
		if err != nil {
			log.Fatal(err)
		}
		for i := range 2 {
			d, err := lim.AllowN(ctx, "tenant-42", t0.Add(time.Duration(i)*time.Second), 1)
			fmt.Printf("%-10s call %d: allowed=%-5v error returned=%-5v Decision.Err set=%v\n",
				p.name, i+1, d.Allowed, err != nil, d.Err != nil)
		}
	}
	// Output:
	// FailClosed call 1: allowed=false error returned=true  Decision.Err set=false
	// FailClosed call 2: allowed=false error returned=true  Decision.Err set=false
	// FailOpen   call 1: allowed=true  error returned=false Decision.Err set=true
	// FailOpen   call 2: allowed=true  error returned=false Decision.Err set=true
	// FallBack   call 1: allowed=true  error returned=false Decision.Err set=true
	// FallBack   call 2: allowed=false error returned=false Decision.Err set=true
}

// A Redis limiter behind package httplimit's middleware: at most 2 requests
// per hour per client address, shared by every instance of the service and
// decided on the Redis server's clock. The third request gets 429 with
// Retry-After and the RateLimit fields.
func ExampleNewHTTP() {
	gc := goredis.NewClient(&goredis.Options{Addr: exampleAddr(), ContextTimeoutEnabled: true})
	defer gc.Close()
	c, err := redis.NewGoRedis(gc)
	if err != nil {
		log.Fatal(err)
	}
	lim, err := redis.NewLog(c, redis.Options{Timeout: time.Second}, redis.Rule{Limit: 2, Window: time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	hl, err := redis.NewHTTP(lim, true)
	if err != nil {
		log.Fatal(err)
	}
	m, err := httplimit.New(hl)
	if err != nil {
		log.Fatal(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	h := m.Handler(hello)

	for range 3 {
		r := httptest.NewRequest("GET", "/hello", nil)
		r.RemoteAddr = "192.0.2.1:51234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d RateLimit: %s Retry-After: %q\n", w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"))
	}
	// Output:
	// 200 RateLimit: "2-per-1h";r=1;t=3600 Retry-After: ""
	// 200 RateLimit: "2-per-1h";r=0;t=3600 Retry-After: ""
	// 429 RateLimit: "2-per-1h";r=0;t=3600 Retry-After: "3600"
}

// exampleServer is the redis-server the examples run against: started by the
// first call of exampleAddr, stopped by runTests once the tests and examples
// have run.
var exampleServer struct {
	once sync.Once
	s    *redistest.Server
	err  error
}

// exampleAddr returns the address of the examples' redis-server, emptied
// (FLUSHALL) so that every example starts from no state and the examples can
// run again (-count). An Example function has no *testing.T to start a server
// with, so the server is started here, once for the package, and any failure
// panics: the example fails.
func exampleAddr() string {
	e := &exampleServer
	e.once.Do(func() { e.s, e.err = redistest.StartOutsideTest() })
	if e.err != nil {
		panic(fmt.Sprintf("redis: the examples' redis-server: %v", e.err))
	}
	if _, err := redistest.Do(e.s.Addr(), "FLUSHALL"); err != nil {
		panic(fmt.Sprintf("redis: FLUSHALL on the examples' redis-server %s: %v", e.s.Addr(), err))
	}
	return e.s.Addr()
}

// unreachableAddr returns a loopback address where no server listens: a port
// that was free a moment ago, so that connections to it are refused.
func unreachableAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runTests runs the tests and examples of m and returns its exit code,
// stopping the examples' redis-server, if one was started, afterwards. As
// with the tests, which redistest skips when redis-server is not installed,
// the examples that need a server are then skipped (added to -test.skip),
// except when the environment variable CI is "true": then they fail.
func runTests(m *testing.M) int {
	flag.Parse()
	if _, err := exec.LookPath("redis-server"); err != nil && os.Getenv("CI") != "true" {
		skip := flag.Lookup("test.skip").Value
		pattern := "^Example(NewLog|NewWindow|NewHTTP)$"
		if old := skip.String(); old != "" {
			pattern = old + "|" + pattern // a top-level | is an alternation of whole -skip patterns
		}
		if err := skip.Set(pattern); err != nil {
			fmt.Fprintln(os.Stderr, "redis: skipping the examples:", err)
			return 2
		}
		fmt.Fprintln(os.Stderr, "redis: redis-server not found in PATH: skipping the examples that need it")
	}
	code := m.Run()
	if e := &exampleServer; e.s != nil {
		e.s.Close()
	}
	return code
}
