package httplimit_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/httplimit"
	"github.com/slidelimit/slidelimit/keyed"
	"github.com/slidelimit/slidelimit/ring"
)

// recorder stamps, on the server, the instant of every admission per key.
type recorder struct {
	httplimit.Limiter
	mu     sync.Mutex
	admits map[string][]time.Time
}

func (r *recorder) Decide(ctx context.Context, key string, now time.Time, cost int) (httplimit.Decision, error) {
	d, err := r.Limiter.Decide(ctx, key, now, cost)
	if err == nil && d.Allowed {
		r.mu.Lock()
		r.admits[key] = append(r.admits[key], now)
		r.mu.Unlock()
	}
	return d, err
}

// A real server on 127.0.0.1, net/http clients on several goroutines, a ring
// per key: the 2xx responses of each key never exceed the limit in any
// window, and a client that waits the Retry-After it got is then admitted.
// Time is injected: the clients send in rounds, all at the round's instant,
// so the instants the server stamps are the ones the limiters decided at.
func TestOutsideEndToEnd(t *testing.T) {
	const (
		limit      = 4
		window     = time.Second
		clients    = 6
		keys       = 3
		rounds     = 40
		roundStep  = 150 * time.Millisecond
		perRequest = 2 // requests per client per round
	)
	k, err := keyed.New[string](func() (*ring.Limiter, error) { return ring.New(limit, window) })
	require.NoError(t, err)
	rec := &recorder{Limiter: httplimit.Keyed(k, httplimit.Rule{Limit: limit, Window: window}), admits: map[string][]time.Time{}}
	m, err := httplimit.New(rec, httplimit.Key(httplimit.HeaderKey("X-Client")))
	require.NoError(t, err)
	var clock atomic.Int64 // nanoseconds after t0
	httplimit.SetNow(m, func() time.Time { return t0.Add(time.Duration(clock.Load())) })
	srv := httptest.NewServer(m.Handler(ok200))
	defer srv.Close()
	client := srv.Client()
	client.Timeout = 10 * time.Second

	// send may run on any goroutine: it reports errors with t.Error and
	// returns status 0.
	send := func(key string) (int, string) {
		req, err := http.NewRequest("GET", srv.URL, nil)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		req.Header.Set("X-Client", key)
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}

	var mu sync.Mutex
	ok := map[string]int{}
	refused := 0
	for r := range rounds {
		clock.Store(int64(time.Duration(r) * roundStep))
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				key := fmt.Sprint("client-", c%keys)
				for range perRequest {
					code, _ := send(key)
					mu.Lock()
					switch code {
					case 200:
						ok[key]++
					case 429:
						refused++
					default:
						t.Errorf("status %d", code)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	require.Positive(t, refused, "the workload must reach the limit")
	for key, n := range ok {
		assert.Len(t, rec.admits[key], n, "%s: 2xx responses and server stamps", key)
		assertWindows(t, key, rec.admits[key], limit, window)
	}

	// Each key, refused now, is admitted at the instant its Retry-After says.
	for i := range keys {
		key := fmt.Sprint("client-", i)
		for {
			code, _ := send(key)
			if code != 200 {
				require.Equal(t, 429, code)
				break
			}
		}
		code, after := send(key)
		require.Equal(t, 429, code)
		secs, err := strconv.Atoi(after)
		require.NoError(t, err, "Retry-After %q", after)
		require.Positive(t, secs)
		clock.Add(int64(time.Duration(secs) * time.Second))
		code, _ = send(key)
		assert.Equal(t, 200, code, "%s after waiting Retry-After: %d s", key, secs)
	}
}
