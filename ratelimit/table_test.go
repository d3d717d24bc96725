package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
)

// The bounded table never forgets a spent bucket (found by an identity
// review: made-up bucket names pushed a spent one out, and it came back
// full). A full bucket carries nothing and makes room; when there is none,
// a new bucket is refused with TableFull until one is full again.
func TestLocalTableFull(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	ctx := context.Background()
	hour := Limit{Rate: 10, Per: time.Hour, Burst: 10} // a token every 6 minutes
	take := func(l *Local, owner, key string) Result {
		t.Helper()
		r, err := l.Take(ctx, Bucket{Key: key, Owner: owner, Limit: hour})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Run("owner's share", func(t *testing.T) {
		l := NewLocal(LocalOptions{MaxKeys: 100, MaxKeysPerOwner: 3, Now: c.now})
		for range 10 {
			take(l, "mallory", "real")
		}
		c.add(time.Minute)
		take(l, "mallory", "a")
		c.add(time.Minute)
		take(l, "mallory", "b")
		r := take(l, "mallory", "c")
		if r.Allowed || !r.TableFull || r.RetryAfter != 5*time.Minute {
			t.Errorf("a fourth bucket for mallory: %+v; want refused, table full, retry after 5m (when a is full)", r)
		}
		if r := take(l, "mallory", "real"); r.Allowed {
			t.Errorf("mallory's spent bucket after the flood: %+v; want still spent", r)
		}
		if r := take(l, "bob", "c"); !r.Allowed {
			t.Errorf("bob's first bucket: %+v; want allowed, mallory's share is hers", r)
		}
		c.add(5 * time.Minute) // a is full again: it makes room
		if r := take(l, "mallory", "c"); !r.Allowed {
			t.Errorf("mallory's new bucket once one of hers is full: %+v", r)
		}
		n := 0
		for range 5 {
			if take(l, "mallory", "real").Allowed {
				n++
			}
		}
		if n != 1 {
			t.Errorf("mallory's spent bucket 7 minutes on gave %d tokens, want 1 (one refilled)", n)
		}
		if l.Refused() != 1 || l.Len() != 4 {
			t.Errorf("refused %d, holding %d; want 1 and 4", l.Refused(), l.Len())
		}
	})
	t.Run("whole store", func(t *testing.T) {
		l := NewLocal(LocalOptions{MaxKeys: 4, MaxKeysPerOwner: 2, Now: c.now})
		for i := range 4 {
			take(l, fmt.Sprint(i/2), fmt.Sprint(i))
		}
		if r := take(l, "new", "x"); !r.TableFull || r.RetryAfter != 6*time.Minute {
			t.Errorf("a bucket past MaxKeys, all spent: %+v; want table full, retry after 6m", r)
		}
		// A refund that fills a bucket makes it room at once.
		l.Refund(ctx, Bucket{Key: "2", Owner: "1", Limit: hour})
		if r := take(l, "new", "x"); !r.Allowed {
			t.Errorf("a bucket past MaxKeys once one is full again: %+v", r)
		}
		if r := take(l, "0", "0"); !r.Allowed || l.Len() != 4 {
			t.Errorf("0's spent bucket: %+v (%d buckets); want its 9 tokens left", r, l.Len())
		}
	})
	t.Run("full ones go first", func(t *testing.T) {
		// The earlier store's case: a made-up name a second for half an
		// hour, each full again 6 minutes after its one token, never
		// pushes out the drawn-down bucket.
		l := NewLocal(LocalOptions{MaxKeys: 10, MaxKeysPerOwner: 10, Now: c.now})
		for range 10 {
			take(l, "agent", "real")
		}
		refused := 0
		for i := range 1800 {
			c.add(time.Second)
			if r := take(l, "agent", fmt.Sprint("made_up_", i)); !r.Allowed {
				refused++
			}
		}
		allowed := 0
		for range 20 {
			if take(l, "agent", "real").Allowed {
				allowed++
			}
		}
		if allowed != 5 || refused == 0 || l.Len() > 10 {
			t.Errorf("after half an hour of made-up names: real gave %d (want 5: half an hour refilled half), %d made-up refused (want some), %d buckets (want <= 10)", allowed, refused, l.Len())
		}
	})
}

// TestRedisOwnerShare: in Redis too an owner holds at most its share of
// buckets not yet full; a made-up key past it is refused, its spent
// bucket stays spent, and others are not refused.
func TestRedisOwnerShare(t *testing.T) {
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	defer client.Close()
	l := NewRedis(client, RedisOptions{Prefix: "share:", Timeout: time.Second, MaxKeysPerOwner: 5})
	ctx := context.Background()
	hour := Limit{Rate: 3, Per: time.Hour, Burst: 3}
	take := func(owner, key string) Result {
		t.Helper()
		r, err := l.Take(ctx, Bucket{Key: key, Owner: owner, Limit: hour})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	allowed := 0
	for round := range 3 {
		for range 3 {
			if take("mallory", "real").Allowed {
				allowed++
			}
		}
		for i := range 20 {
			take("mallory", fmt.Sprint("made_up_", round, "_", i))
		}
	}
	if allowed != 3 {
		t.Errorf("takes of mallory's 3/h bucket: got %d, want 3", allowed)
	}
	r := take("mallory", "one_more")
	if r.Allowed || !r.TableFull || r.RetryAfter < 19*time.Minute || r.RetryAfter > 20*time.Minute {
		t.Errorf("mallory's sixth bucket: %+v; want table full, retry after ~20m", r)
	}
	if n, _ := client.Keys(ctx, "rate:share:*").Result(); len(n) > 5+1 {
		t.Errorf("Redis holds %d keys after mallory's flood, want at most her 5 and her set", len(n))
	}
	if r := take("bob", "one_more"); !r.Allowed {
		t.Errorf("bob's first bucket: %+v", r)
	}
	// Another agent's shared bucket counts in mallory's share once she
	// takes from it.
	if r := take("mallory", "one_more"); !r.TableFull {
		t.Errorf("mallory's take from bob's bucket: %+v; want table full", r)
	}
}

// TestLocalConcurrent: agents taking at once, some inventing names, get
// no more than a shared bucket's burst and leave the store within bounds.
func TestLocalConcurrent(t *testing.T) {
	l := NewLocal(LocalOptions{MaxKeys: 64, MaxKeysPerOwner: 16})
	hour := Limit{Rate: 50, Per: time.Hour, Burst: 50}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for a := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if r, _ := l.Take(context.Background(), Bucket{Key: "shared", Owner: fmt.Sprint(a), Limit: hour}); r.Allowed {
					allowed.Add(1)
				}
				l.Take(context.Background(), Bucket{Key: fmt.Sprint(a, "/", i), Owner: fmt.Sprint(a), Limit: hour})
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 50 || l.Len() > 64 {
		t.Errorf("shared bucket gave %d (want its burst of 50), store holds %d (want <= 64)", allowed.Load(), l.Len())
	}
}
