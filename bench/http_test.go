package bench

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/didip/tollbooth/v7"
	tblimiter "github.com/didip/tollbooth/v7/limiter"
	"github.com/go-chi/httprate"
	sethhttp "github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ulstdlib "github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	ulmemory "github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/slidelimit/slidelimit/bench/stores"
	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/window"
)

// The HTTP benchmarks measure the per-request cost of each middleware alone:
// ServeHTTP on a prepared request and a reused response writer (its header
// map cleared between requests, so every allocation counted is the
// middleware's), around a handler that does nothing. Every middleware keys by
// the client's IP address from RemoteAddr, trusting no header, and sets the
// response fields it sets by default.
//
// Two paths: admit (a limit no request reaches: every measured request gets
// 200) and refuse (one request per hour per key, used up in setup: every
// measured request gets 429). Keys: 1, or 100k addresses drawn in random
// order (1k unless BENCH_FULL is set, to keep the race-detector run short).
// Every measured request carries a RemoteAddr of its own, in cache as a new
// connection's is (see httpAddrs). The expected status is checked on every
// measured request.

func httpKeyCounts() []int {
	if os.Getenv("BENCH_FULL") != "" {
		return []int{1, 100_000}
	}
	return []int{1, 1_000}
}

// httpImpl builds a middleware admitting limit requests per window per IP.
type httpImpl struct {
	name string
	// what it limits and how, for the docs
	algo string
	new  func(path string, keys int, next http.Handler) http.Handler
}

// The admit path's limit, per key: window.MaxLimit requests per
// httpAdmitWindow(keys), never reached.
const httpAdmitLimit = window.MaxLimit

// httpAdmitWindow is the admit path's window for a run over keys keys. With
// one key, 10 ms: about 10^8 requests per second, never reached (one
// goroutine at 10 ns per request would make 10^6 per window; at 100 ms, the
// 10^7 per second it allowed was reached by a request of 100 ns). With many
// keys, an hour, as on the refuse path, so that every key stays counted for
// the whole run in every middleware: a middleware that drops a key's counters
// once its window has passed (httprate clears its maps every window) held,
// with 10 ms windows, only the few thousand keys requested in the last two
// windows, and so was measured at 100k keys on a working set of about a
// tenth of them. An hour's limit is never reached either: a run makes a few
// million requests over 10^5 keys.
func httpAdmitWindow(keys int) time.Duration {
	if keys == 1 {
		return 10 * time.Millisecond
	}
	return time.Hour
}

func ourMiddleware(path string, keys int, fields httplimit.Fields, next http.Handler) http.Handler {
	var l httplimit.Limiter
	// One two-counter window per client (keyed.Window), the store for many
	// clients.
	switch path {
	case "admit":
		l = httplimit.KeyedWindow(mustNew(keyed.NewWindow[string](httpAdmitLimit, httpAdmitWindow(keys))))
	default:
		l = httplimit.KeyedWindow(mustNew(keyed.NewWindow[string](1, time.Hour)))
	}
	return mustNew(httplimit.New(l, httplimit.SendFields(fields))).Handler(next)
}

func httpImpls() []httpImpl {
	pick := func(path string, admit, refuse int) int {
		if path == "admit" {
			return admit
		}
		return refuse
	}
	per := func(path string, keys int) time.Duration {
		if path == "admit" {
			return httpAdmitWindow(keys)
		}
		return time.Hour
	}
	return []httpImpl{
		{
			name: "slidelimit",
			algo: "httplimit over keyed.Window (a two-counter window per IP), RateLimit fields on every response",
			new: func(path string, keys int, next http.Handler) http.Handler {
				return ourMiddleware(path, keys, httplimit.FieldsAlways, next)
			},
		},
		{
			name: "slidelimit-nofields",
			algo: "the same, RateLimit fields off (Retry-After still sent)",
			new: func(path string, keys int, next http.Handler) http.Handler {
				return ourMiddleware(path, keys, httplimit.FieldsOff, next)
			},
		},
		{
			name: "httprate",
			algo: "LimitBy with RemoteAddr's canonical IP: two counters per key, X-RateLimit-* fields",
			new: func(path string, keys int, next http.Handler) http.Handler {
				key := func(r *http.Request) (string, error) {
					ip, _, err := net.SplitHostPort(r.RemoteAddr)
					if err != nil {
						ip = r.RemoteAddr
					}
					return httprate.CanonicalizeIP(ip), nil
				}
				return httprate.LimitBy(pick(path, httpAdmitLimit, 1), per(path, keys), key)(next)
			},
		},
		{
			name: "sethvargo",
			algo: "httplimit.NewMiddleware over memorystore (interval 1 h), IPKeyFunc() (RemoteAddr): token bucket per key",
			new: func(path string, keys int, next http.Handler) http.Handler {
				// Admit: one interval of an hour holding more tokens than any
				// run takes. (memorystore refills max(interval/tokens) tokens
				// per elapsed interval, so a short interval with many tokens
				// runs dry after its first refill.)
				s := mustNew(memorystore.New(&memorystore.Config{Tokens: uint64(pick(path, 1<<40, 1)), Interval: time.Hour}))
				return mustNew(sethhttp.NewMiddleware(s, sethhttp.IPKeyFunc())).Handle(next)
			},
		},
		{
			name: "throttled",
			algo: "HTTPRateLimiterCtx, GCRA over memstore, VaryBy RemoteAddr",
			new: func(path string, keys int, next http.Handler) http.Handler {
				st := mustNew(memstore.NewCtx(0))
				limit := pick(path, httpAdmitLimit, 1)
				q := throttled.RateQuota{MaxRate: throttled.PerDuration(limit, per(path, keys)), MaxBurst: limit - 1}
				rl := mustNew(throttled.NewGCRARateLimiterCtx(st, q))
				h := &throttled.HTTPRateLimiterCtx{RateLimiter: rl, VaryBy: &throttled.VaryBy{RemoteAddr: true}}
				return h.RateLimit(next)
			},
		},
		{
			name: "tollbooth",
			algo: "LimitHandler, token bucket per key (x/time/rate) in an expirable cache, IP lookup RemoteAddr only",
			new: func(path string, keys int, next http.Handler) http.Handler {
				rate := float64(httpAdmitLimit) / httpAdmitWindow(keys).Seconds()
				burst := httpAdmitLimit
				if path != "admit" {
					rate, burst = 1.0/3600, 1
				}
				lmt := tollbooth.NewLimiter(rate, &tblimiter.ExpirableOptions{DefaultExpirationTTL: time.Hour})
				lmt.SetIPLookups([]string{"RemoteAddr"}).SetBurst(burst)
				return tollbooth.LimitHandler(lmt, next)
			},
		},
		{
			name: "ulule",
			algo: "stdlib.NewMiddleware over the memory store: fixed window per key, X-RateLimit-* fields",
			new: func(path string, keys int, next http.Handler) http.Handler {
				l := ulule.New(ulmemory.NewStore(), ulule.Rate{Period: per(path, keys), Limit: int64(pick(path, httpAdmitLimit, 1))})
				return ulstdlib.NewMiddleware(l).Handler(next)
			},
		},
	}
}

// statusWriter is a reused ResponseWriter that records the status.
type statusWriter struct {
	h    http.Header
	code int
}

func (w *statusWriter) Header() http.Header { return w.h }
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(b), nil
}
func (w *statusWriter) WriteString(s string) (int, error) { return w.Write(nil) }
func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *statusWriter) reset() {
	clear(w.h)
	w.code = 0
}

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// clientAddr is the i-th client's RemoteAddr: distinct IPv4 addresses.
func clientAddr(i int) string {
	return fmt.Sprintf("10.%d.%d.%d:40000", i>>16&255, i>>8&255, i&255)
}

// httpSeqLen is the length of the key sequence each benchmark cycles through.
const httpSeqLen = 1 << 21

var nop = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})

func BenchmarkHTTP(b *testing.B) {
	for _, path := range []string{"admit", "refuse"} {
		for _, n := range httpKeyCounts() {
			addrs, remote := httpAddrs(b, n)
			for _, im := range httpImpls() {
				b.Run(fmt.Sprintf("path=%s/keys=%d/impl=%s", path, n, im.name), func(b *testing.B) {
					benchHTTP(b, im, path, addrs, remote)
				})
			}
		}
	}
}

// httpAddrs returns the RemoteAddr of each of n clients, and the RemoteAddr
// of each measured request: clients drawn in random order, each request's
// address a copy of its own, laid out in sequence order (layOut) as
// keySequence's orderCopies are. A server hands the middleware the address
// of the request's connection, in cache for a new connection (a kept-alive
// one, idle long enough, may have let it leave the cache: a layout not
// measured here), and never the string the middleware first saw for that
// client; indexing the clients' own strings instead would charge every
// middleware two cache misses of the harness's (the string and its bytes)
// on each request. Both are made once per n and shared by the paths.
func httpAddrs(b *testing.B, n int) ([]string, *laidOut) {
	if a, ok := httpAddrCache[n]; ok {
		return a.addrs, a.remote
	}
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = clientAddr(i)
	}
	seq, err := stores.Sequence("random", n, httpSeqLen)
	if err != nil {
		b.Fatal(err)
	}
	if n > 1 && stores.Distinct(seq) < n*9/10 {
		b.Fatalf("sequence over %d keys has %d distinct keys", n, stores.Distinct(seq))
	}
	remote := layOut(len(seq), func(i int) string { return addrs[seq[i]] })
	httpAddrCache[n] = httpAddrSet{addrs, remote}
	return addrs, remote
}

type httpAddrSet struct {
	addrs  []string
	remote *laidOut
}

// httpAddrCache holds httpAddrs' answers for the process's later runs.
var httpAddrCache = map[int]httpAddrSet{}

func benchHTTP(b *testing.B, im httpImpl, path string, addrs []string, remote *laidOut) {
	h := im.new(path, len(addrs), nop)
	r := mustNew(http.NewRequest(http.MethodGet, "/", nil))
	w := &statusWriter{h: http.Header{}}
	want := http.StatusOK
	if path == "refuse" {
		want = http.StatusTooManyRequests
	}
	// Setup, checked: every key's first request is admitted; on the refuse
	// path it used the key's limit, so its second request is refused.
	for i, a := range addrs {
		r.RemoteAddr = a
		w.reset()
		h.ServeHTTP(w, r)
		if w.status() != http.StatusOK {
			b.Fatalf("%s: first request of key %d got %d", im.name, i, w.status())
		}
		if path == "refuse" {
			w.reset()
			h.ServeHTTP(w, r)
			if w.status() != want {
				b.Fatalf("%s: second request of key %d got %d, want %d", im.name, i, w.status(), want)
			}
		}
	}
	bad := 0
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		r.RemoteAddr = remote.at(i)
		if i++; i == remote.len() {
			i = 0
		}
		w.reset()
		h.ServeHTTP(w, r)
		if w.status() != want {
			bad++
		}
	}
	if bad > 0 {
		b.Fatalf("%s: %d measured requests did not get %d (%s)", im.name, bad, want, strconv.Quote(path))
	}
	// Ours is measured with what it claims: the last response carries the
	// RateLimit fields exactly when they are on.
	if strings.HasPrefix(im.name, "slidelimit") {
		on, policy := w.h.Get("RateLimit") != "", w.h.Get("RateLimit-Policy") != ""
		if on != policy || on != (im.name == "slidelimit") {
			b.Fatalf("%s: unexpected RateLimit fields on the last response: %v", im.name, w.h)
		}
	}
}

// compare.sh runs each middleware of httpImpls in a process of its own, by
// name, from a list of its own: a middleware missing from that list would
// drop out of `make compare`, and a name that is not one would match
// nothing. The list must be httpImpls' names, in any order.
func TestCompareRunsEveryHTTPImpl(t *testing.T) {
	src, err := os.ReadFile("compare.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^http_impls=\(([^)]*)\)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("compare.sh has no line http_impls=(...)")
	}
	listed := strings.Fields(string(m[1]))
	var names []string
	for _, im := range httpImpls() {
		names = append(names, im.name)
	}
	slices.Sort(listed)
	slices.Sort(names)
	if !slices.Equal(listed, names) {
		t.Fatalf("compare.sh runs the HTTP middlewares %v; httpImpls has %v", listed, names)
	}
}
