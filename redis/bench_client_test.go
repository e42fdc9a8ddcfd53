package redis_test

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/slidelimit/slidelimit/redis"
)

// BenchmarkClientCPU measures what a decision costs the client's CPU apart
// from the network and the server: go-redis on a connection that answers
// every command at once with a reply of the right shape, for our limiters
// and for redis_rate. BenchmarkDecide measures the whole.
func BenchmarkClientCPU(b *testing.B) {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i)
	}
	now := strconv.FormatInt(time.Now().UnixMicro(), 10)
	ours := "*4\r\n:1\r\n:" + now + "\r\n:" + now + "\r\n:99\r\n" // admitted, at, ready, remaining
	rule := redis.Rule{Limit: benchLimit, Window: time.Second}
	for _, name := range []string{"log", "window", "redis_rate"} {
		b.Run(name, func(b *testing.B) {
			var decide func(ctx context.Context, key string) error
			if name == "redis_rate" {
				// allowed, remaining, retry after, reset after
				rr := redis_rate.NewLimiter(cannedClient(b, "*4\r\n:1\r\n:99\r\n$2\r\n-1\r\n$4\r\n0.01\r\n"))
				decide = func(ctx context.Context, key string) error {
					_, err := rr.Allow(ctx, key, redis_rate.PerSecond(benchLimit))
					return err
				}
			} else {
				c, err := redis.NewGoRedis(cannedClient(b, ours))
				require.NoError(b, err)
				// The defaults: a timeout of 100 ms, keys that expire
				// with their windows.
				newf := redis.NewLog
				if name == "window" {
					newf = redis.NewWindow
				}
				l, err := newf(c, redis.Options{}, rule)
				require.NoError(b, err)
				decide = func(ctx context.Context, key string) error { _, err := l.Allow(ctx, key); return err }
			}
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := decide(ctx, keys[i%len(keys)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// cannedClient returns a go-redis client of one connection that answers
// every command with reply, and HELLO with an error (as a server older than
// RESP3 does), at once.
func cannedClient(b *testing.B, reply string) *goredis.Client {
	gc := goredis.NewClient(&goredis.Options{
		Addr: "canned:6379", Protocol: 2, DisableIdentity: true, PoolSize: 1, ContextTimeoutEnabled: true,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return &cannedConn{reply: []byte(reply)}, nil
		},
	})
	b.Cleanup(func() { _ = gc.Close() })
	return gc
}

// cannedConn is a net.Conn whose every write (one command, as go-redis
// writes it) is answered by the next reads.
type cannedConn struct {
	reply, pending []byte
}

func (c *cannedConn) Read(p []byte) (int, error) {
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

func (c *cannedConn) Write(p []byte) (int, error) {
	c.pending = c.reply
	if bytes.Contains(p, []byte("hello")) || bytes.Contains(p, []byte("HELLO")) {
		c.pending = []byte("-ERR unknown command 'HELLO'\r\n")
	}
	return len(p), nil
}

func (c *cannedConn) Close() error                     { return nil }
func (c *cannedConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *cannedConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *cannedConn) SetDeadline(time.Time) error      { return nil }
func (c *cannedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *cannedConn) SetWriteDeadline(time.Time) error { return nil }
