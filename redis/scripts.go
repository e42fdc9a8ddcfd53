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

// luaArgs reads the arguments every script begins with: now (microseconds,
// or -1 for the server's TIME) and the cost n, sent as -1-n for a dry call
// (decide, write nothing, report the state before the call; the Go side
// never sends a negative cost). A block of arguments per key follows them:
// the key's TTL, then a fixed number of arguments per rule. With one key the
// rules are the arguments left, so their number is not sent (one is the
// flag); with several, each block has the key's number of rules after its
// TTL. Every argument costs the server a string object and a Lua string, so
// none is sent that the script can infer.
//
// The scripts read every number from a string by arithmetic (ARGV[i] + 0):
// Lua converts it as tonumber does, at half the cost of calling tonumber.
// The arguments are decimal integers that the Go side formats; TIME replies
// with two.
//
// int formats a whole number for a command that takes an integer (an expiry):
// Redis 7.2.0 to 7.2.4 send a Lua number that is a multiple of 10^8 to a
// command in exponent form ("1e+08", "2e+08"), which PX, PXAT, PEXPIRE and
// PEXPIREAT refuse (fixed in 7.2.5), so the scripts never pass those commands
// a bare number. '%.0f' is exact below 2^53 and never uses an exponent ('%d'
// goes through a C long, 32 bits on some builds).
const luaArgs = `local function int(x) return string.format('%.0f', x) end
local now = ARGV[1] + 0
local n = ARGV[2] + 0
local dry = n < 0
if dry then n = -1 - n end
local one = #KEYS == 1
`

// luaServerTime makes now the server's clock, in microseconds since the Unix
// epoch, when the caller passed -1; srv says it did.
const luaServerTime = `local srv = now < 0
if srv then
  local tm = redis.call('TIME')
  now = tm[1] * 1000000 + tm[2]
end
`

func newScript(src string) script {
	h := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(h[:])}
}

// The three scripts share the reply: {admitted (0 or 1), at, ready, remaining
// per rule...}, instants in microseconds since the Unix epoch. at is the
// instant decided at; ready is the earliest instant at which the cost would
// fit if nothing else were admitted (at itself when admitted), or -1 when it
// never can. A refused call runs no write command.
//
// Every number is a Lua double; the scripts keep every value below 2^53 so
// that all arithmetic is exact (see the ranges in limiter.go).

// logScript is the exact sliding log, for one key or several at once. Each
// key holds a string: a header, then a ring of 6-byte slots, each a
// little-endian unsigned integer v: below 2^46 for an empty slot (0, or the
// mark below), else 2^47 + (stamp - base) + 1, whose top bit is set. Stamps
// are written in
// non-decreasing order, from slot 0 round the ring. The header holds
// little-endian doubles: the key's base instant (microseconds) and exp, the
// instant on the server's clock (microseconds, a multiple of 1000) up to
// which the key is known to live, or 0 when that is unknown.
//
// A log of at most 8 KiB has cap+1 slots and stores no head (writing it
// would cost a write command per decision): the slot after the newest stamp
// holds the mark, six bytes of 1 (empty: 0x010101010101 is below 2^46), and
// no other slot does, so the head is where string.find first meets it. No
// run of six bytes of 1 can straddle two written slots, since the last byte
// of each has its top bit set, so that match is always a whole slot. (Six
// zero bytes would do as well, but string.find's memchr stops at every byte
// equal to the pattern's first, and each stamp holds a zero byte near its
// top while its offset is below 2^32 µs, 71 minutes; a byte of 1 is as rare
// as any other in a stamp's low bytes.) The slots after the mark that were
// never written are 0. Its header is base, exp: 16+6*(cap+1) bytes, so up
// to cap 1361. A
// longer log is read with GETRANGE, where a search would cost a command per
// probe, so it has cap slots and keeps its head (the next slot to write) in
// the header: base, head, exp, then the slots, 24+6*cap bytes.
//
// ARGV (see luaArgs): now, n, then for each key in KEYS its ttl in
// milliseconds, and limit and window (microseconds) for each rule; cap is
// the key's largest limit. All keys are decided at one
// instant t: now, or the newest stamp of any key when that is later (stale
// instants never move state backwards).
//
// Rule (l, w) admits n at t iff the (l-n+1)-th newest stamp of its key is
// empty or at most t-w: then at most l-n stamps lie in (t-w, t]. The count
// behind "remaining" is a binary search over the newest l stamps, which
// starts from what that probe found. The call is admitted iff every rule of
// every key admits it; every read comes before every write. A log of at most
// 8 KiB is read with one GET. A longer one reads its newest 128 stamps with
// one GETRANGE (two when they wrap round the ring); a count that reaches
// further reads one 6-byte slot per GETRANGE until its search has narrowed to
// at most 128 stamps, which it then reads at once. So a decision reads
// O(rules * log(limit)) stamps whatever the limit. An
// admission writes the n new stamps in place with SETRANGE (and the mark
// after them; two pieces when the ring wraps; and the head of a long
// log). A new key is created whole with SET.
//
// Every key outlives each admission by at least ttl. On the server's clock
// (now -1) an admission at t (TIME's instant, or the newest stamp of the
// call's keys when that is later: decisions stay at t until the server's
// clock passes it) leaves the expiry alone while t + ttl <= exp, so most
// admissions run one write command and nothing else; otherwise it sets the
// expiry to the absolute millisecond e = floor(t/1ms) + 2*ttl (PEXPIREAT,
// or SET ... PXAT for a whole write) and stores e in exp. Until 2026-11-25
// e was measured from TIME's instant even when t was later, so a key could
// expire while its newest stamp still counted. Redis keeps a key
// through its expiry millisecond, so exp never claims more than Redis keeps.
// exp trusts that nothing else shortens the key's TTL. With the caller's
// instants the script has no server clock: it sets exp to 0 (unknown) and,
// when the key's TTL is below ttl, sets it to twice ttl (PTTL, PEXPIRE); a
// whole write sets it with SET ... PX.
//
// Offsets are below 2^47-1, so a key whose base is more than that before t
// is re-based first: the new base is t - 2^46 (the longest window), every
// stamp before it is moved up to it (it stays outside every window at t and
// after), and the whole string is written back with SET, with its expiry as
// for a new key. A key lives at most twice its longest window after its last
// admission, so this happens only to a key admitted without a long pause for
// 4.5 years.
var logScript = newScript(luaArgs + luaServerTime + `local MAXOFF = 140737488355326
local MAXW = 70368744177664
local TOP = 140737488355328
local MARK, MARKV = '\1\1\1\1\1\1', 1103823438081
local floor = math.floor
local unpack, pack = struct.unpack, struct.pack
-- slots returns the bytes of the m slots of a long log (one of R slots)
-- from slot j on: one GETRANGE, or two when they wrap round the ring.
local function slots(key, j, m, R)
  if j + m <= R then
    return redis.call('GETRANGE', key, 24 + 6 * j, 23 + 6 * (j + m))
  end
  return redis.call('GETRANGE', key, 24 + 6 * j, 23 + 6 * R) .. redis.call('GETRANGE', key, 24, 23 + 6 * (j + m - R))
end
local ks = {}
local a = 3
for i = 1, #KEYS do
  local key = KEYS[i]
  local nr, r0 = (#ARGV - 3) / 2, a + 1
  if not one then nr, r0 = ARGV[a + 1] + 0, a + 2 end
  local cap = 0
  for r = 0, nr - 1 do
    local l = ARGV[r0 + 2 * r] + 0
    if l > cap then cap = l end
  end
  local hdr, R = 16, cap + 1
  if 16 + 6 * R > 8192 then hdr, R = 24, cap end
  local raw, len, blk = nil, 0, nil
  if hdr == 16 then
    raw = redis.call('GET', key)
    if raw then len = #raw else raw = nil end
  else
    len = redis.call('STRLEN', key)
  end
  if len ~= 0 and len ~= hdr + 6 * R then
    return redis.error_reply('ERR slidelimit: key ' .. key .. ' holds ' .. len .. ' bytes, not a log of capacity ' .. cap)
  end
  -- v is the slot of the newest stamp (0 if none).
  local head, base, exp, v = 0, 0, 0, 0
  if raw then
    base, exp = unpack('<dd', raw)
    local f = string.find(raw, MARK, 17, true)
    if not f or (f - 17) % 6 ~= 0 then
      return redis.error_reply('ERR slidelimit: key ' .. key .. ' holds a log without its empty slot')
    end
    head = (f - 17) / 6
    v = unpack('<I6', raw, 17 + 6 * ((head - 1) % R))
  elseif len ~= 0 then
    base, head, exp = unpack('<ddd', redis.call('GETRANGE', key, 0, 23))
    -- The newest 128 stamps at once, positions 1 to 128 in slots head-128
    -- to head-1 (mod R): position p starts at byte 6*(128-p)+1 of blk.
    blk = slots(key, (head - 128) % R, 128, R)
    v = unpack('<I6', blk, 763)
  end
  if v > TOP and now < base + v - TOP - 1 then now = base + v - TOP - 1 end
  ks[i] = {key, cap, ARGV[a] + 0, nr, r0, raw, len, head, base, R, hdr, exp, v, blk}
  a = r0 + 2 * nr
end
local ok = true
local ready = now
local out, no = {0, now, ready}, 3
-- A stamp lies in (now-w, now] iff its slot exceeds lim = now-w-base+TOP+1
-- (stamps are at most now; an empty slot, below 2^46, never does: now >=
-- base and w <= 2^46). The kk-th newest stamp is in slot (head-kk) mod R;
-- lo..hi brackets the count of the newest ones that lie in the window.
for i = 1, #KEYS do
  local k = ks[i]
  local key, cap, raw, head, base, R, hdr, blk = k[1], k[2], k[6], k[8], k[9], k[10], k[11], k[14]
  for r = 0, k[4] - 1 do
    local l = ARGV[k[5] + 2 * r] + 0
    local w = ARGV[k[5] + 2 * r + 1] + 0
    local lim = now - w - base + TOP + 1
    local lo, hi = 0, l
    if cap < hi then hi = cap end
    -- No stamp in the window when the newest is not (or there is none);
    -- fewer than 128 when the 128th newest of a long log is not.
    if k[13] <= lim then
      hi = 0
    elseif blk and hi > 127 and unpack('<I6', blk, 1) <= lim then
      hi = 127
    end
    if n > l then
      ok = false
      ready = -1
    elseif n > 0 and l - n + 1 <= hi then
      -- Past hi the (l-n+1)-th newest stamp is empty or out of the
      -- window: the rule admits.
      local p = l - n + 1
      local j = (head - p) % R
      local v
      if raw then
        v = unpack('<I6', raw, 17 + 6 * j)
      elseif p <= 128 then
        v = unpack('<I6', blk, 6 * (128 - p) + 1)
      else
        v = unpack('<I6', slots(key, j, 1, R))
      end
      if v > lim then
        ok = false
        local s = base + v - TOP - 1
        if ready >= 0 and s + w > ready then ready = s + w end
        lo = l - n + 1
      else
        hi = l - n
      end
    end
    if raw then
      -- The offset of slot (head-mid) mod R, without the modulo: mid is in
      -- 1..R.
      local hp, top = 17 + 6 * head, 6 * R
      while lo < hi do
        -- mid = floor((lo+hi+1)/2), by arithmetic: a call to math.floor
        -- costs more.
        local mid = lo + hi + 1
        mid = (mid - mid % 2) / 2
        local p = hp - 6 * mid
        if p < 17 then p = p + top end
        if unpack('<I6', raw, p) > lim then lo = mid else hi = mid - 1 end
      end
    else
      -- A long log: past the newest 128 (all in the window when hi is
      -- above 128), one slot per GETRANGE while the range is long, then
      -- its slots at once (in two pieces when they wrap round the ring): a
      -- command costs far more than the bytes it reads. The newest 128
      -- are in blk.
      if hi > 128 then
        if lo < 128 then lo = 128 end
        while hi - lo > 128 do
          local mid = lo + hi + 1
          mid = (mid - mid % 2) / 2
          local j = (head - mid) % R
          if unpack('<I6', slots(key, j, 1, R)) > lim then lo = mid else hi = mid - 1 end
        end
        if lo < hi then
          -- Positions hi down to lo+1 are slots (head-hi) mod R on, so
          -- position p starts at byte 6*(top-p)+1 of rng.
          local top = hi
          local rng = slots(key, (head - hi) % R, hi - lo, R)
          while lo < hi do
            local mid = lo + hi + 1
            mid = (mid - mid % 2) / 2
            if unpack('<I6', rng, 6 * (top - mid) + 1) > lim then lo = mid else hi = mid - 1 end
          end
        end
      end
      while lo < hi do
        local mid = lo + hi + 1
        mid = (mid - mid % 2) / 2
        if unpack('<I6', blk, 6 * (128 - mid) + 1) > lim then lo = mid else hi = mid - 1 end
      end
    end
    no = no + 1
    out[no] = l - lo
  end
end
out[3] = ready
if ok and n > 0 and not dry then
  for j = 4, #out do out[j] = out[j] - n end
  for i = 1, #KEYS do
    local k = ks[i]
    local key, ttl, head, base, R, hdr, exp = k[1], k[3], k[8], k[9], k[10], k[11], k[12]
    -- e: the new expiry in milliseconds on the server's clock, if it must
    -- be set; nexp: the header's new exp.
    local e, nexp = nil, exp
    if srv then
      if now + 1000 * ttl > exp then
        e = floor(now / 1000) + 2 * ttl
        nexp = 1000 * e
      end
    else
      nexp = 0
    end
    local nh = (head + n) % R
    if k[7] == 0 or now - base > MAXOFF then
      local b, body = now, nil
      if k[7] == 0 then
        body = string.rep(pack('<I6', TOP + 1), n)
        if hdr == 16 then
          body = body .. MARK .. string.rep('\0', 6 * (R - n - 1))
        else
          body = body .. string.rep('\0', 6 * (R - n))
        end
      else
        local raw = k[6] or redis.call('GET', key)
        b = now - MAXW
        local slots = {}
        for j = 0, R - 1 do
          local v = unpack('<I6', raw, hdr + 1 + 6 * j)
          if v <= TOP then
            v = 0
          else
            local s = base + v - TOP - 1
            if s < b then s = b end
            v = TOP + s - b + 1
          end
          slots[j + 1] = pack('<I6', v)
        end
        local p = pack('<I6', TOP + now - b + 1)
        for j = head, head + n - 1 do slots[j % R + 1] = p end
        if hdr == 16 then slots[nh + 1] = MARK end
        body = table.concat(slots)
      end
      -- A whole write replaces the expiry: on the server's clock it is set
      -- afresh.
      local px, ms = 'PX', 2 * ttl
      if srv then
        e = floor(now / 1000) + 2 * ttl
        nexp = 1000 * e
        px, ms = 'PXAT', e
      end
      if hdr == 16 then
        body = pack('<dd', b, nexp) .. body
      else
        body = pack('<ddd', b, nh, nexp) .. body
      end
      redis.call('SET', key, body, px, int(ms))
    else
      local s
      if n == 1 and hdr == 16 then
        s = pack('<I6I6', TOP + now - base + 1, MARKV)
      else
        s = string.rep(pack('<I6', TOP + now - base + 1), n)
        if hdr == 16 then s = s .. MARK end
      end
      local m = #s / 6
      local first = R - head
      if m <= first then
        redis.call('SETRANGE', key, hdr + 6 * head, s)
      else
        redis.call('SETRANGE', key, hdr + 6 * head, string.sub(s, 1, 6 * first))
        redis.call('SETRANGE', key, hdr, string.sub(s, 6 * first + 1))
      end
      if hdr == 24 then
        if nexp ~= exp then
          redis.call('SETRANGE', key, 8, pack('<dd', nh, nexp))
        else
          redis.call('SETRANGE', key, 8, pack('<d', nh))
        end
      elseif nexp ~= exp then
        redis.call('SETRANGE', key, 8, pack('<d', nexp))
      end
      if e then
        redis.call('PEXPIREAT', key, int(e))
      elseif not srv and redis.call('PTTL', key) < ttl then
        redis.call('PEXPIRE', key, int(2 * ttl))
      end
    end
  end
end
if ok then out[1] = 1 end
return out
`)

// windowScript is the two-counter window, one per rule, for one key or
// several at once, all or nothing. Each key holds a string of 24 bytes per
// rule: three little-endian doubles, the start of the rule's current window
// (microseconds), the cost admitted in the window before it (prev) and in it
// (curr); then exp, a double: the instant on the server's clock
// (microseconds, a whole millisecond) up to which the key is known to live,
// 0 when unknown. ARGV (see luaArgs): now, n, then for each key in KEYS the
// least TTL (microseconds), and limit and window (microseconds) for each
// rule.
//
// A key lives until the last rule's state expires: ws+2w, at the least the
// least TTL after now; call that instant need. An admission on the server's
// clock whose need is at most exp writes the rules' states in place
// (SETRANGE at 0), which leaves exp and the key's TTL as they are; otherwise
// it writes the key whole with SET ... PXAT e, e = ceil(far/1ms), and stores
// e in exp, where far is need, or now plus twice the least TTL when that is
// later. So a key refreshes its expiry once per window (once per least TTL
// when that is longer), not on every admission (a TTL set with the value
// costs ~0.8 µs of server time, an in-place write less than a whole one),
// and lives at most twice the least TTL after its last admission when that
// is the longer. Redis keeps a key through its
// expiry millisecond, so exp never claims more than Redis keeps, unless
// something else shortens the key's TTL (as for the log). With the caller's
// instants the script has no server clock: it writes the key whole with
// SET ... PX, the time to need rounded up to a millisecond plus one, and
// stores exp 0.
//
// Each rule decides as package window does: at t = max(now, start), with
// el = t - ws the time into the window in effect at t and d = w - el, it
// admits n iff prev*d + (curr+n)*w <= limit*w, that is iff r = limit-curr-n
// is at least 0 and prev*d <= r*w. Its remaining is limit-curr-q (less n
// when admitted, at least 0), q = ceil(prev*d/w) the estimate's share of
// prev. A cost of 0 is admitted whatever the estimate, even one above the
// limit (prev weighs in).
//
// The products reach 2^76, beyond a double's exact range. Limits are below
// 2^26 and windows at most 2^50 microseconds, so each operand is an integer
// and a product that a double computes below 2^53 is exact: the exact one is
// an integer, and one at or above 2^53 cannot round below it. Below 2^53 the
// script compares the products directly, and computes floor(x/c) as the
// floor of the double x/c: a quotient below an integer rounds up to it only
// when x is at least 2^53. So q = floor(x/w), plus one when q*w < x (x =
// prev*d; q*w <= x is exact too), and ready's quotients likewise. At or
// above 2^53 (a day's window with a prev above 10^5, a year's above 300)
// it splits the products into two 26-bit limbs: exact() builds those helpers
// on first need, since creating closures on every call costs more than the
// arithmetic they do. Each key's new state is packed in
// the same pass; it is written only when the call is admitted.
var windowScript = newScript(luaArgs + luaServerTime + `local E = 9007199254740992
local floor = math.floor
local X
-- exact() returns le(a1, b1, a2, b2): a1*b1 <= a2*b2, and muldiv(a, b, c):
-- floor(a*b/c), both exact for a below 2^26 and b below 2^52.
local function exact()
  local B = 67108864
  local function mul(a, b)
    local bh = floor(b / B)
    local lo = a * (b - bh * B)
    local c = floor(lo / B)
    return a * bh + c, lo - c * B
  end
  local function div(x, c)
    local q = floor(x / c)
    while q * c > x do q = q - 1 end
    while (q + 1) * c <= x do q = q + 1 end
    return q
  end
  local function le(a1, b1, a2, b2)
    local h1, l1 = mul(a1, b1)
    local h2, l2 = mul(a2, b2)
    return h1 < h2 or (h1 == h2 and l1 <= l2)
  end
  local function muldiv(a, b, c)
    local x = a * b
    if x < E then return div(x, c) end
    local h, l = mul(a, b)
    local q1 = div(h, c)
    return q1 * B + div((h - q1 * c) * B + l, c)
  end
  return {le = le, muldiv = muldiv}
end
local ok = true
local ready = now
local out, no = {0, now, 0}, 3
local bodies, ttls, fars, exps = {}, {}, {}, {}
local unpack, pack = struct.unpack, struct.pack
local a = 3
for i = 1, #KEYS do
  local key = KEYS[i]
  local least = ARGV[a] + 0
  local ttl = least
  local nr, r0 = (#ARGV - 3) / 2, a + 1
  if not one then nr, r0 = ARGV[a + 1] + 0, a + 2 end
  local raw = redis.call('GET', key)
  local exp = 0
  if raw then
    if #raw ~= 24 * nr + 8 then
      return redis.error_reply('ERR slidelimit: key ' .. key .. ' holds ' .. #raw .. ' bytes, not a window of ' .. nr .. ' rules')
    end
    exp = unpack('<d', raw, 24 * nr + 1)
  end
  local body
  for r = 0, nr - 1 do
    local l = ARGV[r0 + 2 * r] + 0
    local w = ARGV[r0 + 1 + 2 * r] + 0
    local ws, p, c, t = now, 0, 0, now
    if raw then
      local start, pv, cv = unpack('<ddd', raw, 1 + 24 * r)
      if t < start then t = start end
      local el = t - start
      if el < w then ws, p, c = start, pv, cv
      elseif el < 2 * w then ws, p, c = start + w, cv, 0
      else ws = t end
    end
    local d = w - (t - ws)
    local q = 0
    if p > 0 then
      local x = p * d
      if x < E then
        q = floor(x / w)
        if q * w < x then q = q + 1 end
      else
        X = X or exact()
        q = floor(p * (d / w))
        while q > 0 and X.le(p, d, q - 1, w) do q = q - 1 end
        while not X.le(p, d, q, w) do q = q + 1 end
      end
    end
    no = no + 1
    out[no] = l - c - q
    if n > l then
      ok = false
      ready = -1
    elseif n > 0 then
      local rr = l - c - n
      local fit = rr >= 0
      if fit and p > 0 then
        local x, y = p * d, rr * w
        if x < E and y < E then
          fit = x <= y
        else
          X = X or exact()
          fit = X.le(p, d, rr, w)
        end
      end
      if not fit then
        ok = false
        if ready >= 0 then
          -- The cost fits from the instant prev's share has shrunk enough,
          -- or from the next window, or once curr's share has.
          local u
          local f = 0
          if rr >= 0 and p > 0 then
            local x = rr * w
            if x < E then f = floor(x / p) else X = X or exact(); f = X.muldiv(rr, w, p) end
          end
          if f > 0 then u = ws + w - f
          elseif c <= l - n then u = ws + w
          else
            local x = (l - n) * w
            if x < E then u = ws + 2 * w - floor(x / c)
            else X = X or exact(); u = ws + 2 * w - X.muldiv(l - n, w, c) end
          end
          if u > ready then ready = u end
        end
      end
    end
    local st = pack('<ddd', ws, p, c + n)
    if body then body = body .. st else body = st end
    local e = ws + 2 * w - now
    if e > ttl then ttl = e end
  end
  -- ttl: the least time the key must live from now; far: the time a
  -- refreshed expiry gives it, twice the least TTL when that is longer.
  local far = 2 * least
  if far < ttl then far = ttl end
  bodies[i], ttls[i], fars[i], exps[i] = body, ttl, far, exp
  a = r0 + 2 * nr
end
local admit = ok and n > 0 and not dry
if admit then
  for i = 1, #KEYS do
    if not srv then
      redis.call('SET', KEYS[i], bodies[i] .. pack('<d', 0), 'PX', int(floor((ttls[i] + 999) / 1000) + 1))
    elseif now + ttls[i] <= exps[i] then
      redis.call('SETRANGE', KEYS[i], '0', bodies[i])
    else
      local e = -floor(-(now + fars[i]) / 1000)
      redis.call('SET', KEYS[i], bodies[i] .. pack('<d', 1000 * e), 'PXAT', int(e))
    end
  end
end
if ok then out[1] = 1 end
out[3] = ready
for j = 4, #out do
  local left = out[j]
  if admit then left = left - n end
  if left < 0 then left = 0 end
  out[j] = left
end
return out
`)

// bucketScript is the sub-window counters of NewBuckets, for one key or
// several at once, all or nothing. Each key holds a string: two
// little-endian doubles, the instant of the latest admission (microseconds)
// and exp (as the window's), then for each rule k slots of two doubles, a
// sub-window's index (its start divided by the precision) and the cost
// admitted in it; sub-window b lives in slot b mod k. ARGV (see luaArgs): now, n, then for each key in KEYS the least
// TTL (microseconds), and limit, precision p (microseconds) and k =
// ceil(window/p) for each rule.
//
// A stale instant is decided at the latest admission (of any of the keys:
// all are decided at one instant). At t, with b the index of t's sub-window,
// a rule counts the sub-windows b-k+1 .. b and admits n iff their cost plus n
// is at most the limit. When it refuses, the cost fits from the start of the
// first sub-window j > b at which the ones that have left (b-k+1 .. j-k) free
// enough; ready is the latest such start over the refusing rules. A key lives
// until its newest sub-window leaves every rule: (b+k)*p, at the least the
// least TTL after t; call that instant need. A refused call runs no write
// command; each key is read with one GET (at most 16 KiB per rule). An
// admission on the server's clock whose need is at most exp writes the
// latest admission and each rule's slot in place (one SETRANGE each; the TTL
// and exp stay); otherwise it writes the key whole with SET ... PXAT e, e =
// ceil(far/1ms), far = need plus the longest window (or t plus twice the
// least TTL, if later), and stores e in exp: need moves with every
// sub-window, and the margin lets the expiry be set about once per window.
// With the caller's instants it writes the key whole with SET ... PX (need,
// as the window's) and stores exp 0. b = floor(t/p) is
// the floor of the double quotient, exact since t is below 2^53 (see the
// window). A rule's pass over its counters keeps only their sum and the
// current sub-window's cost; the counters by age are read again only when a
// refusal needs ready.
var bucketScript = newScript(luaArgs + luaServerTime + `local unpack, pack, floor = struct.unpack, struct.pack, math.floor
local ks = {}
local a = 3
for i = 1, #KEYS do
  local key = KEYS[i]
  local nr, r0 = (#ARGV - 3) / 3, a + 1
  if not one then nr, r0 = ARGV[a + 1] + 0, a + 2 end
  local size = 16
  for r = 0, nr - 1 do size = size + 16 * (ARGV[r0 + 2 + 3 * r] + 0) end
  local raw = redis.call('GET', key)
  if raw and #raw ~= size then
    return redis.error_reply('ERR slidelimit: key ' .. key .. ' holds ' .. #raw .. ' bytes, not ' .. size .. ' bytes of counters')
  end
  local exp = 0
  if raw then
    local last
    last, exp = unpack('<dd', raw, 1)
    if now < last then now = last end
  else
    raw = nil
  end
  ks[i] = {key, ARGV[a] + 0, nr, r0, raw, nil, exp}
  a = r0 + 3 * nr
end
local ok = true
local ready = now
-- now is final: out collects each rule's limit less its sum, adjusted once
-- the call is decided.
local out, no = {0, now, 0}, 3
for i = 1, #KEYS do
  local k = ks[i]
  local raw = k[5]
  local st = {}
  local off = 17
  for r = 0, k[3] - 1 do
    local l = ARGV[k[4] + 3 * r] + 0
    local p = ARGV[k[4] + 1 + 3 * r] + 0
    local kb = ARGV[k[4] + 2 + 3 * r] + 0
    local b = floor(now / p)
    local sum, c0 = 0, 0
    if raw then
      for s = 0, kb - 1 do
        local sb, c = unpack('<dd', raw, off + 16 * s)
        if c > 0 and sb > b - kb and sb <= b then
          sum = sum + c
          if sb == b then c0 = c end
        end
      end
    end
    st[r] = {off, b, kb, p, c0}
    no = no + 1
    out[no] = l - sum
    if n > l then
      ok = false
      ready = -1
    elseif n > 0 and sum + n > l then
      ok = false
      if ready >= 0 then
        -- Only now are the counters needed by age: cnt[age] is the cost
        -- of sub-window b-age.
        local cnt = {}
        for s = 0, kb - 1 do
          local sb, c = unpack('<dd', raw, off + 16 * s)
          if c > 0 and sb > b - kb and sb <= b then cnt[b - sb] = c end
        end
        local j, s = b, sum
        while s + n > l do
          j = j + 1
          s = s - (cnt[b - j + kb] or 0)
        end
        if j * p > ready then ready = j * p end
      end
    end
    off = off + 16 * kb
  end
  k[6] = st
end
local admit = ok and n > 0 and not dry
if admit then
  for i = 1, #KEYS do
    local key, least, nr, raw, st, exp = ks[i][1], ks[i][2], ks[i][3], ks[i][5], ks[i][6], ks[i][7]
    -- ttl: the least time the key must live from now; longest: the
    -- longest window.
    local ttl, longest = least, 0
    for r = 0, nr - 1 do
      local s = st[r]
      local e = (s[2] + s[3]) * s[4] - now
      if e > ttl then ttl = e end
      if s[3] * s[4] > longest then longest = s[3] * s[4] end
    end
    if srv and now + ttl <= exp then
      -- In place: the latest admission, then each rule's slot.
      redis.call('SETRANGE', key, '0', pack('<d', now))
      for r = 0, nr - 1 do
        local s = st[r]
        redis.call('SETRANGE', key, s[1] - 1 + 16 * (s[2] % s[3]), pack('<dd', s[2], s[5] + n))
      end
    else
      local parts = {''}
      for r = 0, nr - 1 do
        local s = st[r]
        local o, b, k = s[1], s[2], s[3]
        local j = b % k
        local slot = pack('<dd', b, s[5] + n)
        if raw then
          parts[r + 2] = raw:sub(o, o + 16 * j - 1) .. slot .. raw:sub(o + 16 * (j + 1), o + 16 * k - 1)
        else
          parts[r + 2] = string.rep('\0', 16 * j) .. slot .. string.rep('\0', 16 * (k - j - 1))
        end
      end
      if srv then
        local far = ttl + longest
        if far < 2 * least then far = 2 * least end
        local e = -floor(-(now + far) / 1000)
        parts[1] = pack('<dd', now, 1000 * e)
        redis.call('SET', key, table.concat(parts), 'PXAT', int(e))
      else
        parts[1] = pack('<dd', now, 0)
        redis.call('SET', key, table.concat(parts), 'PX', int(floor((ttl + 999) / 1000) + 1))
      end
    end
  end
end
if ok then out[1] = 1 end
out[3] = ready
for j = 4, no do
  local left = out[j]
  if admit then left = left - n end
  if left < 0 then left = 0 end
  out[j] = left
end
return out
`)
