package approval

import (
	"testing"
	"time"

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
	s, d := heldOnRedis(t, srv)

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
