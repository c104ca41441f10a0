/**
 * One atomic step of Stripe's two limiters ("Scaling your API with rate limiters"): a token bucket and a
 * concurrency limiter whose slots are sorted-set entries scored by their expiry, so a gateway that dies
 * with requests in flight leaks no slot beyond the lease TTL. The clock is Redis's own (TIME), so every
 * gateway replica refills the same bucket at the same pace whatever its local clock says.
 *
 * KEYS[1]  bucket: hash { tokens, ts } (ts in ms)
 * KEYS[2]  leases: sorted set of lease ids scored by expiry in ms
 * ARGV     capacity, refill per second, concurrency, lease TTL in ms, lease id
 * Returns  { outcome, tokens }: outcome 1 allowed, 0 bucket empty, 2 slots full; tokens after the
 *          decision, as a string because Redis truncates Lua numbers to integers.
 */
export const acquireScript = `
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local concurrency = tonumber(ARGV[3])
local lease_ttl = tonumber(ARGV[4])

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000

local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local last = tonumber(state[2])
if tokens == nil or last == nil then
  tokens = capacity
  last = now
end
tokens = math.min(capacity, tokens + math.max(0, now - last) * rate / 1000)

if tokens < 1 then
  return { 0, tostring(tokens) }
end

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= concurrency then
  -- The token is given back by never writing the refilled bucket.
  return { 2, tostring(tokens) }
end

tokens = tokens - 1
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
-- A missing bucket reads as full, so the key may go once it would have refilled completely.
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) * 1000 / rate))
redis.call('ZADD', KEYS[2], now + lease_ttl, ARGV[5])
redis.call('PEXPIRE', KEYS[2], lease_ttl)
return { 1, tostring(tokens) }
`;

/**
 * Pushes one lease's expiry to a lease TTL from now (Redis's clock), only while it is still held: an
 * expired or released lease is not brought back. The set's own TTL follows, so it outlives every lease.
 *
 * KEYS[1]  leases: sorted set of lease ids scored by expiry in ms
 * ARGV     lease TTL in ms, lease id
 * Returns  1 when renewed, 0 when the lease was gone
 */
export const renewScript = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local expiry = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]))
if expiry == nil or expiry <= now then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return 1
`;
