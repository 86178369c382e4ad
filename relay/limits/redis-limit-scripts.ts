// The Lua scripts of the limits kept in Redis (see RedisRateLimiter): each runs atomically on Redis.

/**
 * The window's bookkeeping, shared by every script: a key's entries leave once older than the window. Per key
 * (its id in a hash tag, so a cluster keeps them on one node): `req`, the requests by time; `tok`, the token
 * charges by time (a request's, or a late settle's); `amt`, each charge's tokens; `sum`, their total. Time is
 * Redis's own (`TIME`), so relays whose clocks differ still share one window.
 */
const AGE = `
local req, tok, amt, sum = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local window = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cutoff = now - window
local expired = redis.call('ZRANGEBYSCORE', tok, '-inf', cutoff)
if #expired > 0 then
  local freed = 0
  for _, id in ipairs(expired) do freed = freed + (tonumber(redis.call('HGET', amt, id)) or 0) end
  redis.call('HDEL', amt, unpack(expired))
  redis.call('ZREMRANGEBYSCORE', tok, '-inf', cutoff)
  redis.call('DECRBY', sum, freed)
end
redis.call('ZREMRANGEBYSCORE', req, '-inf', cutoff)
local function touch()
  -- The rate window's four keys only: a budget's count keeps its own expiry (a week past its period).
  for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], window * 2) end
end
local function reset()
  local newest = redis.call('ZRANGE', tok, -1, -1, 'WITHSCORES')
  if #newest == 0 then return 0 end
  return tonumber(newest[2]) + window - now
end
`;

/**
 * The key's budget lines (KEYS[5..]): each one's count in its period (tokens used and reserved), made from its
 * seed (read from the usage counts by the relay) when Redis holds none yet, and kept until a week past its
 * period's end. ARGV from \`first\`: per line its limit, its seed (-1: none read; the script then answers
 * 'unseeded' and the line's place) and when its count expires. Sets \`room\` (the least left of every line;
 * nil without lines), or returns the line that has no count and no seed.
 */
const BUDGETS = `
local function budgets(n, first)
  local room, tight, tightUsed = nil, 0, 0
  for i = 1, n do
    local k = KEYS[4 + i]
    local base = first + (i - 1) * 3
    local limit, seed = tonumber(ARGV[base]), tonumber(ARGV[base + 1])
    local v = redis.call('GET', k)
    if not v then
      if seed < 0 then return nil, i end
      redis.call('SET', k, seed)
      redis.call('PEXPIREAT', k, tonumber(ARGV[base + 2]))
      v = seed
    end
    v = tonumber(v)
    if room == nil or limit - v < room then room, tight, tightUsed = limit - v, i, v end
  end
  return room, 0, tight, tightUsed
end
`;

/**
 * Admits one request or refuses it, in one atomic step: ARGV window, rpm (-1: none), tpm (-1: none), the
 * estimate, the admission's id, the number of budget lines, the tokens wanted of them and the least taken, then
 * the lines' (see BUDGETS). Answers {admitted 1|0, refusal, wait ms (for a budget's refusal: that line's count),
 * requests, tokens, reset ms, granted, left of the budgets (-1 without lines), the line that refused or has no count}.
 */
export const ADMIT = `${AGE}${BUDGETS}
local rpm, tpm, estimate, id = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local n, want, least = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local count = redis.call('ZCARD', req)
local used = tonumber(redis.call('GET', sum) or '0')
local room, missing, tight, tightUsed = budgets(n, 9)
if missing and missing > 0 then return {0, 'unseeded', 0, count, used, reset(), 0, -1, missing} end
local left = room or -1
if rpm >= 0 and count >= rpm then
  local at = redis.call('ZRANGE', req, count - rpm, count - rpm, 'WITHSCORES')
  return {0, 'requests', tonumber(at[2]) + window - now, count, used, reset(), 0, left, 0}
end
if tpm >= 0 then
  if estimate > tpm then return {0, 'too_large', window, count, used, reset(), 0, left, 0} end
  if used + estimate > tpm then
    local wait, freed = window, 0
    local entries = redis.call('ZRANGE', tok, 0, -1, 'WITHSCORES')
    for i = 1, #entries, 2 do
      freed = freed + (tonumber(redis.call('HGET', amt, entries[i])) or 0)
      if used - freed + estimate <= tpm then
        wait = tonumber(entries[i + 1]) + window - now
        break
      end
    end
    return {0, 'tokens', wait, count, used, reset(), 0, left, 0}
  end
end
local granted = 0
if room then
  if room < least then return {0, 'budget', tightUsed, count, used, reset(), 0, left, tight} end
  granted = math.min(want, room)
  for i = 1, n do redis.call('INCRBY', KEYS[4 + i], granted) end
  left = room - granted
end
if rpm < 0 and tpm < 0 then return {1, '', 0, count, used, 0, granted, left, 0} end
redis.call('ZADD', req, now, id)
redis.call('ZADD', tok, now, id)
redis.call('HSET', amt, id, estimate)
redis.call('INCRBY', sum, estimate)
touch()
return {1, '', 0, count + 1, used + estimate, window, granted, left, 0}
`;

/**
 * Replaces an admission's estimate with what it used (ARGV window, tokens, id, whether the key has a tpm, its
 * budget lines' number and what to add to them: the tokens used less what they hold of it). An admission that
 * left the window while it ran is charged now, in the window current when it ends; its budgets, in the period
 * it was admitted in.
 */
export const SETTLE = `${AGE}
local tokens, id, limited = tonumber(ARGV[2]), ARGV[3], ARGV[4] == '1'
for i = 1, tonumber(ARGV[5]) do
  if redis.call('EXISTS', KEYS[4 + i]) == 1 then redis.call('INCRBY', KEYS[4 + i], tonumber(ARGV[6])) end
end
local old = redis.call('HGET', amt, id)
if old then
  redis.call('HSET', amt, id, tokens)
  redis.call('INCRBY', sum, tokens - tonumber(old))
elseif limited and tokens > 0 then
  local late = id .. ':late'
  redis.call('ZADD', tok, now, late)
  redis.call('HSET', amt, late, tokens)
  redis.call('INCRBY', sum, tokens)
end
touch()
return 1
`;

/** Gives back everything an admission took (ARGV window, id, its budget lines' number and what they hold of it; its late charge too). */
export const REFUND = `${AGE}
local id = ARGV[2]
for i = 1, tonumber(ARGV[3]) do
  if redis.call('EXISTS', KEYS[4 + i]) == 1 then redis.call('DECRBY', KEYS[4 + i], tonumber(ARGV[4])) end
end
for _, entry in ipairs({id, id .. ':late'}) do
  local old = redis.call('HGET', amt, entry)
  if old then
    redis.call('DECRBY', sum, tonumber(old))
    redis.call('HDEL', amt, entry)
    redis.call('ZREM', tok, entry)
  end
end
redis.call('ZREM', req, id)
return 1
`;

/** The window and budgets as they stand: ARGV window, the budget lines' number, then theirs. Answers {requests, tokens, reset ms, left of the budgets (-1: none), the line with no count}. */
export const READ = `${AGE}${BUDGETS}
local room, missing = budgets(tonumber(ARGV[2]), 3)
if missing and missing > 0 then return {0, 0, 0, -1, missing} end
return {redis.call('ZCARD', req), tonumber(redis.call('GET', sum) or '0'), reset(), room or -1, 0}
`;

/** Adds ARGV[i] to each budget count KEYS[i] Redis still holds (one organization's, gathered over a moment). */
export const ADJUST = `
for i, k in ipairs(KEYS) do
  if redis.call('EXISTS', k) == 1 then redis.call('INCRBY', k, tonumber(ARGV[i])) end
end
return 1
`;


/**
 * Admits one organization's requests of keys with budgets and no rate limits, several at once (those that
 * arrived in one turn of a relay's event loop), each checked and reserved in order, atomically. KEYS: the budget
 * counts they touch. ARGV: the counts' number m, per count its limit, its seed (-1: none read) and when it
 * expires; then per admission: its lines' number n, the tokens wanted and the least taken, then n indexes of
 * KEYS. A count Redis lacks and has no seed for: nothing is done, and the answer is {-1, its indexes…}. Else,
 * per admission four numbers: {1, granted, left of its budgets, 0} or {0, the refusing line (its place among
 * the admission's lines, from 1), left, that line's count}.
 */
export const ADMIT_BUDGETS = `
local m = tonumber(ARGV[1])
local count, limit, missing = {}, {}, {}
for i = 1, m do
  local v = redis.call('GET', KEYS[i])
  limit[i] = tonumber(ARGV[2 + (i - 1) * 3])
  if v then count[i] = tonumber(v)
  elseif tonumber(ARGV[3 + (i - 1) * 3]) < 0 then missing[#missing + 1] = i end
end
if #missing > 0 then
  table.insert(missing, 1, -1)
  return missing
end
for i = 1, m do
  if count[i] == nil then
    count[i] = tonumber(ARGV[3 + (i - 1) * 3])
    redis.call('SET', KEYS[i], count[i])
    redis.call('PEXPIREAT', KEYS[i], tonumber(ARGV[4 + (i - 1) * 3]))
  end
end
local added, out = {}, {}
local p = 2 + m * 3
while p <= #ARGV do
  local n, want, least = tonumber(ARGV[p]), tonumber(ARGV[p + 1]), tonumber(ARGV[p + 2])
  local room, tight = nil, 0
  for j = 1, n do
    local i = tonumber(ARGV[p + 2 + j])
    if room == nil or limit[i] - count[i] < room then room, tight = limit[i] - count[i], j end
  end
  if room < least then
    local i = tonumber(ARGV[p + 2 + tight])
    out[#out + 1] = 0; out[#out + 1] = tight; out[#out + 1] = room; out[#out + 1] = count[i]
  else
    local granted = math.min(want, room)
    for j = 1, n do
      local i = tonumber(ARGV[p + 2 + j])
      count[i] = count[i] + granted
      added[i] = (added[i] or 0) + granted
    end
    out[#out + 1] = 1; out[#out + 1] = granted; out[#out + 1] = room - granted; out[#out + 1] = 0
  end
  p = p + 3 + n
end
for i, a in pairs(added) do redis.call('INCRBY', KEYS[i], a) end
return out
`;
