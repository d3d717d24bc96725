// Package ratelimit keeps token buckets by key: in the process (Local), or
// in Redis (Redis) so that every replica of the gateway draws from the same
// bucket. It knows nothing of calls or agents; internal/govern decides
// which buckets a call takes from.
package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// Limit is a token bucket: Rate tokens per Per, holding at most Burst.
type Limit struct {
	Rate  int
	Per   time.Duration
	Burst int
}

// ParseLimit reads "N/s", "N/m" or "N/h" (also "N/second", "N/minute",
// "N/hour", or "N/<duration>" such as "N/10s"). burst 0 means Rate.
func ParseLimit(s string, burst int) (Limit, error) {
	n, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Limit{}, fmt.Errorf("rate %q: want N/s, N/m, N/h or N/<duration>", s)
	}
	r, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || r < 1 {
		return Limit{}, fmt.Errorf("rate %q: %q is not a positive whole number", s, n)
	}
	l := Limit{Rate: r, Burst: burst}
	switch per = strings.TrimSpace(per); per {
	case "s", "sec", "second":
		l.Per = time.Second
	case "m", "min", "minute":
		l.Per = time.Minute
	case "h", "hour":
		l.Per = time.Hour
	default:
		d, err := time.ParseDuration(per)
		if err != nil || d <= 0 {
			return Limit{}, fmt.Errorf("rate %q: %q is not s, m, h or a positive duration", s, per)
		}
		l.Per = d
	}
	if l.Burst == 0 {
		l.Burst = l.Rate
	}
	if l.Burst < 1 {
		return Limit{}, fmt.Errorf("burst %d: give at least 1, or 0 for the rate", burst)
	}
	return l, nil
}

func (l Limit) String() string {
	return fmt.Sprintf("%d per %s (burst %d)", l.Rate, l.Per, l.Burst)
}

// Result is what one Take found.
type Result struct {
	Allowed bool
	// RetryAfter is how long until a token is free, when not Allowed.
	RetryAfter time.Duration
}

// A Limiter takes one token from the bucket named key, which has limit l.
// An error means the bucket could not be read: the caller decides (the
// gateway denies).
type Limiter interface {
	Take(ctx context.Context, key string, l Limit) (Result, error)
}

// Local keeps buckets in the process, at most MaxKeys of them. When a new
// bucket needs room, a full one goes first (as good as a new one: nothing
// is lost), looking at the least recently used few; failing that the least
// recently used goes, starts full again if it comes back, and Evicted
// counts it. So an agent inventing bucket names (by: [tool] with made-up
// tools) pushes out its own spent buckets only by spending faster than
// they refill across the whole store. Safe for concurrent use.
type Local struct {
	now     func() time.Time
	max     int
	buckets *lru.Cache[string, *bucket]
	mu      sync.Mutex // serialises creating a bucket
	evicted atomic.Int64
}

type bucket struct {
	limit Limit
	lim   *rate.Limiter
}

// DefaultMaxKeys is Local's bucket count when NewLocal is given 0.
const DefaultMaxKeys = 100_000

// NewLocal returns an in-process Limiter of at most maxKeys buckets
// (0: DefaultMaxKeys). now, if not nil, is the clock (tests).
func NewLocal(maxKeys int, now func() time.Time) *Local {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	if now == nil {
		now = time.Now
	}
	l := &Local{now: now, max: maxKeys}
	l.buckets, _ = lru.NewWithEvict(maxKeys, func(_ string, b *bucket) {
		if !b.full(l.now()) {
			l.evicted.Add(1)
		}
	})
	return l
}

// full reports whether b holds all its tokens at t.
func (b *bucket) full(t time.Time) bool { return b.lim.TokensAt(t) >= float64(b.limit.Burst) }

// evictScan is how many of the least recently used buckets Take looks at
// for a full one before dropping one that is not.
const evictScan = 8

// makeRoom drops a full bucket among the least recently used ones, if the
// store is full; the ones not full it passes are kept as recently used.
// l.mu is held.
func (l *Local) makeRoom(now time.Time) {
	if l.buckets.Len() < l.max {
		return
	}
	for range evictScan {
		k, b, ok := l.buckets.GetOldest()
		if !ok {
			return
		}
		if b.full(now) {
			l.buckets.Remove(k)
			return
		}
		l.buckets.Get(k) // spent: keep it, look at the next
	}
}

// Evicted is how many buckets not full were dropped to keep MaxKeys.
func (l *Local) Evicted() int64 { return l.evicted.Load() }

func (l *Local) Take(_ context.Context, key string, lim Limit) (Result, error) {
	b, ok := l.buckets.Get(key)
	if !ok || b.limit != lim {
		l.mu.Lock()
		if b, ok = l.buckets.Get(key); !ok || b.limit != lim {
			every := rate.Every(lim.Per / time.Duration(lim.Rate))
			b = &bucket{limit: lim, lim: rate.NewLimiter(every, lim.Burst)} // starts full
			if !ok {
				l.makeRoom(l.now())
			}
			l.buckets.Add(key, b)
		}
		l.mu.Unlock()
	}
	now := l.now()
	r := b.lim.ReserveN(now, 1)
	if !r.OK() {
		return Result{RetryAfter: lim.Per}, nil
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return Result{RetryAfter: d}, nil
	}
	return Result{Allowed: true}, nil
}

// Refund puts back one token Take took from the bucket named key, as
// when the call it was taken for is not counted after all; a bucket
// gone or full is left as it is.
func (l *Local) Refund(_ context.Context, key string, lim Limit) error {
	b, ok := l.buckets.Peek(key)
	if !ok || b.limit != lim {
		return nil
	}
	if now := l.now(); !b.full(now) {
		// A reservation of -1 adds a token; the next look caps the
		// bucket at its burst.
		b.lim.ReserveN(now, -1)
	}
	return nil
}

// Redis keeps buckets in Redis (GCRA, one Lua script per Take, Redis's own
// clock), shared by every gateway using the same server and prefix.
type Redis struct {
	lim     *redis_rate.Limiter
	prefix  string
	timeout time.Duration
}

// NewRedis returns a Limiter on client; keys get prefix. A Take that takes
// longer than timeout (0: 200ms) fails.
func NewRedis(client redis.UniversalClient, prefix string, timeout time.Duration) *Redis {
	if timeout <= 0 {
		timeout = 200 * time.Millisecond
	}
	return &Redis{lim: redis_rate.NewLimiter(client), prefix: prefix, timeout: timeout}
}

func (r *Redis) Take(ctx context.Context, key string, l Limit) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res, err := r.lim.Allow(ctx, r.prefix+key, redis_rate.Limit{Rate: l.Rate, Period: l.Per, Burst: l.Burst})
	if err != nil {
		return Result{}, fmt.Errorf("rate limit store: %w", err)
	}
	if res.Allowed > 0 {
		return Result{Allowed: true}, nil
	}
	return Result{RetryAfter: max(res.RetryAfter, 0)}, nil
}

// Refund puts back one token Take took from the bucket named key (GCRA:
// the bucket's theoretical arrival time moves back one interval, never
// below now, so a full bucket stays full).
func (r *Redis) Refund(ctx context.Context, key string, l Limit) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if _, err := r.lim.AllowN(ctx, r.prefix+key, redis_rate.Limit{Rate: l.Rate, Period: l.Per, Burst: l.Burst}, -1); err != nil {
		return fmt.Errorf("rate limit store: %w", err)
	}
	return nil
}
