package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// OpenRedisStore returns a Store that keeps its requests in Redis under
// prefix, so that every gateway replica using the same Redis sees the same
// held calls: a call held on one replica is approved through another's
// admin API and released where it waits, and a restart forgets nothing.
// Each operation takes a lock key (SET NX with a lease), reads the
// requests, and writes its changes in one script that checks it still
// holds the lock. Unless opts.StateKey is set, the requestState key is
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
	return []string{b.prefix + "lock", b.prefix + "requests", b.prefix + "done", b.prefix + "seq", b.prefix + "state_key"}
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
	ops   []any
}

func (t *redisTx) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), t.b.wait)
}

// version is "": Redis keeps no version of the requests, so every
// transaction reads them all.
func (t *redisTx) version() (string, error) { return "", nil }

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

// commitScript applies a transaction's writes if its lock is still held,
// puts back the requestState key (ARGV[2], unless empty) if it is gone,
// then releases the lock.
var commitScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('the approvals lock expired before the write')
end
if ARGV[2] ~= '' then
  redis.call('SET', KEYS[5], ARGV[2], 'NX')
end
local i = 3
while i <= #ARGV do
  local op, id = ARGV[i], ARGV[i+1]
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
redis.call('DEL', KEYS[1])
return 1
`)

var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

func (t *redisTx) commit() error {
	ctx, cancel := t.ctx()
	defer cancel()
	err := commitScript.Run(ctx, t.b.c, t.b.keys(), append([]any{t.token, t.b.stateKey}, t.ops...)...).Err()
	var rerr redis.Error
	if err != nil && !errors.As(err, &rerr) {
		// Unanswered: the lock may be held still, or taken later.
		t.b.releaseLater(t.token)
	}
	return err
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
