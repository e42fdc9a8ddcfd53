package redis_test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
	"github.com/slidelimit/slidelimit/redis/internal/redistest"
)

// dropProxy forwards TCP connections to a server, and cuts the connection
// instead of forwarding the reply to the first command that contains
// trigger: the server ran the command, the client never hears of it.
type dropProxy struct {
	ln      net.Listener
	target  string
	trigger []byte
	armed   atomic.Bool
	wg      sync.WaitGroup
}

func newDropProxy(t *testing.T, target, trigger string) *dropProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &dropProxy{ln: ln, target: target, trigger: []byte(trigger)}
	p.armed.Store(true)
	p.wg.Go(p.serve)
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	return p
}

func (p *dropProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		var drop atomic.Bool
		p.wg.Go(func() { // client to server
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if bytes.Contains(buf[:n], p.trigger) && p.armed.CompareAndSwap(true, false) {
						drop.Store(true)
					}
					if _, err := s.Write(buf[:n]); err != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			_ = s.Close()
			_ = c.Close()
		})
		p.wg.Go(func() { // server to client
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if drop.Load() {
					break // the reply to the trigger is lost
				}
				if n > 0 {
					if _, err := c.Write(buf[:n]); err != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			_ = s.Close()
			_ = c.Close()
		})
	}
}

// TestNoRetryAfterLostReply: the reply to a decision is lost after the server
// applied it. The go-redis client is configured to retry (MaxRetries 5), and
// a plain EVALSHA through it is indeed applied twice; the limiter's call is
// applied once and reports the error.
func TestNoRetryAfterLostReply(t *testing.T) {
	s, _, dc := standalone(t)
	rule := redis.Rule{Limit: 5, Window: time.Hour}
	now := at(epoch)
	remaining := func(key string) int {
		l := mustLog(t, dc, redis.Options{}, rule)
		d, err := l.AllowN(t.Context(), key, now, 0)
		require.NoError(t, err)
		return d.Remaining[0]
	}
	logSHA, _ := redis.ScriptSHAs()

	// The hazard: go-redis's own retry runs a lost decision twice.
	l0 := mustLog(t, dc, redis.Options{}, rule)
	require.NoError(t, l0.Load(t.Context()))
	p := newDropProxy(t, s.Addr(), "evalsha")
	gc := goredis.NewClient(&goredis.Options{Addr: p.ln.Addr().String(), MaxRetries: 5, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = gc.Close() })
	rk, err := redis.RedisKey(l0, "plain")
	require.NoError(t, err)
	err = gc.EvalSha(t.Context(), logSHA, []string{rk}, now.UnixMicro(), 1, 3600001, 5, int64(3600000000)).Err()
	require.NoError(t, err, "go-redis retried the lost call and got the second reply")
	require.Equal(t, 3, remaining("plain"), "the plain retried call was applied twice")

	// The limiter: one application, and an error.
	p.armed.Store(true)
	c, err := redis.NewGoRedis(gc)
	require.NoError(t, err)
	l := mustLog(t, c, redis.Options{Timeout: time.Second}, rule)
	d, err := l.AllowN(t.Context(), "k", now, 1)
	require.Error(t, err)
	require.False(t, d.Allowed)
	require.Equal(t, 4, remaining("k"), "the decision was applied exactly once")
}

// TestNoRetryAfterLostEvalReply: the script is missing (SCRIPT FLUSH),
// so the decision is EVALSHA (NOSCRIPT) then EVAL with the source; the reply
// to the EVAL is lost after the server ran it. The go-redis client retries
// (MaxRetries 5): the limiter's EVAL must not be retried either.
func TestNoRetryAfterLostEvalReply(t *testing.T) {
	s, _, dc := standalone(t)
	rule := redis.Rule{Limit: 5, Window: time.Hour}
	direct := mustLog(t, dc, redis.Options{Prefix: "lev"}, rule)
	_, err := redistest.Do(s.Addr(), "SCRIPT", "FLUSH")
	require.NoError(t, err)
	p := newDropProxy(t, s.Addr(), "redis.call('GET'")
	gc := goredis.NewClient(&goredis.Options{Addr: p.ln.Addr().String(), MaxRetries: 5, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = gc.Close() })
	c, err := redis.NewGoRedis(gc)
	require.NoError(t, err)
	l := mustLog(t, c, redis.Options{Prefix: "lev", Timeout: time.Second}, rule)
	now := at(epoch)
	d, err := l.AllowN(t.Context(), "k", now, 1)
	require.Error(t, err, "the reply to EVAL was lost")
	require.False(t, d.Allowed)
	d, err = direct.CheckN(t.Context(), "k", now, 0)
	require.NoError(t, err)
	require.Equal(t, rule.Limit-1, d.Remaining[0], "the decision was applied exactly once")
}

// proxyDialer routes every connection a go-redis client opens to addr
// through a dropProxy of its own (made on first use), so that the reply to
// the first command containing trigger, on any node, is lost.
type proxyDialer struct {
	t       *testing.T
	trigger string
	mu      sync.Mutex
	proxies map[string]*dropProxy
	armed   bool
}

func (d *proxyDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	p := d.proxies[addr]
	if p == nil {
		p = newDropProxy(d.t, addr, d.trigger)
		p.armed.Store(d.armed)
		d.proxies[addr] = p
	}
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, network, p.ln.Addr().String())
}

func (d *proxyDialer) arm() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.armed = true
	for _, p := range d.proxies {
		p.armed.Store(true)
	}
}

// TestClusterNoRetryAfterLostReply is TestNoRetryAfterLostReply on a
// cluster client (MaxRetries 5, whose retry logic is not the single-node
// client's): the decision whose reply is lost is applied once.
func TestClusterNoRetryAfterLostReply(t *testing.T) {
	cl := redistest.StartCluster(t)
	_, dc := clusterClient(t, cl)
	rule := redis.Rule{Limit: 5, Window: time.Hour}
	direct := mustLog(t, dc, redis.Options{Prefix: "cnr"}, rule)
	require.NoError(t, direct.Load(t.Context()))
	pd := &proxyDialer{t: t, trigger: "evalsha", proxies: map[string]*dropProxy{}}
	gc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true, MaxRetries: 5, Dialer: pd.dial})
	defer gc.Close() // before the proxies' cleanup, which waits for their connections
	c, err := redis.NewGoRedis(gc)
	require.NoError(t, err)
	l := mustLog(t, c, redis.Options{Prefix: "cnr", Timeout: 2 * time.Second}, rule)
	now := at(epoch)
	// Warm every connection (no evalsha: Load sends SCRIPT LOAD).
	require.NoError(t, l.Load(t.Context()))
	pd.arm()
	d, err := l.AllowN(t.Context(), "k", now, 1)
	require.Error(t, err, "the reply was lost")
	require.False(t, d.Allowed)
	d, err = direct.CheckN(t.Context(), "k", now, 0)
	require.NoError(t, err)
	require.Equal(t, rule.Limit-1, d.Remaining[0], "the decision was applied exactly once")
}

// slowProxy forwards connections to target, holding every reply for delay:
// the server runs each command at once, the client hears of it late.
func slowProxy(t *testing.T, target string, delay time.Duration, armed *atomic.Bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			pipe := func(dst, src net.Conn, d time.Duration) {
				buf := make([]byte, 64<<10)
				for {
					n, err := src.Read(buf)
					if n > 0 {
						if armed.Load() {
							time.Sleep(d)
						}
						if _, err := dst.Write(buf[:n]); err != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				_ = s.Close()
				_ = c.Close()
			}
			wg.Go(func() { pipe(s, c, 0) })
			wg.Go(func() { pipe(c, s, delay) })
		}
	})
	return ln.Addr().String()
}

// TestTimeoutAppliedOnce: each decision's reply comes after its timeout,
// though the server ran it at once. Each call that timed out is applied
// once, never twice.
func TestTimeoutAppliedOnce(t *testing.T) {
	s, _, dc := standalone(t)
	rule := redis.Rule{Limit: 10, Window: time.Hour}
	direct := mustLog(t, dc, redis.Options{Prefix: "ta"}, rule)
	require.NoError(t, direct.Load(t.Context()))
	var armed atomic.Bool
	gc := goredis.NewClient(&goredis.Options{Addr: slowProxy(t, s.Addr(), 150*time.Millisecond, &armed), ContextTimeoutEnabled: true, PoolSize: 1})
	defer gc.Close()
	c, err := redis.NewGoRedis(gc)
	require.NoError(t, err)
	l := mustLog(t, c, redis.Options{Prefix: "ta", Timeout: 50 * time.Millisecond}, rule)
	now := at(epoch)
	for range 2 {
		armed.Store(false)
		time.Sleep(200 * time.Millisecond)             // replies held before are through
		require.NoError(t, gc.Ping(t.Context()).Err()) // a connection, its handshake done
		armed.Store(true)
		_, err := l.AllowN(t.Context(), "k", now, 1)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	time.Sleep(500 * time.Millisecond)
	d, err := direct.CheckN(t.Context(), "k", now, 0)
	require.NoError(t, err)
	applied := rule.Limit - d.Remaining[0]
	t.Logf("applied %d for 2 timed-out calls", applied)
	require.Equal(t, 2, applied)
}
