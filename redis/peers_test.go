package redis_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-chi/httprate"
	httprateredis "github.com/go-chi/httprate-redis"
	goredis "github.com/redis/go-redis/v9"
	ulule "github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// peerDecider decides n units for key through a peer's own API, on its own
// clock.
type peerDecider func(ctx context.Context, key string, n int) (admitted bool, err error)

// httprateRedis is go-chi/httprate-redis at limit per window per key,
// through httprate's middleware (its only API) around a handler that does
// nothing; the key travels in a header, the cost in the request's context.
func httprateRedis(gc *goredis.Client, limit int, window time.Duration) peerDecider {
	mw := httprate.Limit(limit, window, httprateredis.WithRedisLimitCounter(&httprateredis.Config{Client: gc}),
		httprate.WithKeyFuncs(func(r *http.Request) (string, error) { return r.Header.Get("X-Key"), nil }))
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	return func(ctx context.Context, key string, n int) (bool, error) {
		if n != 1 {
			ctx = httprate.WithIncrement(ctx, n) // 1 is the middleware's own default
		}
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
		req.Header.Set("X-Key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK:
			return true, nil
		case http.StatusTooManyRequests:
			return false, nil
		}
		return false, fmt.Errorf("httprate-redis: status %d: %s", rec.Code, rec.Body)
	}
}

// ululeRedis is ulule/limiter's Redis store (a fixed window) at limit per
// window per key.
func ululeRedis(gc *goredis.Client, limit int, window time.Duration) (peerDecider, error) {
	store, err := ulredis.NewStoreWithOptions(gc, ulule.StoreOptions{Prefix: "ulule"})
	if err != nil {
		return nil, err
	}
	ul := ulule.New(store, ulule.Rate{Period: window, Limit: int64(limit)})
	return func(ctx context.Context, key string, n int) (bool, error) {
		r, err := ul.Increment(ctx, key, int64(n))
		return err == nil && !r.Reached, err
	}, nil
}
