package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// Client is what the limiters need from a Redis client: run a Lua script by
// its SHA-1 digest or by its source, and load it on every node. It is small so
// that another client library can be plugged in without touching the
// limiters; NewGoRedis adapts github.com/redis/go-redis/v9.
//
// An implementation must send each call at most once: a decision script that
// was written to the server and then retried could be applied twice (see
// docs/redis.md). Replies are arrays of integers.
type Client interface {
	// EvalSHA runs the script with the given digest. When the server does
	// not have it, the error must satisfy errors.Is(err, ErrNoScript); the
	// script did not run.
	EvalSHA(ctx context.Context, sha1 string, keys []string, args []any) ([]int64, error)
	// Eval runs the script's source (and caches it on the node that ran it).
	Eval(ctx context.Context, src string, keys []string, args []any) ([]int64, error)
	// Load loads the script on every node that can serve a key (every
	// master of a cluster, every shard of a ring).
	Load(ctx context.Context, src string) error
}

// ErrNoScript is matched (errors.Is) by the error Client.EvalSHA returns when
// the server does not have the script: after a restart, a failover or SCRIPT
// FLUSH. The limiters then send the source with Eval.
var ErrNoScript = errors.New("redis: NOSCRIPT: the server does not have the script")

// NewGoRedis returns a Client on a go-redis client (*goredis.Client for one
// node or Sentinel, *goredis.ClusterClient, *goredis.Ring, or the deferred
// *goredis.AutoPipeliner that AsyncAutoPipeline returns, which lets
// concurrent decisions share round trips: see docs/redis.md). It refuses the
// blocking autopipeliner of AutoPipeline, whose calls outlive their
// deadline. On the deferred one, a decision sent while its server is down
// waits for its deadline (go-redis dials again, DialerRetries times) and may
// still be applied once a server answers; a client with DialerRetries: 1
// fails it at the refused dial instead. The client is shared, not owned:
// closing it is the caller's business.
//
// Scripts are sent with the client's automatic retries turned off for each
// call (the command says it must not be retried), whatever the client's
// MaxRetries: a decision whose reply is lost may have been applied, and
// running it again would count it twice. MOVED and ASK redirections are still
// followed: the node that answers them did not run the script. On a cluster
// client, a script that could not reach its node (refused, cut, timed out,
// CLUSTERDOWN) makes the client reload its map of the slots, which go-redis
// does by itself only for commands it may retry, so that decisions follow a
// failover within a call or two of the promotion instead of at the client's
// periodic reload.
//
// The per-call timeout of a limiter is a context deadline, which go-redis
// honours on the socket only when the client was created with
// ContextTimeoutEnabled; otherwise a decision on a server that does not
// answer would wait for the client's ReadTimeout (seconds), not the
// limiter's Timeout. So NewGoRedis refuses a *goredis.Client, ClusterClient
// or Ring without ContextTimeoutEnabled, with an error that says so. (The
// deferred autopipeliner ends each call at its deadline itself.)
func NewGoRedis(c goredis.UniversalClient) (Client, error) {
	if c == nil {
		return nil, errors.New("redis: NewGoRedis: client must not be nil")
	}
	ap, _ := c.(*goredis.AutoPipeliner)
	if ap != nil && ap.IsBlocking() {
		// Its calls wait for their batch whatever their context: a
		// decision would outlive its timeout while Redis stalls.
		return nil, errors.New("redis: NewGoRedis: a blocking autopipeliner (AutoPipeline) does not end a call at its context's deadline; use AsyncAutoPipeline")
	}
	ctxTimeout := true
	switch c := c.(type) {
	case *goredis.Client:
		ctxTimeout = c.Options().ContextTimeoutEnabled
	case *goredis.ClusterClient:
		ctxTimeout = c.Options().ContextTimeoutEnabled
	case *goredis.Ring:
		ctxTimeout = c.Options().ContextTimeoutEnabled
	}
	if !ctxTimeout {
		return nil, fmt.Errorf("redis: NewGoRedis: the %T must be created with ContextTimeoutEnabled: true, "+
			"or go-redis ignores a decision's deadline and waits for its ReadTimeout when Redis does not answer", c)
	}
	cc, _ := c.(*goredis.ClusterClient)
	return goRedis{c: c, ap: ap, cluster: cc}, nil
}

type goRedis struct {
	c goredis.UniversalClient
	// ap is c when c is a deferred autopipeliner, else nil.
	ap *goredis.AutoPipeliner
	// cluster is c when c is a cluster client, else nil: a script that
	// failed to reach its node asks it to reload its map of the slots.
	cluster *goredis.ClusterClient
}

// onceCmd is a command that go-redis must not retry once it may have been
// written (goredis.Cmder's NoRetry). It reads the script's reply, an array
// of integers, straight into a []int64.
type onceCmd struct{ *goredis.IntSliceCmd }

func (onceCmd) NoRetry() bool { return true }

// run sends name ("evalsha" or "eval"), first (the digest or the source),
// the keys and the arguments; name is an interface so that the constants the
// callers pass are not boxed on every call.
func (g goRedis) run(ctx context.Context, name any, first string, keys []string, args []any) ([]int64, error) {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, name, first, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := onceCmd{goredis.NewIntSliceCmd(ctx, a...)}
	var err error
	if g.ap != nil {
		// The deferred face: queue the script, wait for its reply only
		// until ctx is done. A call abandoned at its deadline may still
		// run, as one whose reply a timeout cut off.
		err = g.ap.Submit(ctx, cmd).WaitContext(ctx)
	} else {
		err = g.c.Process(ctx, cmd)
	}
	if err != nil {
		if goredis.HasErrorPrefix(err, "NOSCRIPT") || errors.Is(err, goredis.ErrNoScript) {
			return nil, fmt.Errorf("%w (%v)", ErrNoScript, err)
		}
		if g.cluster != nil && unreachable(err) {
			// go-redis reloads its map of the slots when it retries a
			// command (or meets MOVED), never for one that must not be
			// retried, such as this one: without this, after a failover
			// it would send every decision for the failed master's slots
			// to that master until its periodic reload (a minute by
			// default). The reload runs in go-redis's own goroutine, at
			// most one at a time and one per 200 ms while failures go on
			// (a slow but healthy cluster, or callers with short
			// deadlines, cost it that: one CLUSTER SLOTS per 200 ms); this
			// call still fails (the policy), the next ones go to the node
			// the cluster now names.
			g.cluster.ReloadState(ctx)
		}
		return nil, err
	}
	return cmd.Result()
}

// unreachable reports whether err says the command may not have reached a
// node that serves its slot: a connection refused, cut or timed out, or a
// cluster that says it is down.
func unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) ||
		goredis.HasErrorPrefix(err, "CLUSTERDOWN") || goredis.HasErrorPrefix(err, "MASTERDOWN")
}

func (g goRedis) EvalSHA(ctx context.Context, sha1 string, keys []string, args []any) ([]int64, error) {
	return g.run(ctx, "evalsha", sha1, keys, args)
}

func (g goRedis) Eval(ctx context.Context, src string, keys []string, args []any) ([]int64, error) {
	return g.run(ctx, "eval", src, keys, args)
}

func (g goRedis) Load(ctx context.Context, src string) error {
	load := func(ctx context.Context, c *goredis.Client) error { return c.ScriptLoad(ctx, src).Err() }
	switch c := g.c.(type) {
	case *goredis.ClusterClient:
		return c.ForEachMaster(ctx, load)
	case *goredis.Ring:
		return c.ForEachShard(ctx, load)
	default:
		return g.c.ScriptLoad(ctx, src).Err()
	}
}

// isNoScript reports whether err says the server lacks the script, for
// clients that do not wrap ErrNoScript.
func isNoScript(err error) bool {
	return errors.Is(err, ErrNoScript) || strings.HasPrefix(err.Error(), "NOSCRIPT")
}
