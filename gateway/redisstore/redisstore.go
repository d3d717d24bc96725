// Package redisstore keeps in Redis what the exchanges of a sealed MCP
// session leave for one another, so that every replica of the gateway
// serving the session sees it (gateway.ExchangeStore): the ids its open
// requests wait on, the requests whose answer stream broke off, which a
// resumed stream may answer through any replica, and the calls held for
// approval on one replica, which the client may cancel through any
// (gateway.CallHolds), and which sessions their clients ended
// (gateway.SessionEnds).
//
// A session's keys share a hash tag, the SHA-256 of its id (the sealed id
// itself, which lets a caller use the session, is not written):
//
//	prefix{h}r      hash: request id -> the call, as the gateway encoded it
//	prefix{h}o      sorted set: request id -> when it is forgotten (ms)
//	prefix{h}w:id   string: the token of the exchange that holds id (PX)
//	prefix{h}a:id   string: the approval request id is held under (PX),
//	                "!" before it once the client cancelled the call
//	prefix{h}h      set: the ids held for approval (their a:id keys may
//	                have lapsed), for the session's end to cancel (PX)
//	prefix{h}x      string: the session was ended (PX CancelMarkTTL)
//	prefix{h}e      string: the client ended the session, which no
//	                replica serves again (PX: until its id expires)
//
// Each method is one Lua script (one round trip, atomic among replicas);
// each is bounded by Options.Timeout, and its error returned: the gateway
// fails closed. CancelSession's script reads the a:id keys its set names,
// which it cannot declare: they share the session's hash tag, so a Redis
// Cluster keeps them on the one node the declared keys are on.
//
//	s := redisstore.New(client, redisstore.Options{KeyPrefix: "sluice:a2a:task:\x00session\x00"})
//	g, err := gateway.New(gateway.Options{SessionKeys: keys, Exchanges: s}, ic, log)
package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of [Options].
const (
	DefaultKeyPrefix = "sluice:session:"
	DefaultTimeout   = 500 * time.Millisecond
)

// Options configures a [Store]; its zero value means the defaults.
type Options struct {
	// KeyPrefix starts every key; zero means DefaultKeyPrefix.
	KeyPrefix string
	// Timeout bounds each call; zero means DefaultTimeout. A request
	// waiting on Redis waits at most this long before it is refused.
	Timeout time.Duration
}

// Store is a gateway.ExchangeStore in Redis. It is safe for concurrent
// use; it does not own the client.
type Store struct {
	c       redis.Scripter
	prefix  string
	timeout time.Duration
}

// New returns a Store on c.
func New(c redis.Scripter, o Options) *Store {
	s := &Store{c: c, prefix: o.KeyPrefix, timeout: o.Timeout}
	if s.prefix == "" {
		s.prefix = DefaultKeyPrefix
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	return s
}

// keys of a session: its hash tag's prefix.
func (s *Store) base(session string) string {
	h := sha256.Sum256([]byte(session))
	return s.prefix + "{" + base64.RawURLEncoding.EncodeToString(h[:]) + "}"
}

// idKey is how a request id appears in keys and fields: as it is, or,
// past 64 bytes (ids are a client's to choose), its SHA-256.
func idKey(id string) string {
	if len(id) <= 64 {
		return id
	}
	h := sha256.Sum256([]byte(id))
	return "#" + base64.RawURLEncoding.EncodeToString(h[:])
}

// hold: KEYS are the ids' hold keys, then the memory's hash and sorted
// set; ARGV the token, the TTL in ms, then the ids. An id held for
// another token, or not held for this one and remembered (a request
// whose stream broke off, which the upstream may yet answer), stops it
// (its index is returned); a memory of one past its TTL is forgotten.
var hold = redis.NewScript(`
local n = #KEYS - 2
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, n do
  local v = redis.call('GET', KEYS[i])
  if v and v ~= ARGV[1] then return i end
  if not v and redis.call('HEXISTS', KEYS[n+1], ARGV[i+2]) == 1 then
    local at = redis.call('ZSCORE', KEYS[n+2], ARGV[i+2])
    if at and tonumber(at) > now then return i end
  end
end
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    redis.call('HDEL', KEYS[n+1], ARGV[i+2])
    redis.call('ZREM', KEYS[n+2], ARGV[i+2])
  end
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 0`)

// release: KEYS are hold keys, ARGV[1] the token.
var release = redis.NewScript(`
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
return 0`)

// remember: KEYS the hash and the sorted set; ARGV the bound, the TTL in
// ms, then ids and calls. Redis's clock, one for every replica.
var remember = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', string.format('%d', now))
for _, id in ipairs(old) do redis.call('HDEL', KEYS[1], id) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%d', now))
local ttl = tonumber(ARGV[2])
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i+1])
  redis.call('ZADD', KEYS[2], string.format('%d', now + ttl), ARGV[i])
end
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[1])
if over > 0 then
  local gone = redis.call('ZRANGE', KEYS[2], 0, over - 1)
  for _, id in ipairs(gone) do redis.call('HDEL', KEYS[1], id) end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, over - 1)
else
  over = 0
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return over`)

// take: KEYS the hash, the sorted set and the id's hold key; ARGV the
// id, the token ("" holds nothing) and the hold's TTL in ms.
var take = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('HGET', KEYS[1], ARGV[1])
local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if not v or not at or tonumber(at) <= now then return false end
if ARGV[2] ~= '' then redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3]) end
return v`)

func ms(d time.Duration) string { return strconv.FormatInt(max(d.Milliseconds(), 1), 10) }

// Hold holds ids for token in session for ttl, unless one is held for
// another token, or held for none and remembered: then it returns that
// id and holds none.
func (s *Store) Hold(ctx context.Context, session, token string, ids []string, ttl time.Duration) (string, error) {
	if len(ids) == 0 {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	b := s.base(session)
	keys := make([]string, 0, len(ids)+2)
	args := make([]any, 0, len(ids)+2)
	args = append(args, token, ms(ttl))
	for _, id := range ids {
		keys = append(keys, b+"w:"+idKey(id))
		args = append(args, idKey(id))
	}
	keys = append(keys, b+"r", b+"o")
	i, err := hold.Run(ctx, s.c, keys, args...).Int()
	if err != nil {
		return "", fmt.Errorf("redis: %w", err)
	}
	if i < 0 || i > len(ids) {
		return "", fmt.Errorf("redis: hold answered %d", i)
	}
	if i > 0 {
		return ids[i-1], nil
	}
	return "", nil
}

// Release lets go of those of ids still held for token.
func (s *Store) Release(ctx context.Context, session, token string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	b := s.base(session)
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = b + "w:" + idKey(id)
	}
	if err := release.Run(ctx, s.c, keys, token).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// Remember keeps calls in session for ttl each, and at most max of them
// (the first remembered forgotten first); forgot says how many went.
func (s *Store) Remember(ctx context.Context, session string, calls map[string][]byte, max int, ttl time.Duration) (int, error) {
	if len(calls) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	b := s.base(session)
	args := make([]any, 0, 2+2*len(calls))
	args = append(args, max, ms(ttl))
	for id, c := range calls {
		args = append(args, idKey(id), c)
	}
	n, err := remember.Run(ctx, s.c, []string{b + "r", b + "o"}, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("redis: %w", err)
	}
	return n, nil
}

// Take returns the call remembered for id in session and forgets it;
// when there is one and token is not empty, id is then held for token
// for ttl.
func (s *Store) Take(ctx context.Context, session, id, token string, ttl time.Duration) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	b := s.base(session)
	k := idKey(id)
	v, err := take.Run(ctx, s.c, []string{b + "r", b + "o", b + "w:" + k}, k, token, ms(ttl)).Text()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("redis: %w", err)
	}
	return []byte(v), true, nil
}

// holdCall: KEYS the id's held-call key, the session's held set and its
// end mark; ARGV the approval, the TTL in ms, "1" to renew only, and the
// id's key. A call cancelled meanwhile stays so (1 is returned), as does
// one whose cancellation came before its hold was recorded (the mark
// cancelCalls left: '!' alone), or whose session was ended before (the
// mark cancelSession left); a renewal finding no record of its own writes
// none (2).
var holdCall = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if ARGV[3] ~= '1' and (v == '!' or redis.call('EXISTS', KEYS[3]) == 1) then
  redis.call('SET', KEYS[1], '!' .. ARGV[1], 'PX', ARGV[2])
  return 1
end
if v == '!' .. ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if ARGV[3] == '1' and v ~= ARGV[1] then
  return 2
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 0`)

// releaseCall: KEYS the id's held-call key and the session's held set;
// ARGV the approval and the id's key. 1 if the call was marked
// cancelled, 2 if it is not recorded (under that approval).
var releaseCall = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[2])
  return 0
end
if v == '!' .. ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[2])
  return 1
end
return 2`)

// cancelSession: KEYS the session's end mark and held set; ARGV how long
// (ms) the end mark lasts and the prefix of its held-call keys. The
// session is marked ended, for a hold recorded after to find, and each
// call held is marked cancelled and its approval returned, once.
var cancelSession = redis.NewScript(`
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local k = ARGV[2] .. id
  local v = redis.call('GET', k)
  if v and string.sub(v, 1, 1) ~= '!' then
    local ttl = redis.call('PTTL', k)
    if ttl > 0 then
      redis.call('SET', k, '!' .. v, 'PX', ttl)
      out[#out + 1] = v
    end
  end
end
redis.call('DEL', KEYS[2])
return out`)

// ErrNotHeld is ReleaseCall's error for a call whose record is gone: it
// lapsed, or Redis lost it (a restart, a failover, an eviction). A
// cancellation meanwhile may have gone unseen.
var ErrNotHeld error = notHeld{}

// notHeld is ErrNotHeld: it says so (HoldLost) to a caller that cannot
// import this package (the gateway defines the interface it implements).
type notHeld struct{}

func (notHeld) Error() string {
	return "redis: the held call's record is gone (it lapsed, or Redis lost it)"
}
func (notHeld) HoldLost() bool { return true }

// cancelCalls: KEYS the ids' held-call keys; ARGV[1] how long (ms) the
// mark of an id not held lasts. Each held call is marked cancelled and
// its approval returned, once; "" for the others. An id with no record
// is marked cancelled ('!' alone), for a hold recorded after to find.
var cancelCalls = redis.NewScript(`
local out = {}
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  out[i] = ''
  if not v then
    redis.call('SET', KEYS[i], '!', 'PX', ARGV[1])
  elseif string.sub(v, 1, 1) ~= '!' then
    local ttl = redis.call('PTTL', KEYS[i])
    if ttl > 0 then
      redis.call('SET', KEYS[i], '!' .. v, 'PX', ttl)
      out[i] = v
    end
  end
end
return out`)

// CancelMarkTTL is how long CancelCalls marks an id no call is held
// under as cancelled: a hold recorded meanwhile (HoldCall) is cancelled
// at once. It covers the time between a replica's decision to hold a
// call and its record of the hold, which a cancellation through another
// replica may fall in, with a wide margin; ids are not reused within a
// session, so the mark of one cancelled after its call ran holds nothing
// back.
const CancelMarkTTL = 30 * time.Second

// HoldCall records that request id of session is held under approval
// for ttl, or, with renew, renews the record; cancelled reports that a
// CancelCalls or CancelSession marked it meanwhile, or before
// (CancelMarkTTL), and
// ErrNotHeld that a renewal found
// no record (it lapsed, or Redis lost it: a cancellation meanwhile may
// have gone unseen).
func (s *Store) HoldCall(ctx context.Context, session, id, approval string, ttl time.Duration, renew bool) (cancelled bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	flag := "0"
	if renew {
		flag = "1"
	}
	b := s.base(session)
	n, err := holdCall.Run(ctx, s.c, []string{b + "a:" + idKey(id), b + "h", b + "x"}, approval, ms(ttl), flag, idKey(id)).Int()
	switch {
	case err != nil:
		return false, fmt.Errorf("redis: %w", err)
	case n == 2:
		return false, ErrNotHeld
	}
	return n == 1, nil
}

// ReleaseCall forgets the record of request id of session held under
// approval; cancelled reports that a CancelCalls had marked it, and
// ErrNotHeld that there was no record to tell.
func (s *Store) ReleaseCall(ctx context.Context, session, id, approval string) (cancelled bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	b := s.base(session)
	n, err := releaseCall.Run(ctx, s.c, []string{b + "a:" + idKey(id), b + "h"}, approval, idKey(id)).Int()
	switch {
	case err != nil:
		return false, fmt.Errorf("redis: %w", err)
	case n == 2:
		return false, ErrNotHeld
	}
	return n == 1, nil
}

// CancelCalls marks those of ids of session held for approval as
// cancelled, and returns the approval each was held under ("" for an id
// not held, or marked already), in one round trip. An id not held is
// marked too, for CancelMarkTTL: a hold of it recorded meanwhile is
// cancelled (HoldCall).
func (s *Store) CancelCalls(ctx context.Context, session string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	b := s.base(session)
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = b + "a:" + idKey(id)
	}
	out, err := cancelCalls.Run(ctx, s.c, keys, ms(CancelMarkTTL)).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	if len(out) != len(ids) {
		return nil, fmt.Errorf("redis: cancel answered %d of %d ids", len(out), len(ids))
	}
	return out, nil
}

// CancelSession marks every call of session held for approval as
// cancelled, and returns the approvals they were held under, in one round
// trip: the client ended the session. The session is marked ended too,
// for CancelMarkTTL: a hold of it recorded meanwhile is cancelled
// (HoldCall).
func (s *Store) CancelSession(ctx context.Context, session string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	b := s.base(session)
	out, err := cancelSession.Run(ctx, s.c, []string{b + "x", b + "h"}, ms(CancelMarkTTL), b+"a:").StringSlice()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	return out, nil
}

// endSession: KEYS the session's ended key; ARGV its TTL in ms ("0":
// none).
var endSession = redis.NewScript(`
if ARGV[1] ~= '0' then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
else
  redis.call('SET', KEYS[1], '1')
end
return 0`)

// sessionEnded: KEYS the session's ended key.
var sessionEnded = redis.NewScript(`return redis.call('EXISTS', KEYS[1])`)

// EndSession records that the client ended session, for ttl (0: until
// the key is removed): SessionEnded reports it, to every replica.
func (s *Store) EndSession(ctx context.Context, session string, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	exp := "0"
	if ttl > 0 {
		exp = ms(ttl)
	}
	if err := endSession.Run(ctx, s.c, []string{s.base(session) + "e"}, exp).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// SessionEnded reports whether EndSession recorded session.
func (s *Store) SessionEnded(ctx context.Context, session string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	n, err := sessionEnded.Run(ctx, s.c, []string{s.base(session) + "e"}).Int()
	if err != nil {
		return false, fmt.Errorf("redis: %w", err)
	}
	return n == 1, nil
}
