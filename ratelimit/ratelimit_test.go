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
	l := NewLocal(LocalOptions{Now: c.now})
	ctx := context.Background()
	lim := Limit{Rate: 1, Per: time.Second, Burst: 2}
	for i := range 2 {
		if r, _ := l.Take(ctx, Bucket{Key: "a", Limit: lim}); !r.Allowed {
			t.Fatalf("take %d of the burst refused", i+1)
		}
	}
	r, err := l.Take(ctx, Bucket{Key: "a", Limit: lim})
	if err != nil || r.Allowed || r.RetryAfter <= 0 || r.RetryAfter > time.Second {
		t.Fatalf("third take: %+v, %v; want refused with a retry-after in (0, 1s]", r, err)
	}
	if r, _ := l.Take(ctx, Bucket{Key: "b", Limit: lim}); !r.Allowed {
		t.Error("another key shares a's bucket")
	}
	// A refused take does not spend a token: after the retry-after, one
	// take goes through.
	c.add(r.RetryAfter)
	if r, _ := l.Take(ctx, Bucket{Key: "a", Limit: lim}); !r.Allowed {
		t.Errorf("take after the retry-after refused: %+v", r)
	}
	if r, _ := l.Take(ctx, Bucket{Key: "a", Limit: lim}); r.Allowed {
		t.Error("bucket refilled faster than its rate")
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
	la, lb := NewRedis(a, RedisOptions{Prefix: "t:", Timeout: time.Second}), NewRedis(b, RedisOptions{Prefix: "t:", Timeout: time.Second})
	ctx := context.Background()
	lim := Limit{Rate: 2, Per: time.Hour, Burst: 2}
	if r, err := la.Take(ctx, Bucket{Key: "agent", Owner: "agent", Limit: lim}); err != nil || !r.Allowed {
		t.Fatalf("replica A, first take: %+v, %v", r, err)
	}
	if r, err := lb.Take(ctx, Bucket{Key: "agent", Owner: "agent", Limit: lim}); err != nil || !r.Allowed {
		t.Fatalf("replica B, second take: %+v, %v", r, err)
	}
	r, err := la.Take(ctx, Bucket{Key: "agent", Owner: "agent", Limit: lim})
	if err != nil || r.Allowed || r.RetryAfter < 20*time.Minute || r.RetryAfter > 30*time.Minute {
		t.Fatalf("replica A, third take: %+v, %v; want refused, retry after ~30m", r, err)
	}
	if r, err := lb.Take(ctx, Bucket{Key: "other", Owner: "other", Limit: lim}); err != nil || !r.Allowed {
		t.Errorf("another key: %+v, %v", r, err)
	}
	srv.Stop()
	if _, err := la.Take(ctx, Bucket{Key: "agent", Owner: "agent", Limit: lim}); err == nil {
		t.Error("take with Redis gone: no error")
	}
}

// TestRedisStalled: a Redis that stops answering (SIGSTOP: its connections
// stay open) fails a Take within the timeout (on a client that honours
// context deadlines, as serve's does), with an error (which the
// RateGate turns into policy_error, a deny), and never allows the call;
// once it answers again, Takes work without a new limiter.
func TestRedisStalled(t *testing.T) {
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true // as sluice serve dials it: the timeout bounds the wait
	c := redis.NewClient(opt)
	defer c.Close()
	l := NewRedis(c, RedisOptions{Prefix: "t:", Timeout: 200 * time.Millisecond})
	ctx := context.Background()
	b := Bucket{Key: "agent", Owner: "agent", Limit: Limit{Rate: 100, Per: time.Hour, Burst: 100}}
	if r, err := l.Take(ctx, b); err != nil || !r.Allowed {
		t.Fatalf("first take: %+v, %v", r, err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = srv.Resume()
		}
	}()
	done := make(chan error, 1)
	var r Result
	start := time.Now()
	go func() {
		var err error
		r, err = l.Take(ctx, b)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || r.Allowed {
			t.Fatalf("take with Redis stalled: %+v, %v; want an error and no token", r, err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("take with Redis stalled took %v, want about the 200ms timeout", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("take with Redis stalled did not return")
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	var last error
	for range 50 {
		var r Result
		if r, last = l.Take(ctx, b); last == nil && r.Allowed {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("after Redis answers again: %v", last)
}
