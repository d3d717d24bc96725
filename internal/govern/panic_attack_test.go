package govern

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/intercept"
)

// panicking is a classifier with a bug the call's arguments reach.
type panicking struct{}

func (panicking) Classify(context.Context, *intercept.ActionDescriptor) (classifier.Verdict, error) {
	var m map[string]int
	m["x"]++ // assignment to entry in nil map
	return classifier.Verdict{}, nil
}

// (Found by an attacker review.) TestAttackClassifierPanic: a classifier
// that panics is a classifier that gave no verdict: the call goes on as an
// unclassified one (escalated). Before, a provider classifier's panic, on
// the goroutine it runs on beside the policy, ended the gateway's process;
// an immediate one's was recovered by intercept.Decide as a policy_error
// deny, the classifier denying alone.
func TestAttackClassifierPanic(t *testing.T) {
	var got *Advice
	a := &Advisor{Policy: compile(t, "default: allow\n"), Classifier: panicking{}, OnEscalate: ActionApprove, OperatorAnswers: true,
		OnAdvice: func(adv *Advice) { cp := *adv; got = &cp }}
	dec := intercept.Decide(context.Background(), a, desc("get", `{}`))
	if dec.Verdict != intercept.RequireApproval || dec.Reason != ReasonEscalation {
		t.Errorf("got %s/%s, want the unclassified call held (%s)", dec.Verdict, dec.Reason, ReasonEscalation)
	}
	if got == nil || got.Err == nil {
		t.Errorf("advice: %+v, want the panic as its error", got)
	}
}
