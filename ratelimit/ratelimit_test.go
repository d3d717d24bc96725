package ratelimit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestParseLimit(t *testing.T) {
	for _, tc := range []struct {
		in    string
		burst int
		want  Limit
	}{
		{"10/s", 0, Limit{10, time.Second, 10}},
		{"100 / minute", 5, Limit{100, time.Minute, 5}},
		{"3/h", 0, Limit{3, time.Hour, 3}},
		{"7/10s", 2, Limit{7, 10 * time.Second, 2}},
	} {
		got, err := ParseLimit(tc.in, tc.burst)
		if err != nil || got != tc.want {
			t.Errorf("ParseLimit(%q, %d) = %+v, %v; want %+v", tc.in, tc.burst, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "10", "0/s", "-1/s", "x/s", "10/fortnight", "10/-1s"} {
		if _, err := ParseLimit(bad, 0); err == nil {
			t.Errorf("ParseLimit(%q) accepted", bad)
		}
	}
	if _, err := ParseLimit("1/s", -1); err == nil {
		t.Error("negative burst accepted")
	}
}

func TestLocalBucket(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	l := NewLocal(0, c.now)
	ctx := context.Background()
	lim := Limit{Rate: 1, Per: time.Second, Burst: 2}
	for i := range 2 {
		if r, _ := l.Take(ctx, "a", lim); !r.Allowed {
			t.Fatalf("take %d of the burst refused", i+1)
		}
	}
	r, err := l.Take(ctx, "a", lim)
	if err != nil || r.Allowed || r.RetryAfter <= 0 || r.RetryAfter > time.Second {
		t.Fatalf("third take: %+v, %v; want refused with a retry-after in (0, 1s]", r, err)
	}
	if r, _ := l.Take(ctx, "b", lim); !r.Allowed {
		t.Error("another key shares a's bucket")
	}
	// A refused take does not spend a token: after the retry-after, one
	// take goes through.
	c.add(r.RetryAfter)
	if r, _ := l.Take(ctx, "a", lim); !r.Allowed {
		t.Errorf("take after the retry-after refused: %+v", r)
	}
	if r, _ := l.Take(ctx, "a", lim); r.Allowed {
		t.Error("bucket refilled faster than its rate")
	}
}

func TestLocalEviction(t *testing.T) {
	l := NewLocal(2, nil)
	lim := Limit{Rate: 1, Per: time.Hour, Burst: 1}
	for _, k := range []string{"a", "b", "c"} {
		l.Take(context.Background(), k, lim)
	}
	if l.Evicted() != 1 {
		t.Errorf("evicted %d buckets, want 1", l.Evicted())
	}
}

func TestRedisSharedBucket(t *testing.T) {
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	// Two limiters with their own clients are two replicas.
	a, b := redis.NewClient(opt), redis.NewClient(opt)
	defer a.Close()
	defer b.Close()
	la, lb := NewRedis(a, "t:", time.Second), NewRedis(b, "t:", time.Second)
	ctx := context.Background()
	lim := Limit{Rate: 2, Per: time.Hour, Burst: 2}
	if r, err := la.Take(ctx, "agent", lim); err != nil || !r.Allowed {
		t.Fatalf("replica A, first take: %+v, %v", r, err)
	}
	if r, err := lb.Take(ctx, "agent", lim); err != nil || !r.Allowed {
		t.Fatalf("replica B, second take: %+v, %v", r, err)
	}
	r, err := la.Take(ctx, "agent", lim)
	if err != nil || r.Allowed || r.RetryAfter < 20*time.Minute || r.RetryAfter > 30*time.Minute {
		t.Fatalf("replica A, third take: %+v, %v; want refused, retry after ~30m", r, err)
	}
	if r, err := lb.Take(ctx, "other", lim); err != nil || !r.Allowed {
		t.Errorf("another key: %+v, %v", r, err)
	}
	srv.Stop()
	if _, err := la.Take(ctx, "agent", lim); err == nil {
		t.Error("take with Redis gone: no error")
	}
}

// An agent inventing bucket names (by: [tool] with made-up tool names)
// to push its drawn-down bucket out of a full store, so that it comes
// back full: the store drops buckets that are full anyway (as good as
// new) before one still drawn down.
func TestLocalEvictionFlood(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	l := NewLocal(10, c.now)
	lim := Limit{Rate: 10, Per: time.Minute, Burst: 10} // a token every 6 s
	ctx := context.Background()
	for i := range 10 {
		if r, _ := l.Take(ctx, "agent|real_tool", lim); !r.Allowed {
			t.Fatalf("take %d refused", i)
		}
	}
	// The flood: a made-up name a second for 30 s; each of those buckets
	// is full again 6 s after its one token.
	for i := range 30 {
		c.add(time.Second)
		l.Take(ctx, "agent|made_up_"+string(rune('a'+i%26))+string(rune('a'+i/26)), lim)
	}
	// 30 s refilled 5 tokens of the real bucket, not 10.
	allowed := 0
	for range 10 {
		if r, _ := l.Take(ctx, "agent|real_tool", lim); r.Allowed {
			allowed++
		}
	}
	if allowed > 5 {
		t.Errorf("after the flood the drawn-down bucket gave %d tokens, want at most 5: it was dropped and came back full", allowed)
	}
	if l.Evicted() != 0 {
		t.Errorf("%d drawn-down buckets dropped, want none (only full ones)", l.Evicted())
	}
}
