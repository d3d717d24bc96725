package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// OpenRedisStore returns a Store that keeps its requests in Redis under
// prefix, so that every gateway replica using the same Redis sees the same
// held calls: a call held on one replica is approved through another's
// admin API and released where it waits, and a restart forgets nothing.
// Each operation takes a lock key (SET NX with a lease), reads the
// requests written since its last operation (all of them when it cannot
// tell which: after a restart, or when Redis lost them), and writes its
// changes in one script that checks it still holds the lock. Unless opts.StateKey is set, the requestState key is
// kept in Redis too. Close closes client.
func OpenRedisStore(ctx context.Context, client redis.UniversalClient, prefix string, opts Options) (*Store, error) {
	if prefix == "" {
		prefix = "{sluice:approvals}:" // one hash slot: the scripts touch every key
	}
	b := &redisBackend{c: client, prefix: prefix, wait: 5 * time.Second, lease: 10 * time.Second}
	if opts.StateKey == nil {
		fresh := make([]byte, 32)
		_, _ = rand.Read(fresh) // never fails (crypto/rand)
		if err := client.SetNX(ctx, prefix+"state_key", fresh, 0).Err(); err != nil {
			return nil, fmt.Errorf("approval: redis: %w", err)
		}
		key, err := client.Get(ctx, prefix+"state_key").Bytes()
		if err != nil {
			return nil, fmt.Errorf("approval: redis: %w", err)
		}
		if len(key) != 32 {
			return nil, fmt.Errorf("approval: redis: the stored requestState key is %d bytes, want 32", len(key))
		}
		opts.StateKey = key
		b.stateKey = key
	}
	s := NewStore(opts)
	s.be = b
	s.snap = map[string]snapRow{}
	return s, nil
}

type redisBackend struct {
	c      redis.UniversalClient
	prefix string
	wait   time.Duration // longest wait for the lock
	lease  time.Duration // how long a taken lock lasts if its holder dies
	// stateKey is the requestState key kept in Redis (nil: the caller's
	// own), which each commit puts back if Redis lost it: a replica
	// started after the loss would otherwise seal with a key of its
	// own, and the states every other replica seals would be refused
	// there, and its states by them.
	stateKey []byte
}

func (b *redisBackend) close() error { return b.c.Close() }

func (b *redisBackend) keys() []string {
	return []string{b.prefix + "lock", b.prefix + "requests", b.prefix + "done", b.prefix + "seq", b.prefix + "state_key",
		b.prefix + "version", b.prefix + "changes", b.prefix + "commits"}
}

// The requests' version in Redis is "n:floor:id": every commit that
// writes adds one to n, puts the ids it wrote or removed in the changes
// set with n as their score, and names itself with a random id, kept
// in the commits set as "n:id". A store that last read at version v
// reads only the ids scored above v's n, if v's commit is still there:
// a Redis that lost its data, or only its last writes (a failover to a
// replica behind, a restart from an older snapshot), has other commits
// under the same numbers, or none, and the store then reads everything.
// The sets keep the last changesKept versions at least; floor is the
// newest version whose changes after it they no longer hold in full.
var changesKept = 10_000

type redisVersion struct {
	n, floor int64
	id       string
}

func parseRedisVersion(v string) (redisVersion, bool) {
	n, rest, ok1 := strings.Cut(v, ":")
	floor, id, ok2 := strings.Cut(rest, ":")
	var rv redisVersion
	var err1, err2 error
	rv.n, err1 = strconv.ParseInt(n, 10, 64)
	rv.floor, err2 = strconv.ParseInt(floor, 10, 64)
	rv.id = id
	return rv, ok1 && ok2 && id != "" && err1 == nil && err2 == nil
}

func (b *redisBackend) begin() (backendTx, error) {
	ctx, cancel := context.WithTimeout(context.Background(), b.wait)
	defer cancel()
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	t := &redisTx{b: b, token: hex.EncodeToString(tok)}
	for {
		ok, err := b.c.SetNX(ctx, b.prefix+"lock", t.token, b.lease).Result()
		if err != nil {
			// Unanswered, the SET may still be carried out (a stalled
			// Redis does, once it goes on): the lock would be taken for
			// its lease by a holder that gave up.
			b.releaseLater(t.token)
			return nil, err
		}
		if ok {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.New("the approvals lock in Redis stayed taken")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

type redisTx struct {
	b     *redisBackend
	token string
	ver   string // the version as the transaction began ("" if none)
	ops   []any
}

func (t *redisTx) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), t.b.wait)
}

// version is the requests' version key, "" when Redis has none (no
// commit since it started empty).
func (t *redisTx) version() (string, error) {
	ctx, cancel := t.ctx()
	defer cancel()
	v, err := t.b.c.Get(ctx, t.b.keys()[5]).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	t.ver = v
	return v, err
}

// changes reads the requests written or removed after version since,
// if Redis still has since's commit and the changes after it.
func (t *redisTx) changes(since string) ([]row, []string, bool, error) {
	from, ok1 := parseRedisVersion(since)
	now, ok2 := parseRedisVersion(t.ver)
	if !ok1 || !ok2 || from.n < now.floor || from.n > now.n {
		return nil, nil, false, nil
	}
	ctx, cancel := t.ctx()
	defer cancel()
	k := t.b.keys()
	pipe := t.b.c.Pipeline()
	kept := pipe.ZScore(ctx, k[7], strconv.FormatInt(from.n, 10)+":"+from.id)
	changed := pipe.ZRangeByScore(ctx, k[6], &redis.ZRangeBy{Min: "(" + strconv.FormatInt(from.n, 10), Max: "+inf"})
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, false, err
	}
	if kept.Err() != nil {
		return nil, nil, false, nil // since's commit is lost: read everything
	}
	ids := changed.Val()
	if len(ids) == 0 {
		return nil, nil, true, nil
	}
	pipe = t.b.c.Pipeline()
	data := pipe.HMGet(ctx, k[1], ids...)
	done := pipe.HMGet(ctx, k[2], ids...)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, false, err
	}
	var rows []row
	var gone []string
	for i, id := range ids {
		v, _ := data.Val()[i].(string)
		if v == "" {
			gone = append(gone, id)
			continue
		}
		rw := row{id: id, linked: v[0] == '1', data: v[1:]}
		if s, ok := done.Val()[i].(string); ok {
			rw.done = true
			rw.seq, _ = strconv.ParseInt(s, 10, 64)
		}
		rows = append(rows, rw)
	}
	return rows, gone, true, nil
}

func (t *redisTx) rows() ([]row, error) {
	ctx, cancel := t.ctx()
	defer cancel()
	k := t.b.keys()
	pipe := t.b.c.Pipeline()
	data := pipe.HGetAll(ctx, k[1])
	done := pipe.HGetAll(ctx, k[2])
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]row, 0, len(data.Val()))
	for id, v := range data.Val() {
		if v == "" {
			continue
		}
		rw := row{id: id, linked: v[0] == '1', data: v[1:]}
		if s, ok := done.Val()[id]; ok {
			rw.done = true
			rw.seq, _ = strconv.ParseInt(s, 10, 64)
		}
		out = append(out, rw)
	}
	return out, nil
}

func (t *redisTx) remove(id string) error {
	t.ops = append(t.ops, "del", id)
	return nil
}

func (t *redisTx) put(id, data string, linked, finished bool) error {
	op := "put"
	if finished {
		op = "fin"
	}
	t.ops = append(t.ops, op, id, rowKey(data, linked))
	return nil
}

// commitScript applies a transaction's writes (from ARGV[6]) if its lock
// is still held, puts back the requestState key (ARGV[2], unless empty)
// if it is gone, moves the version on (ARGV[3]: the commit's id; ARGV[4]:
// changesKept), then releases the lock. It
// returns the new version if the version was ARGV[5] (the transaction's
// reads are then all there is), otherwise "".
var commitScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('the approvals lock expired before the write')
end
if ARGV[2] ~= '' then
  redis.call('SET', KEYS[5], ARGV[2], 'NX')
end
if #ARGV < 6 then
  redis.call('DEL', KEYS[1])
  return ''
end
local v = redis.call('GET', KEYS[6])
local n, floor
if v then
  n, floor = string.match(v, '^(%d+):(%d+):')
end
if n then
  n, floor = tonumber(n), tonumber(floor)
else
  n, floor = 0, 0
  redis.call('DEL', KEYS[7], KEYS[8])
end
n = n + 1
local i = 6
while i <= #ARGV do
  local op, id = ARGV[i], ARGV[i+1]
  redis.call('ZADD', KEYS[7], n, id)
  if op == 'del' then
    redis.call('HDEL', KEYS[2], id)
    redis.call('HDEL', KEYS[3], id)
    i = i + 2
  else
    redis.call('HSET', KEYS[2], id, ARGV[i+2])
    if op == 'fin' and redis.call('HEXISTS', KEYS[3], id) == 0 then
      redis.call('HSET', KEYS[3], id, redis.call('INCR', KEYS[4]))
    end
    i = i + 3
  end
end
local kept = tonumber(ARGV[4])
if n - floor > 2 * kept then
  floor = n - kept
  redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', floor)
  redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', floor)
end
redis.call('ZADD', KEYS[8], n, n .. ':' .. ARGV[3])
local nv = n .. ':' .. floor .. ':' .. ARGV[3]
redis.call('SET', KEYS[6], nv)
redis.call('DEL', KEYS[1])
if v == ARGV[5] or (not v and ARGV[5] == '') then
  return nv
end
return ''
`)

var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

func (t *redisTx) commit() (string, error) {
	ctx, cancel := t.ctx()
	defer cancel()
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	args := append([]any{t.token, t.b.stateKey, hex.EncodeToString(id), changesKept, t.ver}, t.ops...)
	next, err := commitScript.Run(ctx, t.b.c, t.b.keys(), args...).Text()
	var rerr redis.Error
	if err != nil && !errors.As(err, &rerr) {
		// Unanswered: the lock may be held still, or taken later.
		t.b.releaseLater(t.token)
	}
	return next, err
}

func (t *redisTx) rollback() {
	ctx, cancel := t.ctx()
	defer cancel()
	if err := releaseScript.Run(ctx, t.b.c, t.b.keys()[:1], t.token).Err(); err != nil {
		t.b.releaseLater(t.token)
	}
}

// releaseLater releases the lock if token holds it, in the background,
// once Redis answers: a lock taken by a request its sender gave up on (a
// Redis that stalled, then went on) kept every replica's approvals store
// unavailable for the rest of its lease (10 s) after Redis answered again.
// Redis may carry out the stalled SET after the first release it answers
// (they need not share a connection), so releases go on for
// releaseSettle after the first answer, or until one releases the lock;
// never past the lease, when the lock ends anyway.
func (b *redisBackend) releaseLater(token string) {
	go func() {
		end := time.Now().Add(b.lease)
		var answered time.Time
		for now := time.Now(); now.Before(end); now = time.Now() {
			ctx, cancel := context.WithTimeout(context.Background(), b.wait)
			n, err := releaseScript.Run(ctx, b.c, b.keys()[:1], token).Int()
			cancel()
			switch {
			case err == nil && n == 1:
				return // released
			case errors.Is(err, redis.ErrClosed):
				return
			case err == nil && answered.IsZero():
				answered = time.Now()
			case err == nil && time.Since(answered) >= releaseSettle:
				return // not taken by the stalled request: nothing to release
			}
			time.Sleep(releaseEvery)
		}
	}()
}

// releaseEvery and releaseSettle pace releaseLater.
const (
	releaseEvery  = 20 * time.Millisecond
	releaseSettle = 500 * time.Millisecond
)
