package redis_test

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
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
