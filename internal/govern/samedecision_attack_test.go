package govern

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/intercept"
)

// (Found by an attacker review.) TestAttackDenyRecordedAsClassifiers: a
// call the policy denies without classification.* is denied by the policy,
// whatever a rule reading it says too. Before, the record named the first
// matching rule with classification.* (earlier in the file), so a deny that
// stood on the deterministic policy read as the classifier's.
func TestAttackDenyRecordedAsClassifiers(t *testing.T) {
	p := compile(t, `default: allow
rules:
  - id: classifier-says-write
    when: 'classification.action_type == "Write"'
    decision: deny
  - id: no-email
    match: {match_tool: send_email}
    decision: deny
`)
	var got *Advice
	a := &Advisor{Policy: p, Classifier: fixed{v: verdict(classifier.Write, 0.95)}, OnAdvice: func(adv *Advice) { cp := *adv; got = &cp }}
	dec := intercept.Decide(context.Background(), a, desc("send_email", `{}`))
	if dec.Verdict != intercept.Deny || dec.RuleID != "no-email" {
		t.Errorf("got %s by rule %q, want deny by no-email, the rule without classification.*", dec.Verdict, dec.RuleID)
	}
	if got == nil || got.SoleDenyViolation {
		t.Errorf("advice %+v: a deny the policy makes alone is no sole-deny violation", got)
	}
}
