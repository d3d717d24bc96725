package approval

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// (Found by an attacker review.) An approval of a call whose argument is a large integer must not allow a
// call with another integer that merely rounds to the same float64: the
// upstream receives the raw bytes, so it pays another account.
func TestApprovalBindsExactNumbers(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	s := NewStore(Options{Timeout: time.Minute, Now: c.now})
	g := &Gate{Next: holdPay, Store: s}
	ctx := context.Background()
	d := intercept.Decide(ctx, g, call(`{"amount":5,"to_account":12345678901234567890}`))
	if d.Verdict != intercept.RequireApproval {
		t.Fatalf("got %s", d.Verdict)
	}
	if _, err := s.Decide(d.ApprovalID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{
		`{"amount":5,"to_account":12345678901234567891}`,
		`{"amount":5.0000000000000001,"to_account":12345678901234567890}`,
	} {
		if d2 := intercept.Decide(ctx, g, call(args)); d2.Verdict != intercept.RequireApproval {
			t.Errorf("another call %s: got %s/%s on the approval of account ...890, want require_approval", args, d2.Verdict, d2.Reason)
		}
	}
}
