package approval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackAgentSpellingsApproval: an agent's name in two Unicode
// spellings (jos\u00e9, jose\u0301), which manifests, route memory and
// conditions read as one agent, was two agents to approvals: the held
// call of one spelling could be answered by a decider naming it in the
// other, and each spelling had its own MaxPendingPerAgent.
func TestAttackAgentSpellingsApproval(t *testing.T) {
	s := NewStore(Options{})
	g := &Gate{Next: holdPay, Store: s}
	d := call(`{"amount":3}`)
	d.Agent = "jose\u0301"
	dec := intercept.Decide(context.Background(), g, d)
	if dec.ApprovalID == "" {
		t.Fatalf("not held: %+v", dec)
	}
	if _, err := s.Decide(dec.ApprovalID, true, "jos\u00e9"); !errors.Is(err, ErrSelfApproval) {
		t.Errorf("the agent's other spelling answered its held call: %v, want ErrSelfApproval", err)
	}

	// One agent's bound, whichever spelling its calls give.
	held := 1
	for i := range MaxPendingPerAgent + 5 {
		d := call(fmt.Sprintf(`{"amount":%d}`, 100+i))
		d.Agent = []string{"jos\u00e9", "jose\u0301"}[i%2]
		dec := intercept.Decide(context.Background(), g, d)
		if dec.ApprovalID != "" {
			held++
		} else if !strings.Contains(dec.PublicReason, "calls waiting for approval") {
			t.Fatalf("call %d neither held nor refused for the bound: %+v", i, dec)
		}
	}
	if held > MaxPendingPerAgent {
		t.Errorf("%d calls held for one agent in two spellings, want at most %d", held, MaxPendingPerAgent)
	}
}
