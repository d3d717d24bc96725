package approval

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// The approval bound the RFC 8785 form of the arguments, which sorts
// members: {"AMOUNT":1000000,"amount":5} and {"amount":5,"AMOUNT":1000000}
// are one canonical value. But a Go upstream (encoding/json matches
// names case-insensitively, and the last member wins) pays 5 for the
// first and 1000000 for the second. An operator approved the call that
// pays 5; the agent sent the members the other way round, and the
// approval let it through.
func TestAttackApprovalCaseVariantOrder(t *testing.T) {
	held := `{"AMOUNT":1000000,"amount":5,"to":"x"}`
	swapped := `{"amount":5,"AMOUNT":1000000,"to":"x"}`
	var a, b struct{ Amount int }
	if json.Unmarshal([]byte(held), &a) != nil || json.Unmarshal([]byte(swapped), &b) != nil || a.Amount == b.Amount {
		t.Fatalf("premise: a Go upstream reads amount %d and %d", a.Amount, b.Amount)
	}

	c := &clock{t: time.Unix(1000, 0)}
	s := NewStore(Options{Timeout: time.Minute, Now: c.now})
	g := &Gate{Next: holdPay, Store: s}
	ctx := context.Background()
	d := intercept.Decide(ctx, g, call(held))
	if d.Verdict != intercept.RequireApproval {
		t.Fatalf("got %s", d.Verdict)
	}
	if _, err := s.Decide(d.ApprovalID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	if d2 := intercept.Decide(ctx, g, call(swapped)); d2.Verdict != intercept.RequireApproval {
		t.Errorf("%s on the approval of %s (a Go upstream pays %d, not %d): got %s/%s, want require_approval", swapped, held, b.Amount, a.Amount, d2.Verdict, d2.Reason)
	}
	// The approved call itself still goes through.
	if d3 := intercept.Decide(ctx, g, call(held)); d3.Verdict != intercept.Allow {
		t.Errorf("the approved call: got %s/%s, want allow", d3.Verdict, d3.Reason)
	}
}
