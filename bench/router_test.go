package bench

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/ring"
)

// The router tests mount httplimit's middleware on a chi router, as
// docs/http.md says it can be, and check it from the client side: a real
// server on 127.0.0.1 and net/http clients, each connecting from its own
// loopback address, so that the default key (the peer's IP) tells them apart.
// Limits are 3 per hour per key, so wall time never frees a unit during a
// test.

const routerPolicy = `"3-per-1h";q=3;w=3600`

// hourly returns a middleware limiting each key to 3 requests per hour (one
// ring per key), with the options given.
func hourly(t *testing.T, opts ...httplimit.Option) *httplimit.Middleware {
	t.Helper()
	k, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(3, time.Hour) })
	require.NoError(t, err)
	m, err := httplimit.New(httplimit.Keyed(k, httplimit.Rule{Limit: 3, Window: time.Hour}), opts...)
	require.NoError(t, err)
	return m
}

// clientFrom returns a client whose connections leave from the loopback
// address ip (Linux routes all of 127.0.0.0/8 to the loopback interface).
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

type reply struct {
	code   int
	body   string
	header http.Header
}

func call(t *testing.T, c *http.Client, method, url string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{resp.StatusCode, string(b), resp.Header}
}

// remaining checks that rp carries the policy and a RateLimit field with r
// units remaining and a reset within the hour, as a client reads them.
func remaining(t *testing.T, rp reply, r int, what string) {
	t.Helper()
	assert.Equal(t, []string{routerPolicy}, rp.header.Values("RateLimit-Policy"), what)
	v := rp.header.Values("RateLimit")
	if !assert.Len(t, v, 1, what) {
		return
	}
	rest, ok := strings.CutPrefix(v[0], `"3-per-1h";r=`+strconv.Itoa(r)+";t=")
	if assert.True(t, ok, "%s: RateLimit %q, want r=%d", what, v[0], r) {
		secs, err := strconv.Atoi(rest)
		assert.NoError(t, err, "%s: RateLimit %q", what, v[0])
		assert.True(t, secs >= 1 && secs <= 3600, "%s: RateLimit %q: reset outside 1..3600 s", what, v[0])
	}
}

// refused checks a 429 as a client reads it: Retry-After in whole seconds
// within the hour, and the fields with nothing remaining.
func refused(t *testing.T, rp reply, what string) {
	t.Helper()
	require.Equal(t, 429, rp.code, what)
	assert.Equal(t, "too many requests\n", rp.body, what)
	ra, err := strconv.Atoi(rp.header.Get("Retry-After"))
	assert.NoError(t, err, "%s: Retry-After %q", what, rp.header.Get("Retry-After"))
	assert.True(t, ra >= 1 && ra <= 3600, "%s: Retry-After %d outside 1..3600", what, ra)
	remaining(t, rp, 0, what)
}

func unlimited(t *testing.T, rp reply, what string) {
	t.Helper()
	assert.Equal(t, 200, rp.code, what)
	assert.Empty(t, rp.header.Values("RateLimit"), what)
	assert.Empty(t, rp.header.Values("RateLimit-Policy"), what)
	assert.Empty(t, rp.header.Values("Retry-After"), what)
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })

// TestRouterChi: a subrouter mounted at /api limits every request with
// r.Use, one route of the top router has its own limit with r.With, and
// /health has none. Each client has its own limits, keyed by its address.
func TestRouterChi(t *testing.T) {
	api := chi.NewRouter()
	api.Use(hourly(t).Handler)
	api.Get("/items/{id}", okHandler)
	api.Post("/items", okHandler)

	r := chi.NewRouter()
	r.Get("/health", okHandler)
	r.With(hourly(t).Handler).Get("/search", okHandler)
	r.Mount("/api", api)

	srv := httptest.NewServer(r)
	defer srv.Close()
	a, b := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	defer a.CloseIdleConnections()
	defer b.CloseIdleConnections()

	// r.Use: the routes of /api share one limit per client.
	for i, rq := range []struct{ method, path string }{{"GET", "/api/items/1"}, {"GET", "/api/items/2"}, {"POST", "/api/items"}} {
		rp := call(t, a, rq.method, srv.URL+rq.path)
		require.Equal(t, 200, rp.code, "client a, %s %s", rq.method, rq.path)
		assert.Equal(t, "ok", rp.body)
		remaining(t, rp, 2-i, "client a, "+rq.method+" "+rq.path)
	}
	refused(t, call(t, a, "GET", srv.URL+"/api/items/4"), "client a, 4th request to /api")
	refused(t, call(t, a, "POST", srv.URL+"/api/items"), "client a, 5th request to /api")
	// r.Use runs before the subrouter routes: a path it has no route for
	// is limited too, refused here rather than answered 404.
	refused(t, call(t, a, "GET", srv.URL+"/api/nothing"), "client a, unrouted path under /api")

	// Another client has its own limit.
	rp := call(t, b, "GET", srv.URL+"/api/items/1")
	require.Equal(t, 200, rp.code, "client b")
	remaining(t, rp, 2, "client b, first request to /api")

	// r.With on one route: its own limit, per client, not used by /api's
	// requests.
	for i := range 3 {
		rp := call(t, a, "GET", srv.URL+"/search")
		require.Equal(t, 200, rp.code, "client a, /search %d", i)
		remaining(t, rp, 2-i, "client a, /search")
	}
	refused(t, call(t, a, "GET", srv.URL+"/search"), "client a, 4th request to /search")
	rp = call(t, b, "GET", srv.URL+"/search")
	require.Equal(t, 200, rp.code, "client b, /search")
	remaining(t, rp, 2, "client b, first request to /search")

	// Routes outside both: never limited, no fields.
	for range 5 {
		unlimited(t, call(t, a, "GET", srv.URL+"/health"), "client a, /health")
		unlimited(t, call(t, b, "GET", srv.URL+"/health"), "client b, /health")
	}
	rp = call(t, a, "GET", srv.URL+"/nothing")
	assert.Equal(t, 404, rp.code, "client a, unrouted path of the top router")
	assert.Empty(t, rp.header.Values("RateLimit"))
}

// keys records the keys of refusals, from the server's goroutines.
type keys struct {
	mu   sync.Mutex
	seen []string
}

func (k *keys) add(r *http.Request, key string, d httplimit.Decision) {
	k.mu.Lock()
	k.seen = append(k.seen, key)
	k.mu.Unlock()
}

func (k *keys) take() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.seen
	k.seen = nil
	return s
}

// TestRouterChiPatternKey pins what PatternKey sees under chi (v5.5.0). chi
// sets Request.Pattern to its own route pattern ("/items/{id}", without the
// method) once it has routed the request, just before the route's handler:
//
//   - r.With's middleware, and r.Use's inside r.Group, run after that, so
//     each route has its own limit, keyed by chi's pattern;
//   - r.Use's middleware runs before the router routes: on the top router
//     there is no pattern, and every request gets the key-error response
//     (500); on a router mounted at /api it is the parent's "/api/*", one
//     key for every route of the mounted router.
func TestRouterChiPatternKey(t *testing.T) {
	pattern := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.Pattern) })

	var withKeys keys
	with := hourly(t, httplimit.Key(httplimit.PatternKey), httplimit.OnRefusal(withKeys.add))
	top := hourly(t, httplimit.Key(httplimit.PatternKey))
	var mountedKeys keys
	mounted := hourly(t, httplimit.Key(httplimit.PatternKey), httplimit.OnRefusal(mountedKeys.add))

	sub := chi.NewRouter()
	sub.Use(mounted.Handler)
	sub.Get("/a/{id}", pattern)
	sub.Get("/b", pattern)

	r := chi.NewRouter()
	r.With(with.Handler).Get("/items/{id}", pattern)
	r.With(with.Handler).Post("/items", pattern)
	r.Group(func(g chi.Router) {
		g.Use(with.Handler) // a group's Use is inline too: it runs after routing
		g.Get("/group/{id}", pattern)
	})
	r.Mount("/api", sub)
	srv := httptest.NewServer(r)
	defer srv.Close()

	used := chi.NewRouter()
	used.Use(top.Handler)
	used.Get("/items/{id}", pattern)
	usedSrv := httptest.NewServer(used)
	defer usedSrv.Close()

	c := srv.Client()
	defer c.CloseIdleConnections()

	// r.With: keyed by chi's pattern.
	for i := range 3 {
		rp := call(t, c, "GET", srv.URL+"/items/"+strconv.Itoa(i))
		require.Equal(t, 200, rp.code)
		assert.Equal(t, "/items/{id}", rp.body, "the pattern chi set")
	}
	refused(t, call(t, c, "GET", srv.URL+"/items/9"), "r.With, 4th request to /items/{id}")
	assert.Equal(t, []string{"/items/{id}"}, withKeys.take())
	rp := call(t, c, "POST", srv.URL+"/items")
	assert.Equal(t, 200, rp.code, "another route, another key")
	assert.Equal(t, "/items", rp.body)
	for i := range 3 {
		rp := call(t, c, "GET", srv.URL+"/group/"+strconv.Itoa(i))
		require.Equal(t, 200, rp.code, "r.Group, its own key")
		assert.Equal(t, "/group/{id}", rp.body)
	}
	refused(t, call(t, c, "GET", srv.URL+"/group/9"), "r.Group, 4th request to /group/{id}")
	assert.Equal(t, []string{"/group/{id}"}, withKeys.take())

	// r.Use on the top router: no pattern yet.
	for _, path := range []string{"/items/1", "/nothing"} {
		rp := call(t, c, "GET", usedSrv.URL+path)
		assert.Equal(t, 500, rp.code, "r.Use, %s", path)
		assert.Equal(t, "rate limit key unavailable\n", rp.body, "r.Use, %s", path)
		assert.Empty(t, rp.header.Values("RateLimit"), "r.Use, %s", path)
	}

	// r.Use on a mounted router: the mount's pattern, shared by its routes.
	for _, path := range []string{"/api/a/1", "/api/a/2", "/api/b"} {
		require.Equal(t, 200, call(t, c, "GET", srv.URL+path).code, path)
	}
	refused(t, call(t, c, "GET", srv.URL+"/api/b"), "r.Use on the mounted router, 4th request")
	assert.Equal(t, []string{"/api/*"}, mountedKeys.take())
}
