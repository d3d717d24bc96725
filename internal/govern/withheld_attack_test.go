package govern

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/intercept"
)

// End to end through the Advisor: an argument of the wrong type makes a
// deny rule that also reads classification.* fail; the withheld base
// decision treats that failure as "does not hold" and allows, and the
// Advisor lets the base allow override the (policy_error) deny.
func TestAttackAdvisorArgsErrorBecomesAllow(t *testing.T) {
	a := &Advisor{Policy: compile(t, `default: allow
rules:
  - id: big-payments
    match: {match_tool: pay}
    when: args.amount > 1000 || classification.risk_level == "CRITICAL"
    decision: deny
`), Classifier: fixed{v: verdict(classifier.Read, 0.95)}}
	if dec := intercept.Decide(context.Background(), a, desc("pay", `{"amount": 5000}`)); dec.Verdict != intercept.Deny {
		t.Fatalf("int amount: %s/%s, want deny", dec.Verdict, dec.Reason)
	}
	if dec := intercept.Decide(context.Background(), a, desc("pay", `{"amount": "5000"}`)); dec.Verdict != intercept.Deny {
		t.Errorf("string amount: %s/%s: the condition failed, which must deny", dec.Verdict, dec.Reason)
	}
}
