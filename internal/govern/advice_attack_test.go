package govern

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/intercept"
)

// readsOnly allows only what the classifier calls a Read: the kind of
// policy RFC-010 lets read classification.*.
const readsOnly = `default: deny
rules:
  - id: reads-ok
    when: 'classification.action_type == "Read"'
    decision: allow
`

// (Found by an attacker review.) TestAttackAgentSteersBuiltinToRead: an agent that controls only the
// arguments of a call must not be able to make the built-in classifier call
// a destructive call a Read, and so be allowed by a policy that allows
// reads only.
func TestAttackAgentSteersBuiltinToRead(t *testing.T) {
	b, err := classifier.NewBuiltin(classifier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, tool, args string }{
		// A PostgreSQL data-modifying CTE: deletes every user, reads
		// nothing but the ids it deleted.
		{"data-modifying CTE", "execute_sql", `{"sql":"WITH d AS (DELETE FROM users RETURNING id) SELECT id FROM d"}`},
		// The server runs "sql"; the classifier reads the last SQL-keyed
		// argument, one the agent added and the server ignores.
		{"decoy SQL argument", "execute_sql", `{"sql":"DROP TABLE users","query":"SELECT id FROM users"}`},
		// A destructive tool with a decoy query argument.
		{"decoy query on a delete tool", "delete_records", `{"table":"users","filter":"*","query":"SELECT id FROM users"}`},
		// A router tool: the server dispatches on "action"; the classifier
		// reads the first router key, a decoy "mode" the agent put first.
		{"decoy router key", "manage_users", `{"mode":"list","action":"delete","user_id":"alice"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *Advice
			a := &Advisor{Policy: compile(t, readsOnly), Classifier: b, OnEscalate: ActionApprove, OperatorAnswers: true,
				OnAdvice: func(adv *Advice) { cp := *adv; got = &cp }}
			d := desc(tc.tool, tc.args)
			d.TargetEndpoint = "stdio:npx -y @acme/db-tools"
			dec := intercept.Decide(context.Background(), a, d)
			at := got.Verdict.Axes.Get(classifier.AxisActionType)
			if dec.Verdict == intercept.Allow {
				t.Errorf("%s %s: allowed (action_type %s at %.2f from %s, composite %.2f): the agent chose the classification that allowed it",
					tc.tool, tc.args, at.Classified, at.Confidence, at.Source, got.Assessment.Composite)
			}
		})
	}
}
