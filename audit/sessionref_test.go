package audit

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/telemetry"
)

// TestEventsCLISessionByID: the gateway records a session by its
// reference (telemetry.SessionRef), its id being a credential. `sluice
// events --session` given the id finds the session's events, those
// recorded with its reference and those recorded, before references,
// with the id itself, each in a block of its own (the blocks' index
// finds either); given the reference, those recorded with it. Another
// session's are not selected.
func TestEventsCLISessionByID(t *testing.T) {
	st, path := openTest(t, Options{Sync: true})
	defer st.Close()
	const id, other = "s2.tpa7ob.alice-session", "s2.tpa7ob.bob-session"
	for _, e := range []telemetry.Event{
		{Type: telemetry.TypePolicyEnforced, Time: t0, TxnID: "old", Agent: "alice", Session: id, Decision: "allow"},
		{Type: telemetry.TypePolicyEnforced, Time: t0, TxnID: "new", Agent: "alice", Session: telemetry.SessionRef(id), Decision: "allow"},
		{Type: telemetry.TypePolicyEnforced, Time: t0, TxnID: "bob", Agent: "bob", Session: telemetry.SessionRef(other), Decision: "allow"},
	} {
		appendAll(t, st, []telemetry.Event{e})
		if err := st.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"query", "--session", id}, []string{"old", "new"}},
		{[]string{"export", "--session", id}, []string{"old", "new"}},
		{[]string{"query", "--session", id, "--agent", "alice", "--decision", "allow"}, []string{"old", "new"}},
		{[]string{"query", "--session", telemetry.SessionRef(id)}, []string{"new"}},
		{[]string{"query", "--session", other}, []string{"bob"}},
		{[]string{"query", "--session", id, "--agent", "bob"}, nil},
	} {
		var out bytes.Buffer
		args := append(tt.args, "--db", path, "--json")
		if err := RunEventsCLI(context.Background(), args, &out); err != nil {
			t.Fatalf("RunEventsCLI(%q): %v", args, err)
		}
		var got []string
		for line := range strings.Lines(out.String()) {
			for _, txn := range []string{"old", "new", "bob"} {
				if strings.Contains(line, `"txn_id":"`+txn+`"`) {
					got = append(got, txn)
				}
			}
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("events %q: got %v, want %v", tt.args, got, tt.want)
		}
	}
}
