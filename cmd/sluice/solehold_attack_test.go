package main

import (
	"strings"
	"testing"
)

// TestAttackClientAnswersClassifierHoldOverDeny (left open by attack88):
// a call the policy denies and a rule reading classification.* holds is
// held on the classifier's verdict alone, which the agent's own arguments
// shape. With approvals.client_may_answer such a hold was put to the
// client: where the client is the agent, the agent made the hold and
// answered it, and the call the policy denies went through. It is an
// operator's to answer only: the client is never asked, and where no
// operator can answer the policy's deny stands.
func TestAttackClientAnswersClassifierHoldOverDeny(t *testing.T) {
	const policy = "policy: {default: deny, result_mode: tool_result, rules: [{id: unsure, when: 'classification.composite_confidence < 0.5', decision: require_approval}]}\n" +
		"approvals: {client_may_answer: true}\n"
	t.Run("no operator", func(t *testing.T) {
		g := startServe(t, policy+"admin_listen: off\n"+deadClassifier(t, ""))
		got := modernCallCaps(t, g.url, `{"elicitation":{}}`)
		if strings.Contains(got, "input_required") || strings.Contains(got, "Echo: hi") || !strings.Contains(got, `"isError":true`) {
			t.Errorf("a call the policy denies, held only by the classifier, from a client that can be asked: got %s, want the policy's deny", got)
		}
	})
	t.Run("operator", func(t *testing.T) {
		g := startServe(t, policy+deadClassifier(t, ""))
		got := modernCallCaps(t, g.url, `{"elicitation":{}}`)
		if strings.Contains(got, "input_required") || !strings.Contains(got, "classifier_sole_allow") {
			t.Errorf("the same with an operator's admin API: got %s, want it held for the operator (classifier_sole_allow), the client not asked", got)
		}
	})
}
