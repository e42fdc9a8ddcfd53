// Package redis keeps rate limits in Redis, so that every instance of a
// service shares one limit: an exact sliding log (NewLog), a two-counter
// window (NewWindow) and sub-window counters of a chosen precision
// (NewBuckets), each with several rules at once, all or nothing, and a cost
// per call. It is its own module, so that users of the in-process
// limiters never download a Redis client.
//
// Each decision is one Lua script call on one Redis key, or on several keys
// at once with a Group (per user and per address, per client and global):
// one round trip,
// atomic on the server, whose reply carries everything an HTTP 429 needs
// (admitted, the remaining cost per rule, and when the cost would fit). A
// refused call writes nothing; CheckN asks the same question and records
// nothing. The semantics and the edges follow the
// in-process limiters of this module (docs/api-contract.md): NewLog decides
// exactly as package multi's exact limiter would, NewWindow as package
// window's two-counter formula would, rule by rule; NewBuckets can exceed a
// limit by at most what one sub-window admitted.
//
// Time is the Redis server's clock (TIME) by default, so instances with
// skewed clocks share one clock; AllowN also takes an instant from the
// caller (replays, tests); WaitN waits on the server's clock until a cost
// is admitted. Either way time is counted in whole
// microseconds: instants are truncated to them, windows must be whole
// microseconds, and two calls in the same microsecond are simultaneous.
//
// Keys. A user key becomes one Redis key, "<prefix>:log:{key}",
// "<prefix>:win:{key}" or "<prefix>:bkt:{key}". The prefix names the limit
// (Options.Prefix): limiters of one kind with one prefix share their keys,
// which is how the instances of a service share a limit, so two limits need
// two prefixes. Without a prefix the keys are "slidelimit:log:<rules>:{key}"
// and so on, <rules> being 8 hex digits that name the rules, so that limits
// with different rules never share keys. The braces are a Redis Cluster hash
// tag, so the state of one key lies in one slot and the script touches only
// the keys it was given. A user key with a hash tag of its own
// ("{tenant-7}user:42") keeps it, so that keys sharing a tag share a slot and
// can be decided together by a Group; any other key with braces gets a digest
// of itself as its tag. Every key expires once it carries no information
// (within one to two of its longest window for NewLog, two windows for
// NewWindow, once its newest sub-window has left every rule for NewBuckets,
// and then at most one longest window more), so Redis holds only the keys
// active recently.
//
// Failures. Each decision has a timeout. When Redis fails or is late, the
// Options.OnError policy decides: fail closed (an error and a refusal),
// fail open (admit), or fall back to an in-process exact limiter per key with
// limits the user sets. Scripts are sent by digest (EVALSHA) and by source
// when the server lost them; a decision is never retried after it may have
// reached the server, since running it twice would count it twice.
//
// The Redis client is behind the small Client interface; NewGoRedis adapts
// github.com/redis/go-redis/v9 (one node, Sentinel, Cluster, Ring). NewHTTP
// plugs a Limiter into package httplimit's middleware. docs/redis.md gives
// the data layout, the scripts, the failure policy's cost in accuracy and
// measurements.
package redis
