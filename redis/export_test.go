package redis

// RedisKey exposes the Redis key a limiter uses for a user key.
func RedisKey(l *Limiter, key string) (string, error) { return l.redisKey(key) }

// ScriptSHAs returns the digests of the log and window scripts.
func ScriptSHAs() (log, window string) { return logScript.sha, windowScript.sha }
