package approval

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestRedisStoreLeaseLostMidOperation: an operation whose lock expired
// (a pause past its lease) while another replica wrote fails its commit,
// and its store, whose memory then holds what was never written, reads
// everything at its next operation: the other replica's write is seen,
// its own unwritten change is not.
func TestRedisStoreLeaseLostMidOperation(t *testing.T) {
	ctx := context.Background()
	open, _ := openRedisPair(t, Options{Timeout: time.Minute})
	a, b := open(), open()
	d1 := intercept.Decide(ctx, &Gate{Next: holdPay, Store: a}, call(`{"amount":1}`))
	d2 := intercept.Decide(ctx, &Gate{Next: holdPay, Store: a}, call(`{"amount":2}`))
	if d1.Verdict != intercept.RequireApproval || d2.Verdict != intercept.RequireApproval {
		t.Fatalf("calls: %s, %s, want both held", d1.Verdict, d2.Verdict)
	}
	err := a.lock()
	if err != nil {
		t.Fatal(err)
	}
	a.byID[d1.ApprovalID].Status = Approved // in memory only: its commit will fail
	rc := a.be.(*redisBackend).c
	rc.Del(ctx, "test:lock") // the lease ran out
	if _, err := b.Decide(d2.ApprovalID, false, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := a.unlock(nil); err == nil {
		t.Fatal("the commit after the lease ran out and another replica wrote: succeeded, want it refused")
	}
	if r, err := a.Get(d1.ApprovalID); err != nil || r.Status != Pending {
		t.Errorf("the change whose commit failed: %s %v, want the request pending still", r.Status, err)
	}
	if r, err := a.Get(d2.ApprovalID); err != nil || r.Status != Declined {
		t.Errorf("the other replica's decline: %s %v, want it seen", r.Status, err)
	}
}
