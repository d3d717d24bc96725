package inventory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisPrefix is the key prefix OpenRedisBackend uses by default.
const DefaultRedisPrefix = "{sluice:inventory}:"

// OpenRedisBackend returns a Backend that keeps the documents in Redis,
// shared by every gateway replica using it: two hashes, prefix+"pinned"
// and prefix+"observed", whose fields are upstream names. Every Put is
// announced on the channel prefix+"changed", so that the other replicas'
// Inventory.Watch reloads it: an approval through any replica's admin API
// applies on all of them. Each operation waits at most timeout (zero: 2s)
// for Redis (with a client honouring context deadlines, as sluice serve
// dials it); within a second of one that failed, they fail at once.
// Close closes client.
func OpenRedisBackend(client redis.UniversalClient, prefix string, timeout time.Duration) *RedisBackend {
	if prefix == "" {
		prefix = DefaultRedisPrefix
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id) // never fails (crypto/rand)
	return &RedisBackend{c: client, prefix: prefix, timeout: timeout, self: hex.EncodeToString(id)}
}

// RedisBackend is the Backend OpenRedisBackend returns. It is a Watcher.
type RedisBackend struct {
	c       redis.UniversalClient
	prefix  string
	timeout time.Duration
	self    string // tells this backend's announcements from others'

	// ResyncEvery is how often Watch rereads every document, in case an
	// announcement was lost (zero: 30s). Set it before Watch.
	ResyncEvery time.Duration

	lastErr atomic.Pointer[error]   // why Watch last failed to subscribe
	failed  atomic.Pointer[failure] // the last operation's failure; nil once one succeeds
}

// failure is an operation that failed, and when.
type failure struct {
	at  time.Time
	err error
}

// failFast is how long after a failed operation the next ones fail
// without asking Redis: they run under the inventory's lock (a
// tools/list is saved as it passes), so a stalled server would otherwise
// hold each for the timeout in turn, every upstream's lists queued
// behind them. A failed save is reported and retried by the next change.
const failFast = time.Second

// do runs op with the timeout, unless an operation failed less than
// failFast ago. redis.Nil (no such document) is not a failure.
func (b *RedisBackend) do(op func(ctx context.Context) error) error {
	if f := b.failed.Load(); f != nil {
		if ago := time.Since(f.at); ago < failFast {
			return fmt.Errorf("redis: not asked, it failed %v ago: %w", ago.Round(time.Millisecond), f.err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	err := op(ctx)
	switch {
	case err == nil || errors.Is(err, redis.Nil):
		b.failed.Store(nil)
	default:
		b.failed.Store(&failure{at: time.Now(), err: err})
	}
	return err
}

var _ Watcher = (*RedisBackend)(nil)

// Close closes the Redis client.
func (b *RedisBackend) Close() error { return b.c.Close() }

func (b *RedisBackend) key(kind Kind) string { return b.prefix + string(kind) }

func (b *RedisBackend) Where(kind Kind, upstream string) string {
	return fmt.Sprintf("redis %s field %q", b.key(kind), upstream)
}

func (b *RedisBackend) Get(kind Kind, upstream string) ([]byte, error) {
	var doc []byte
	err := b.do(func(ctx context.Context) (err error) {
		doc, err = b.c.HGet(ctx, b.key(kind), upstream).Bytes()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%s: %w", b.Where(kind, upstream), fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	return doc, nil
}

// announce tells the other replicas that the document of kind for
// upstream changed: "<sender> <kind> <upstream>". Its failure is not the
// store's (the document is stored; the others see it on their next
// resync), so it does not make the next operations fail at once.
func (b *RedisBackend) announce(kind Kind, upstream string) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	if err := b.c.Publish(ctx, b.prefix+"changed", b.self+" "+string(kind)+" "+upstream).Err(); err != nil {
		return fmt.Errorf("redis: stored, but announcing the change: %w", err)
	}
	return nil
}

func (b *RedisBackend) Put(kind Kind, upstream string, doc []byte) error {
	err := b.do(func(ctx context.Context) error {
		return b.c.HSet(ctx, b.key(kind), upstream, doc).Err()
	})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return b.announce(kind, upstream)
}

func (b *RedisBackend) PutIfAbsent(kind Kind, upstream string, doc []byte) ([]byte, error) {
	var set bool
	var kept []byte
	err := b.do(func(ctx context.Context) (err error) {
		if set, err = b.c.HSetNX(ctx, b.key(kind), upstream, doc).Result(); err != nil || set {
			return err
		}
		kept, err = b.c.HGet(ctx, b.key(kind), upstream).Bytes()
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("redis: %w", err)
	case !set:
		return kept, nil
	}
	return nil, b.announce(kind, upstream)
}

func (b *RedisBackend) List(kind Kind) ([]string, error) {
	var names []string
	err := b.do(func(ctx context.Context) (err error) {
		names, err = b.c.HKeys(ctx, b.key(kind)).Result()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	return names, nil
}

func (b *RedisBackend) Remove(kind Kind, upstream string) error {
	err := b.do(func(ctx context.Context) error {
		return b.c.HDel(ctx, b.key(kind), upstream).Err()
	})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return b.announce(kind, upstream)
}

// Watch subscribes to the change channel until ctx is done. go-redis
// reconnects a broken subscription by itself, but announcements sent
// meanwhile are lost: so resync runs once subscribed, again each time
// the subscription is made anew, and every ResyncEvery (a replica that
// missed a change sees it at most that late).
// While it cannot subscribe (Redis unreachable, an ACL or a proxy that
// refuses SUBSCRIBE), Watch retries every second, and resyncs every
// ResyncEvery all the same.
func (b *RedisBackend) Watch(ctx context.Context, changed func(Kind, string), resync func()) error {
	var last time.Time // of the last resync
	resynced := func() { last = time.Now(); resync() }
	for {
		err := b.watch(ctx, changed, resynced)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b.lastErr.Store(&err)
		if time.Since(last) >= b.resyncEvery() {
			resynced()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (b *RedisBackend) resyncEvery() time.Duration {
	if b.ResyncEvery <= 0 {
		return 30 * time.Second
	}
	return b.ResyncEvery
}

func (b *RedisBackend) watch(ctx context.Context, changed func(Kind, string), resync func()) error {
	ps := b.c.Subscribe(ctx, b.prefix+"changed")
	defer ps.Close()
	rctx, cancel := context.WithTimeout(ctx, b.timeout)
	_, err := ps.Receive(rctx) // the subscription's confirmation
	cancel()
	if err != nil {
		return fmt.Errorf("redis: subscribing to %schanged: %w", b.prefix, err)
	}
	// With the subscriptions' confirmations: after the first, each says
	// that go-redis subscribed again on a new connection, Redis having
	// come back (perhaps restarted empty: resync puts the pins back).
	msgs := ps.ChannelWithSubscriptions()
	resync()
	tick := time.NewTicker(b.resyncEvery())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			resync()
		case msg, ok := <-msgs:
			if !ok {
				return errors.New("redis: the change subscription was closed")
			}
			m, isMsg := msg.(*redis.Message)
			if !isMsg {
				if sub, ok := msg.(*redis.Subscription); ok && sub.Kind == "subscribe" {
					resync()
				}
				continue
			}
			sender, rest, ok := strings.Cut(m.Payload, " ")
			if !ok || sender == b.self {
				continue
			}
			kind, upstream, ok := strings.Cut(rest, " ")
			if ok && (Kind(kind) == Pinned || Kind(kind) == Observed) {
				changed(Kind(kind), upstream)
			}
		}
	}
}
