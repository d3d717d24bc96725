package govern

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/intercept"
)

// unsureHeld holds what the classifier is unsure of: a require_approval
// rule that reads classification.*, the policy's way of saying
// on_escalate: approve.
const unsureHeld = `default: %s
rules:
  - id: unsure
    when: 'classification.composite_confidence < 0.5'
    decision: require_approval
`

// (Found by an attacker review.) TestAttackClassifierHoldNobodyAnswers: a
// hold that rests only on classification.* is the classifier's doing, as
// an escalation is, so it holds only where someone can answer. Before, the
// provider's outage (the fallback verdict, composite 0) held every call
// the policy allows for a human nobody could be, and each failed at its
// approval timeout: the classifier denied alone. And a call the policy
// denies was held, not denied, with nothing saying the classifier let it
// be asked for.
func TestAttackClassifierHoldNobodyAnswers(t *testing.T) {
	down := fixed{v: classifier.Verdict{}, err: errors.New("provider down")}
	for _, tc := range []struct {
		name     string
		def      string
		answers  bool
		want     intercept.Verdict
		soleHold bool
		unheld   string
	}{
		{"allowed, nobody answers: the allow stands", "allow", false, intercept.Allow, false, UnheldNobodyAnswers},
		{"allowed, an operator answers: held", "allow", true, intercept.RequireApproval, false, ""},
		{"denied, nobody answers: the deny stands", "deny", false, intercept.Deny, true, ""},
		{"denied, an operator answers: held, as a sole allow", "deny", true, intercept.RequireApproval, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *Advice
			a := &Advisor{Policy: compile(t, fmt.Sprintf(unsureHeld, tc.def)), Classifier: down, OperatorAnswers: tc.answers,
				OnAdvice: func(adv *Advice) { cp := *adv; got = &cp }}
			dec := intercept.Decide(context.Background(), a, desc("get", `{}`))
			if dec.Verdict != tc.want {
				t.Errorf("got %s/%s, want %s", dec.Verdict, dec.Reason, tc.want)
			}
			if tc.soleHold && tc.answers && dec.Reason != ReasonSoleAllow {
				t.Errorf("held with reason %s, want %s: the policy alone denies it", dec.Reason, ReasonSoleAllow)
			}
			if got == nil {
				t.Fatal("no advice")
			}
			if got.SoleAllow != tc.soleHold || got.Unheld != tc.unheld {
				t.Errorf("advice: sole allow %v, unheld %q; want %v, %q", got.SoleAllow, got.Unheld, tc.soleHold, tc.unheld)
			}
		})
	}
}
