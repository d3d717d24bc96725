package approval

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestRedisStoreLongAgentDeclineFollowed: a declined call of an agent
// whose name is longer than a finished request keeps is linked by the
// name's hash. A replica following the changes linked it by the cut name
// instead: the agent's retry there was held anew, not told it was
// declined, and that replica's next write unlinked it in Redis for all.
func TestRedisStoreLongAgentDeclineFollowed(t *testing.T) {
	ctx := context.Background()
	open, _ := openRedisPair(t, Options{Timeout: time.Minute})
	a, b := open(), open()
	agent := strings.Repeat("a", maxHistoryName+1)
	pay := func() *intercept.ActionDescriptor {
		d := call(`{"amount":1}`)
		d.Agent = agent
		return d
	}
	d := intercept.Decide(ctx, &Gate{Next: holdPay, Store: a}, pay())
	if d.Verdict != intercept.RequireApproval {
		t.Fatalf("first call: %s %s, want it held", d.Verdict, d.Reason)
	}
	if _, err := b.Get(d.ApprovalID); err != nil { // b has read it
		t.Fatal(err)
	}
	if _, err := a.Decide(d.ApprovalID, false, "ops"); err != nil {
		t.Fatal(err)
	}
	if got := intercept.Decide(ctx, &Gate{Next: holdPay, Store: b}, pay()); got.Verdict != intercept.Deny || got.Reason != ReasonDeclined {
		t.Errorf("the declined call sent again through another replica: %s %s, want deny %s", got.Verdict, got.Reason, ReasonDeclined)
	}
}
