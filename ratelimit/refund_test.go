package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestRefund: a refunded token can be taken again, once; a full bucket
// stays at its burst (a refund never adds a token it did not take).
func TestRefund(t *testing.T) {
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	defer client.Close()
	c := &clock{t: time.Unix(1e9, 0)}
	for name, l := range map[string]interface {
		Limiter
		Refund(context.Context, Bucket) error
	}{"local": NewLocal(LocalOptions{Now: c.now}), "redis": NewRedis(client, RedisOptions{Prefix: "refund:", Timeout: time.Second})} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			lim := Limit{Rate: 2, Per: time.Hour, Burst: 2}
			if err := l.Refund(ctx, Bucket{Key: "full", Limit: lim}); err != nil { // never taken: stays at 2
				t.Fatal(err)
			}
			takes := func(key string) (n int) {
				for range 5 {
					if r, err := l.Take(ctx, Bucket{Key: key, Limit: lim}); err == nil && r.Allowed {
						n++
					}
				}
				return n
			}
			if got := takes("full"); got != 2 {
				t.Errorf("takes from a bucket refunded while full: got %d, want 2", got)
			}
			if err := l.Refund(ctx, Bucket{Key: "full", Limit: lim}); err != nil {
				t.Fatal(err)
			}
			if got := takes("full"); got != 1 {
				t.Errorf("takes after one refund of a spent bucket: got %d, want 1", got)
			}
		})
	}
}
