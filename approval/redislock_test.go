package approval

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestRedisLockNotLeftAfterStall: a lock request the store gave up on
// while Redis stalled (SIGSTOP: connections open, nothing answered) is
// carried out when Redis goes on, taking the lock for a holder that is no
// more. The store releases it once Redis answers: the first read after
// the stall succeeds. Before, the lock stayed taken for its lease (10 s),
// and the approvals store of every replica answered "the approvals lock in
// Redis stayed taken" (503, holds denied policy_error) that long after
// Redis was back.
func TestRedisLockNotLeftAfterStall(t *testing.T) {
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries, opt.ReadTimeout, opt.ContextTimeoutEnabled = -1, 200*time.Millisecond, true
	s, err := OpenRedisStore(context.Background(), redis.NewClient(opt), "test:", Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	d := intercept.Decide(context.Background(), &Gate{Next: holdPay, Store: s}, call(`{"amount":5}`))
	if d.ApprovalID == "" {
		t.Fatalf("call not held: %+v", d)
	}

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(d.ApprovalID); err == nil {
		_ = srv.Resume()
		t.Fatal("read with Redis stalled: no error")
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(backendRetry) // past the store's quick refusals after a failure
	start := time.Now()
	if r, err := s.Get(d.ApprovalID); err != nil || r.Status != Pending {
		t.Fatalf("first read after Redis went on: %v, %v (%s); want the pending call", r.Status, err, time.Since(start).Round(time.Millisecond))
	}
}
