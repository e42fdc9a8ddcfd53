package redis

import (
	"crypto/sha1"
	"encoding/hex"
)

// script is a Lua script and its SHA-1 digest, the name EVALSHA uses.
type script struct {
	src string
	sha string
}

// luaArgs reads the arguments the window and bucket scripts begin with:
// the key, now (microseconds, or -1 for the server's TIME), the cost n, the
// least TTL (microseconds) and dry ('1': decide without writing).
const luaArgs = `local key = KEYS[1]
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local minttl = tonumber(ARGV[3])
local dry = ARGV[4] == '1'
`

// luaServerTime makes now the server's clock, in microseconds since the Unix
// epoch, when the caller passed -1.
const luaServerTime = `if now < 0 then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
end
`

func newScript(src string) script {
	h := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(h[:])}
}

// Both scripts share the reply: {admitted (0 or 1), at, ready, remaining
// per rule...}, instants in microseconds since the Unix epoch. at is the
// instant decided at; ready is the earliest instant at which the cost would
// fit if nothing else were admitted (at itself when admitted), or -1 when it
// never can. A refused call runs no write command.
//
// Every number is a Lua double; the scripts keep every value below 2^53 so
// that all arithmetic is exact (see the ranges in limiter.go).

// logScript is the exact sliding log. KEYS[1] holds a string of 8*(cap+1)
// bytes: a little-endian double, the ring position of the next stamp, then
// cap stamps (doubles, microseconds; 0 is an empty slot). Stamps are written
// in non-decreasing order: an instant before the newest stamp is treated as
// that stamp. ARGV: cap, now (-1: the server's TIME), n, ttl in milliseconds,
// dry ("1": decide, write nothing, report the state before the call), then
// limit and window (microseconds) for each rule; cap is the largest limit.
//
// Rule (l, w) admits n at t iff the (l-n+1)-th newest stamp is empty or at
// most t-w: then at most l-n stamps lie in (t-w, t]. The count behind
// "remaining" is a binary search over the newest l stamps, made before any
// write (an admission adds n to it). Every read comes before every write; a
// log of at most 8 KiB is read with one GET, a longer one 8 bytes at a time
// with GETRANGE, so a decision reads O(rules * log(limit)) stamps whatever
// the limit. A log of at most 8 KiB is written back whole with one SET (three
// commands per decision, with TIME); a longer one is updated in place with
// SETRANGE (the stamps, in two pieces when the ring wraps, and the head) and
// PEXPIRE, so an admission writes O(n) bytes whatever the limit.
var logScript = newScript(`
local key = KEYS[1]
local cap = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local dry = ARGV[5] == '1'
local nr = (#ARGV - 5) / 2
` + luaServerTime + `local size = 8 * (cap + 1)
local small = size <= 8192
local raw = nil
local len
if small then
  raw = redis.call('GET', key)
  if raw then len = #raw else len = 0; raw = nil end
else
  len = redis.call('STRLEN', key)
end
if len ~= 0 and len ~= size then
  return redis.error_reply('ERR slidelimit: key holds ' .. len .. ' bytes, not a log of capacity ' .. cap)
end
local head = 0
if raw then
  head = struct.unpack('<d', raw, 1)
elseif len ~= 0 then
  head = struct.unpack('<d', redis.call('GETRANGE', key, 0, 7))
end
local function stamp(k)
  if len == 0 or k > cap then return 0 end
  local i = (head - k) % cap
  if raw then return (struct.unpack('<d', raw, 9 + 8 * i)) end
  return (struct.unpack('<d', redis.call('GETRANGE', key, 8 + 8 * i, 15 + 8 * i)))
end
local last = stamp(1)
if now < last then now = last end
local ok = n >= 0
local ready = now
local used = {}
for r = 0, nr - 1 do
  local l = tonumber(ARGV[6 + 2 * r])
  local w = tonumber(ARGV[7 + 2 * r])
  if n > l then
    ok = false
    ready = -1
  elseif n > 0 then
    local s = stamp(l - n + 1)
    if s ~= 0 and s > now - w then
      ok = false
      if ready >= 0 and s + w > ready then ready = s + w end
    end
  end
  local lo, hi = 0, math.min(l, cap)
  while lo < hi do
    local mid = math.floor((lo + hi + 1) / 2)
    local s = stamp(mid)
    if s ~= 0 and s > now - w then lo = mid else hi = mid - 1 end
  end
  used[r] = lo
end
if n < 0 then ready = -1 end
local out = {0, now, ready}
for r = 0, nr - 1 do
  out[4 + r] = tonumber(ARGV[6 + 2 * r]) - used[r]
end
if ok and n > 0 and not dry then
  for r = 0, nr - 1 do out[4 + r] = out[4 + r] - n end
  local p = struct.pack('<d', now)
  if len == 0 then
    local body = string.rep(p, n) .. string.rep('\0', 8 * (cap - n))
    redis.call('SET', key, struct.pack('<d', n % cap) .. body, 'PX', ttl)
  elseif raw then
    local first = math.min(n, cap - head)
    local h = struct.pack('<d', (head + n) % cap)
    local v
    if n > first then
      v = h .. string.rep(p, n - first) .. raw:sub(9 + 8 * (n - first), 8 + 8 * head) .. string.rep(p, first)
    else
      v = h .. raw:sub(9, 8 + 8 * head) .. string.rep(p, n) .. raw:sub(9 + 8 * (head + n))
    end
    redis.call('SET', key, v, 'PX', ttl)
  else
    local first = math.min(n, cap - head)
    redis.call('SETRANGE', key, 8 + 8 * head, string.rep(p, first))
    if n > first then
      redis.call('SETRANGE', key, 8, string.rep(p, n - first))
    end
    redis.call('SETRANGE', key, 0, struct.pack('<d', (head + n) % cap))
    redis.call('PEXPIRE', key, ttl)
  end
end
if ok then out[1] = 1 end
return out
`)

// windowScript is the two-counter window, one per rule, all or nothing.
// KEYS[1] holds a string of 24 bytes per rule: three little-endian doubles,
// the start of the rule's current window (microseconds), the cost admitted
// in the window before it (prev) and in it (curr). ARGV: now (-1: the
// server's TIME), n, the least TTL (microseconds), dry (as for the log), then
// limit and window (microseconds) for each rule. The key lives until the last rule's state
// expires: ws+2w, at the least the least TTL.
//
// Each rule decides as package window does: at t = max(now, start), with
// el = t - ws the time into the window in effect at t, it admits n iff
// prev*(w-el) + (curr+n)*w <= limit*w. The products reach 2^76, beyond a
// double's exact range, so they are computed as two 26-bit limbs (mul);
// limits are below 2^26 and windows below 2^50 microseconds. A cost of 0 is
// admitted whatever the estimate, even one above the limit (prev weighs in).
var windowScript = newScript(luaArgs + `local nr = (#ARGV - 4) / 2
` + luaServerTime + `local B = 67108864
local function mul(a, b)
  local bh = math.floor(b / B)
  local lo = a * (b - bh * B)
  local c = math.floor(lo / B)
  return a * bh + c, lo - c * B
end
local function le(a1, b1, a2, b2)
  local h1, l1 = mul(a1, b1)
  local h2, l2 = mul(a2, b2)
  return h1 < h2 or (h1 == h2 and l1 <= l2)
end
local function div(x, c)
  local q = math.floor(x / c)
  while q * c > x do q = q - 1 end
  while (q + 1) * c <= x do q = q + 1 end
  return q
end
local function muldiv(a, b, c)
  local h, l = mul(a, b)
  local q1 = div(h, c)
  return q1 * B + div((h - q1 * c) * B + l, c)
end
local function fits(l, w, p, c, el, k)
  local r = l - c - k
  if r < 0 then return false end
  if p == 0 then return true end
  return le(p, w - el, r, w)
end
local raw = redis.call('GET', key)
if raw and #raw ~= 24 * nr then
  return redis.error_reply('ERR slidelimit: key holds ' .. #raw .. ' bytes, not a window of ' .. nr .. ' rules')
end
local ok = n >= 0
local ready = now
local st = {}
for r = 0, nr - 1 do
  local l = tonumber(ARGV[5 + 2 * r])
  local w = tonumber(ARGV[6 + 2 * r])
  local ws, p, c, t = now, 0, 0, now
  if raw then
    local start, pv, cv = struct.unpack('<ddd', raw, 1 + 24 * r)
    if t < start then t = start end
    local d = t - start
    if d < w then ws, p, c = start, pv, cv
    elseif d < 2 * w then ws, p, c = start + w, cv, 0
    else ws = t end
  end
  st[r] = {ws, p, c, t, l, w}
  if n > l or n < 0 then
    ok = false
    ready = -1
  elseif n > 0 and not fits(l, w, p, c, t - ws, n) then
    ok = false
    if ready >= 0 then
      local u
      local rr = l - c - n
      local f = 0
      if rr >= 0 and p > 0 then f = muldiv(rr, w, p) end
      if f > 0 then u = ws + w - f
      elseif c <= l - n then u = ws + w
      else u = ws + 2 * w - muldiv(l - n, w, c) end
      if u > ready then ready = u end
    end
  end
end
if ok and n > 0 and not dry then
  local parts = {}
  local ttl = minttl
  for r = 0, nr - 1 do
    local s = st[r]
    s[3] = s[3] + n
    parts[r + 1] = struct.pack('<ddd', s[1], s[2], s[3])
    local e = s[1] + 2 * s[6] - now
    if e > ttl then ttl = e end
  end
  redis.call('SET', key, table.concat(parts), 'PX', math.floor((ttl + 999) / 1000) + 1)
end
local out = {ok and 1 or 0, now, ready}
for r = 0, nr - 1 do
  local s = st[r]
  local p, d, w = s[2], s[6] - (s[4] - s[1]), s[6]
  local q = 0
  if p > 0 then
    q = math.ceil(p * (d / w))
    while q > 0 and le(p, d, q - 1, w) do q = q - 1 end
    while not le(p, d, q, w) do q = q + 1 end
  end
  local left = s[5] - s[3] - q
  if left < 0 then left = 0 end
  out[4 + r] = left
end
return out
`)

// bucketScript is the sub-window counters of NewBuckets, all or nothing.
// KEYS[1] holds a string: a little-endian double, the instant of the latest
// admission (microseconds), then for each rule k slots of two doubles, a
// sub-window's index (its start divided by the precision) and the cost
// admitted in it; sub-window b lives in slot b mod k. ARGV: now (-1: the
// server's TIME), n, the least TTL (microseconds), dry (as for the log),
// then limit, precision p (microseconds) and k = ceil(window/p) for each
// rule.
//
// A stale instant is decided at the latest admission. At t, with b the index
// of t's sub-window, a rule counts the sub-windows b-k+1 .. b and admits n
// iff their cost plus n is at most the limit. When it refuses, the cost fits
// from the start of the first sub-window j > b at which the ones that have
// left (b-k+1 .. j-k) free enough; ready is the latest such start over the
// refusing rules. The key lives until its newest sub-window leaves every
// rule: (b+k)*p, at the least the least TTL. A refused call runs no write
// command; the whole key is read with one GET and written with one SET (at
// most 16 KiB per rule).
var bucketScript = newScript(luaArgs + `local nr = (#ARGV - 4) / 3
` + luaServerTime + `local size = 8
for r = 0, nr - 1 do size = size + 16 * tonumber(ARGV[7 + 3 * r]) end
local raw = redis.call('GET', key)
if raw and #raw ~= size then
  return redis.error_reply('ERR slidelimit: key holds ' .. #raw .. ' bytes, not ' .. size .. ' bytes of counters')
end
if raw then
  local last = struct.unpack('<d', raw, 1)
  if now < last then now = last end
end
local ok = n >= 0
local ready = now
local st = {}
local off = 9
for r = 0, nr - 1 do
  local l = tonumber(ARGV[5 + 3 * r])
  local p = tonumber(ARGV[6 + 3 * r])
  local k = tonumber(ARGV[7 + 3 * r])
  local b = math.floor(now / p)
  while b * p > now do b = b - 1 end
  while (b + 1) * p <= now do b = b + 1 end
  local cnt = {}
  local sum = 0
  if raw then
    for s = 0, k - 1 do
      local sb, c = struct.unpack('<dd', raw, off + 16 * s)
      if c > 0 and sb > b - k and sb <= b then
        cnt[b - sb] = c
        sum = sum + c
      end
    end
  end
  st[r] = {off, b, k, sum, l, p, cnt[0] or 0}
  if n > l or n < 0 then
    ok = false
    ready = -1
  elseif n > 0 and sum + n > l then
    ok = false
    if ready >= 0 then
      local j, s = b, sum
      while s + n > l do
        j = j + 1
        s = s - (cnt[b - j + k] or 0)
      end
      if j * p > ready then ready = j * p end
    end
  end
  off = off + 16 * k
end
local admit = ok and n > 0 and not dry
if admit then
  local parts = {struct.pack('<d', now)}
  local ttl = minttl
  for r = 0, nr - 1 do
    local s = st[r]
    local o, b, k, p = s[1], s[2], s[3], s[6]
    local i = b % k
    local slot = struct.pack('<dd', b, s[7] + n)
    if raw then
      parts[r + 2] = raw:sub(o, o + 16 * i - 1) .. slot .. raw:sub(o + 16 * (i + 1), o + 16 * k - 1)
    else
      parts[r + 2] = string.rep('\0', 16 * i) .. slot .. string.rep('\0', 16 * (k - i - 1))
    end
    local e = (b + k) * p - now
    if e > ttl then ttl = e end
  end
  redis.call('SET', key, table.concat(parts), 'PX', math.floor((ttl + 999) / 1000) + 1)
end
local out = {ok and 1 or 0, now, ready}
for r = 0, nr - 1 do
  local s = st[r]
  local left = s[5] - s[4]
  if admit then left = left - n end
  if left < 0 then left = 0 end
  out[4 + r] = left
end
return out
`)
