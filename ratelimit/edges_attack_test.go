package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
)

// The limits at the ends of what ParseLimit takes: N/<duration> with the
// longest duration Go reads (2562047h, 292 years: "once, ever") and
// rates of a billion a second (no limit in practice).
var (
	onceEver = Limit{Rate: 1, Per: 2_562_047 * time.Hour, Burst: 1}
	century  = Limit{Rate: 1, Per: 876_000 * time.Hour, Burst: 2}
	billion  = Limit{Rate: 1_000_000_000, Per: time.Second, Burst: 1}
)

// TestAttackLocalLongPeriods (attacker review): in process a bucket's
// window (burst × interval) is capped at a quarter of int64 nanoseconds
// (73 years), but its interval was not: under a limit whose interval is
// longer (1/876000h, once a century; 1/2562047h, once ever) no call was
// ever allowed, not even the first, while Redis allowed the burst, and a
// Take's time overflowed int64 (it came back refused only because the
// subtraction wrapped round again).
func TestAttackLocalLongPeriods(t *testing.T) {
	ctx := context.Background()
	for _, lim := range []Limit{onceEver, century} {
		c := &clock{t: time.Unix(1_000_000, 0)}
		l := NewLocal(LocalOptions{Now: c.now})
		c.add(time.Hour) // the gateway has run an hour
		k := Bucket{Key: "a", Owner: "a", Limit: lim}
		for i := range lim.Burst {
			if r, _ := l.Take(ctx, k); !r.Allowed {
				t.Fatalf("%s: take %d of the burst refused: %+v", lim, i+1, r)
			}
		}
		for i := range 3 {
			r, _ := l.Take(ctx, k)
			if r.Allowed || r.RetryAfter < 10*365*24*time.Hour {
				t.Fatalf("%s: take %d past the burst: %+v; want refused, retry after years", lim, i+1, r)
			}
		}
	}
	l := NewLocal(LocalOptions{})
	if r, _ := l.Take(ctx, Bucket{Key: "b", Limit: billion}); !r.Allowed {
		t.Errorf("%s: first take refused: %+v", billion, r)
	}
}

// TestAttackRedisExtremeLimits (attacker review): the script stored a
// bucket with EX ceil(tat - now), which is 0 when the interval is below
// the precision of Redis's clock in seconds (1e9/s): Redis refused the
// SET ("invalid expire time"), so every call under such a limit, which
// the in-process limiter allows, was denied policy_error. And a wait
// longer than time.Duration holds (292 years: a full owner share under
// such a limit) came back negative.
func TestAttackRedisExtremeLimits(t *testing.T) {
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	l := NewRedis(c, RedisOptions{Prefix: "t:", Timeout: time.Second})
	ctx := context.Background()
	if r, err := l.Take(ctx, Bucket{Key: "b", Owner: "b", Limit: billion}); err != nil || !r.Allowed {
		t.Errorf("%s: first take: %+v, %v; want allowed", billion, r, err)
	}
	k := Bucket{Key: "a", Owner: "a", Limit: Limit{Rate: 1, Per: 2_562_047 * time.Hour, Burst: 2}}
	if r, err := l.Take(ctx, k); err != nil || !r.Allowed {
		t.Fatalf("%s: first take: %+v, %v; want allowed", k.Limit, r, err)
	}
	if r, err := l.Take(ctx, k); err != nil || !r.Allowed {
		t.Fatalf("%s: second take: %+v, %v; want allowed", k.Limit, r, err)
	}
	r, err := l.Take(ctx, k)
	if err != nil || r.Allowed || r.RetryAfter < 100*365*24*time.Hour {
		t.Errorf("%s: third take: %+v, %v; want refused, retry after centuries", k.Limit, r, err)
	}
	// The owner's share is full until a's bucket is: in 584 years.
	one := NewRedis(c, RedisOptions{Prefix: "t:", Timeout: time.Second, MaxKeysPerOwner: 1})
	r, err = one.Take(ctx, Bucket{Key: "c", Owner: "a", Limit: k.Limit})
	if err != nil || r.Allowed || !r.TableFull || r.RetryAfter < 100*365*24*time.Hour {
		t.Errorf("a new bucket past the owner's share: %+v, %v; want refused, table full, retry after centuries", r, err)
	}
}
