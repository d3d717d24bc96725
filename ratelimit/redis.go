package ratelimit

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/rediseviction"
)

// Redis keeps buckets in Redis (GCRA, one Lua script per Take, Redis's own
// clock), shared by every gateway using the same server and prefix. A
// bucket's key expires when the bucket is full again, so none is lost
// while spent; each owner has a sorted set of the buckets it took from
// that are not full yet, and a Take that would charge it one more than
// MaxKeysPerOwner is refused (TableFull). So an agent inventing keys
// cannot grow Redis without bound: with maxmemory and an evicting
// policy, that growth would push spent buckets out, which then came back
// full.
type Redis struct {
	client   redis.UniversalClient
	prefix   string
	timeout  time.Duration
	perOwner int
}

// RedisOptions configures NewRedis. The zero value is the defaults.
type RedisOptions struct {
	// Prefix is put before every key.
	Prefix string
	// Timeout bounds one Take or Refund (0: 200ms); past it, it fails.
	// It bounds the wait on a stalled server only if the client honours
	// context deadlines (redis.Options.ContextTimeoutEnabled, as sluice
	// serve dials it); otherwise the client's own read timeout does.
	Timeout time.Duration
	// MaxKeysPerOwner bounds the buckets not yet full that one owner took
	// from (0: DefaultMaxKeysPerOwner).
	MaxKeysPerOwner int
}

// NewRedis returns a Limiter on client.
func NewRedis(client redis.UniversalClient, o RedisOptions) *Redis {
	r := &Redis{client: client, prefix: o.Prefix, timeout: o.Timeout, perOwner: o.MaxKeysPerOwner}
	if r.timeout <= 0 {
		r.timeout = 200 * time.Millisecond
	}
	if r.perOwner <= 0 {
		r.perOwner = DefaultMaxKeysPerOwner
	}
	return r
}

// gcra takes cost tokens (-1: gives one back) from the bucket KEYS[1],
// charged to the owner whose set of buckets is KEYS[2]. The bucket is
// stored as redis_rate/v10 stores it (its theoretical arrival time, in
// seconds since 2017, under "rate:"+key), so replicas of an earlier
// release share it. It returns {allowed, retry after in seconds, table
// full}.
var gcra = redis.NewScript(`
redis.replicate_commands()
local key, owned = KEYS[1], KEYS[2]
local burst, rate, period = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local cost, max_owned = tonumber(ARGV[4]), tonumber(ARGV[5])
local interval = period / rate
local t = redis.call("TIME")
local now = (t[1] - 1483228800) + (t[2] / 1000000)

-- A key's time to live, in whole seconds: at least 1 (EX 0 is an error,
-- and a bucket's interval may be below a second's precision here) and at
-- most 1e12, 31,700 years (from 1e14 on Lua writes a number as 1e+14,
-- which Redis does not read as an integer).
local function ttl(s)
  return math.min(math.max(math.ceil(s), 1), 1e12)
end

local tat = tonumber(redis.call("GET", key) or now)
tat = math.max(tat, now)
if cost < 0 then
  local back = math.max(tat - interval, now)
  if back > now then
    redis.call("SET", key, back, "EX", ttl(back - now))
    if redis.call("ZSCORE", owned, key) then
      redis.call("ZADD", owned, back, key)
    end
  elseif tat > now then
    redis.call("DEL", key)
    redis.call("ZREM", owned, key)
  end
  return {1, "0", 0}
end

local new_tat = tat + interval * cost
local wait = new_tat - interval * burst - now
if wait > 0 then
  return {0, tostring(wait), 0}
end
if not redis.call("ZSCORE", owned, key) then
  -- A bucket full again carries nothing: it leaves the owner's count.
  redis.call("ZREMRANGEBYSCORE", owned, "-inf", now)
  if redis.call("ZCARD", owned) >= max_owned then
    local first = redis.call("ZRANGE", owned, 0, 0, "WITHSCORES")
    return {0, tostring(math.max(tonumber(first[2]) - now, 0.001)), 1}
  end
end
redis.call("SET", key, new_tat, "EX", ttl(new_tat - now))
redis.call("ZADD", owned, new_tat, key)
local live = redis.call("ZRANGE", owned, -1, -1, "WITHSCORES")
redis.call("EXPIRE", owned, ttl(tonumber(live[2]) - now))
return {1, "0", 0}
`)

func (r *Redis) run(ctx context.Context, b Bucket, cost int) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	keys := []string{"rate:" + r.prefix + b.Key, "rate:" + r.prefix + "\x00owner:" + b.Owner}
	v, err := gcra.Run(ctx, r.client, keys, b.Limit.Burst, b.Limit.Rate, b.Limit.Per.Seconds(), cost, r.perOwner).Slice()
	if err != nil {
		return Result{}, fmt.Errorf("rate limit store: %w", err)
	}
	if len(v) != 3 {
		return Result{}, fmt.Errorf("rate limit store: script answered %v", v)
	}
	allowed, _ := v[0].(int64)
	full, _ := v[2].(int64)
	s, _ := v[1].(string)
	wait, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(wait) {
		return Result{}, fmt.Errorf("rate limit store: retry-after %q", s)
	}
	if allowed == 1 {
		return Result{Allowed: true}, nil
	}
	retry := time.Duration(math.MaxInt64) // a wait longer than a Duration holds
	if ns := max(wait, 0) * float64(time.Second); ns < math.MaxInt64 {
		retry = time.Duration(ns)
	}
	return Result{RetryAfter: retry, TableFull: full == 1}, nil
}

func (r *Redis) Take(ctx context.Context, b Bucket) (Result, error) {
	return r.run(ctx, b, 1)
}

// Refund puts back one token Take took from the bucket (GCRA: the
// bucket's theoretical arrival time moves back one interval, never below
// now, so a full bucket stays full).
func (r *Redis) Refund(ctx context.Context, b Bucket) error {
	_, err := r.run(ctx, b, -1)
	return err
}

var _ Limiter = (*Redis)(nil)

// CheckEviction refuses a server that may evict keys when it runs out of
// memory: an evicted bucket that was spent would come back full. With
// noeviction a full server fails writes instead, and the calls under a
// limit are denied. A server that does not allow CONFIG GET (some managed
// services) is checked with INFO memory, one that allows neither is not;
// one that does not answer is an error.
func (r *Redis) CheckEviction(ctx context.Context) error {
	policy, mm, evicts, err := rediseviction.Policy(ctx, r.client)
	if err != nil {
		return fmt.Errorf("the server did not say whether it may evict a spent rate-limit bucket: %w", err)
	}
	if evicts {
		return fmt.Errorf("maxmemory-policy is %s with maxmemory %s, so Redis may evict a spent rate-limit bucket, which would come back full; set maxmemory-policy noeviction (or maxmemory 0) on the server sluice uses", policy, mm)
	}
	return nil
}
