package redis_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
)

// deadlineClient is a Client that answers every script at once with an
// admission (or, when block is set, once its context has ended), and records
// per Redis key what the context of the key's latest call carried: what the
// limiter handed to the Redis client.
type deadlineClient struct {
	block bool
	mu    sync.Mutex
	last  map[string]seenContext
}

type seenContext struct {
	deadline time.Time
	ok       bool
	value    any
	ctx      context.Context
}

type ctxKey struct{}

func (c *deadlineClient) EvalSHA(ctx context.Context, _ string, keys []string, _ []any) ([]int64, error) {
	dl, ok := ctx.Deadline()
	c.mu.Lock()
	if c.last == nil {
		c.last = map[string]seenContext{}
	}
	c.last[keys[0]] = seenContext{dl, ok, ctx.Value(ctxKey{}), ctx}
	c.mu.Unlock()
	if c.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	now := time.Now().UnixMicro()
	return []int64{1, now, now, 0}, nil
}

func (c *deadlineClient) Eval(ctx context.Context, _ string, keys []string, args []any) ([]int64, error) {
	return c.EvalSHA(ctx, "", keys, args)
}

func (c *deadlineClient) Load(context.Context, string) error { return nil }

func (c *deadlineClient) seen(t *testing.T, l *redis.Limiter, key string) seenContext {
	t.Helper()
	rk, err := redis.RedisKey(l, key)
	require.NoError(t, err)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last[rk]
}

// TestTimeoutDeadline checks, from the Redis client's side, the deadline each
// decision runs under, from many goroutines at once: at least its timeout
// after the call began and at most a 128th of the timeout more than that
// after it ended (calls whose context can never be cancelled share one
// deadline per slot of time); the caller's own deadline when it comes first;
// and always the caller's context values. A decision whose Redis client does
// not answer ends at its deadline.
func TestTimeoutDeadline(t *testing.T) {
	const timeout = 20 * time.Millisecond
	rule := redis.Rule{Limit: 1, Window: time.Microsecond}
	c := &deadlineClient{}
	l, err := redis.NewLog(c, redis.Options{Timeout: timeout}, rule)
	require.NoError(t, err)

	// parents returns goroutine g's context: Background, a context of
	// values, a cancellable one, one whose deadline comes after the
	// timeout, or one whose deadline comes before it.
	parents := func(g int) (context.Context, context.CancelFunc) {
		bg := context.Background()
		switch g % 5 {
		case 0:
			return bg, func() {}
		case 1:
			return context.WithValue(bg, ctxKey{}, g), func() {}
		case 2:
			return context.WithCancel(context.WithValue(bg, ctxKey{}, g))
		case 3:
			return context.WithTimeout(context.WithValue(bg, ctxKey{}, g), time.Hour)
		default:
			return context.WithTimeout(context.WithValue(bg, ctxKey{}, g), timeout/2)
		}
	}
	var wg sync.WaitGroup
	for g := range 10 {
		wg.Go(func() {
			key := "g" + strconv.Itoa(g)
			for i := range 2000 {
				ctx, cancel := parents(g)
				own, hasOwn := ctx.Deadline()
				start := time.Now()
				d, err := l.Allow(ctx, key)
				end := time.Now()
				cancel()
				if err != nil && hasOwn && errors.Is(err, context.DeadlineExceeded) && !end.Before(own) {
					continue // the caller's own deadline passed first (a slow, loaded run)
				}
				if err != nil || !d.Allowed {
					t.Errorf("goroutine %d, call %d: %+v, %v", g, i, d, err)
					return
				}
				s := c.seen(t, l, key)
				if want := ctx.Value(ctxKey{}); s.value != want {
					t.Errorf("goroutine %d, call %d: the client saw the value %v, want %v", g, i, s.value, want)
					return
				}
				switch {
				case !s.ok:
					t.Errorf("goroutine %d, call %d: no deadline", g, i)
				case hasOwn && own.Sub(start) < timeout:
					if !s.deadline.Equal(own) {
						t.Errorf("goroutine %d, call %d: deadline %v, want the caller's %v", g, i, s.deadline, own)
					}
				case s.deadline.Before(start.Add(timeout)):
					t.Errorf("goroutine %d, call %d: deadline %v after the call began, want at least %v",
						g, i, s.deadline.Sub(start), timeout)
				case s.deadline.After(end.Add(timeout + timeout/128)):
					t.Errorf("goroutine %d, call %d: deadline %v after the call ended, want at most %v",
						g, i, s.deadline.Sub(end), timeout+timeout/128)
				}
				if t.Failed() {
					return
				}
				if i%400 == 0 {
					time.Sleep(time.Duration(g+1) * timeout / 100)
				}
			}
		})
	}
	wg.Wait()

	t.Run("unanswered", func(t *testing.T) {
		c := &deadlineClient{block: true}
		l, err := redis.NewLog(c, redis.Options{Timeout: timeout}, rule)
		require.NoError(t, err)
		for g := range 4 {
			ctx, cancel := parents(g)
			start := time.Now()
			// Bounded, so that a call kept waiting past its timeout (a
			// caller's later deadline kept) fails here instead of
			// hanging the package until go test's timeout.
			done := make(chan error, 1)
			go func() { _, err := l.Allow(ctx, "k"); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(timeout + 10*time.Second):
				t.Fatalf("goroutine %d: an unanswered call still waits %v after its timeout of %v: a deadline later than the timeout was kept", g, 10*time.Second, timeout)
			}
			cancel()
			require.True(t, errors.Is(err, context.DeadlineExceeded), "goroutine %d: %v", g, err)
			require.GreaterOrEqual(t, time.Since(start), timeout)
		}
	})

	t.Run("longest", func(t *testing.T) {
		// A timeout near the largest Duration, as "no timeout to speak
		// of", must not wrap round into a deadline in the past.
		c := &deadlineClient{}
		l, err := redis.NewLog(c, redis.Options{Timeout: math.MaxInt64}, rule)
		require.NoError(t, err)
		for _, ctx := range []context.Context{context.Background(), t.Context()} {
			_, err = l.Allow(ctx, "k")
			require.NoError(t, err)
			s := c.seen(t, l, "k")
			require.True(t, s.ok)
			require.Greater(t, time.Until(s.deadline), 100*365*24*time.Hour)
		}
	})

	t.Run("none", func(t *testing.T) {
		c := &deadlineClient{}
		l, err := redis.NewLog(c, redis.Options{Timeout: -1}, rule)
		require.NoError(t, err)
		_, err = l.Allow(context.Background(), "k")
		require.NoError(t, err)
		require.False(t, c.seen(t, l, "k").ok, "a negative timeout adds no deadline")
	})
}

// structCtx is a context of a comparable struct type that can hold a value
// that is not comparable.
type structCtx struct {
	context.Context
	v any
}

// TestDeadlineContexts: a context that is not the one of the call before
// (a context of values made per job) gets a deadline that ends with its
// call, so that no timer outlives it; a context used again shares its
// slot's deadline from its second call in a row; a context of a comparable
// type holding a value that is not comparable takes a deadline of its own
// and does not make the sharing panic.
func TestDeadlineContexts(t *testing.T) {
	c := &deadlineClient{}
	l, err := redis.NewLog(c, redis.Options{Timeout: time.Minute}, redis.Rule{Limit: 100, Window: time.Hour})
	require.NoError(t, err)
	for i := range 3 {
		ctx := context.WithValue(context.Background(), ctxKey{}, i)
		_, err := l.AllowN(ctx, "k", time.Time{}, 1)
		require.NoError(t, err)
		seen := c.seen(t, l, "k")
		require.Equal(t, i, seen.value)
		require.Error(t, seen.ctx.Err(), "call %d: its context still runs after the call, with a timer for the whole timeout", i)
	}
	bg := context.Background()
	var shared []context.Context
	for range 3 {
		_, err := l.AllowN(bg, "k", time.Time{}, 1)
		require.NoError(t, err)
		shared = append(shared, c.seen(t, l, "k").ctx)
	}
	require.Error(t, shared[0].Err(), "the first call in a row has its own deadline")
	require.NoError(t, shared[2].Err(), "from the second call in a row, the slot's deadline is shared")
	require.True(t, shared[1] == shared[2], "the second and third calls share one context")
	sc := structCtx{context.Background(), []int{1}}
	for range 3 {
		_, err := l.AllowN(sc, "k", time.Time{}, 1)
		require.NoError(t, err)
	}
}

// TestSharedDeadlinePerSlot: two long-lived contexts of values used in runs
// of two (A A B B A A ...), as two goroutines taking turns do, start at most
// one shared timer per slot: a slot's shared deadline is kept for the slot,
// and the other context's calls get deadlines of their own, released when
// they end. Before, every run of two made a shared deadline whose timer ran
// for the whole timeout after its calls.
func TestSharedDeadlinePerSlot(t *testing.T) {
	dc := &deadlineClient{}
	l, err := redis.NewLog(dc, redis.Options{Prefix: "slots", Timeout: time.Hour}, redis.Rule{Limit: 5, Window: time.Minute})
	require.NoError(t, err)
	a := context.WithValue(context.Background(), ctxKey{}, "a")
	b := context.WithValue(context.Background(), ctxKey{}, "b")
	live := map[context.Context]bool{}
	for i := range 1000 {
		ctx := a
		if i/2%2 == 1 {
			ctx = b
		}
		_, err := l.AllowN(ctx, "k", time.Time{}, 0)
		require.NoError(t, err)
		if seen := dc.seen(t, l, "k").ctx; seen.Err() == nil {
			live[seen] = true
		}
	}
	// The loop takes far less than a slot (an hour / 128): one or two
	// slots, one shared context each.
	require.LessOrEqual(t, len(live), 2, "deadline contexts still running after their calls")
}

// TestDefaultTimeout: a zero Options.Timeout bounds each decision by
// DefaultTimeout (a deadline from the Redis client's side between
// DefaultTimeout after the call began and a 128th of it more after it
// ended), and a negative one leaves the caller's context unbounded.
func TestDefaultTimeout(t *testing.T) {
	rule := redis.Rule{Limit: 1, Window: time.Microsecond}
	c := &deadlineClient{}
	l, err := redis.NewLog(c, redis.Options{}, rule)
	require.NoError(t, err)
	for _, ctx := range []context.Context{context.Background(), t.Context()} {
		begin := time.Now()
		_, err = l.AllowN(ctx, "k", time.Time{}, 1)
		end := time.Now()
		require.NoError(t, err)
		seen := c.seen(t, l, "k")
		require.True(t, seen.ok, "a zero Timeout is DefaultTimeout, not none")
		require.False(t, seen.deadline.Before(begin.Add(redis.DefaultTimeout)), "deadline %v after the call began", seen.deadline.Sub(begin))
		require.False(t, seen.deadline.After(end.Add(redis.DefaultTimeout+redis.DefaultTimeout/128)), "deadline %v after the call ended", seen.deadline.Sub(end))
	}
	none, err := redis.NewLog(c, redis.Options{Timeout: -1}, rule)
	require.NoError(t, err)
	_, err = none.AllowN(context.Background(), "k", time.Time{}, 1)
	require.NoError(t, err)
	require.False(t, c.seen(t, none, "k").ok, "a negative Timeout: no deadline")
}
