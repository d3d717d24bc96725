package audit

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/telemetry"
)

// TestAttackDeepEventBreaksQueries (attacker review): an event's attrs
// are written as the gateway built them, and with audit.keep_arguments
// they hold a call's arguments as the agent nested them. A line nested
// deeper than encoding/json reads (10000 levels) was stored all the
// same, and every query reading its block failed ("exceeded max depth"):
// the events around it, other agents' calls included, could no longer be
// read by `sluice events`, the console, replay or the recommendation
// engine. Such an event is stored with its header and a note in place of
// its attrs; the query reads it and the rest.
func TestAttackDeepEventBreaksQueries(t *testing.T) {
	st, _ := openTest(t, Options{Sync: true})
	defer st.Close()
	ctx := context.Background()
	var deep any = []any{}
	for range 10_000 {
		deep = []any{deep}
	}
	raw := strings.Repeat("[", 9_999) + strings.Repeat("]", 9_999)
	evs := []telemetry.Event{
		{Type: "sluice.test", Time: t0, TxnID: "txn-deep", Agent: "mallory", Attrs: map[string]any{"x": deep}},
		telemetry.PolicyEnforcement{Time: t0, TxnID: "txn-alice", Agent: "alice", Tool: "read_file", Decision: "allow", Reason: "tool_allowed"}.Event(),
	}
	appendAll(t, st, evs)
	// A record encoded without an Attrs map (the events of every call).
	rec := telemetry.PolicyEnforcement{Time: t0, TxnID: "txn-rec", Agent: "mallory", Tool: "send", Decision: "allow", Reason: "tool_allowed",
		Arguments: telemetry.Arguments{SHA256: "00", Value: []any{deepFrom(raw)}}}
	if err := st.AppendRecord(ctx, rec); err != nil {
		t.Fatalf("AppendRecord: %v", err)
	}
	got, err := st.Query(ctx, Filter{})
	if err != nil {
		t.Fatalf("Query after an event nested 10000 levels deep: %v", err)
	}
	byTxn := map[string]telemetry.Event{}
	for _, e := range got {
		byTxn[e.TxnID] = e
	}
	if len(got) != 3 || byTxn["txn-alice"].Agent != "alice" {
		t.Fatalf("Query: %d events %v; want all three, alice's among them", len(got), got)
	}
	for _, txn := range []string{"txn-deep", "txn-rec"} {
		e := byTxn[txn]
		if e.Agent != "mallory" {
			t.Errorf("%s: agent %q, want mallory", txn, e.Agent)
		}
		if why, _ := e.Attrs[AttrsDropped].(string); !strings.Contains(why, "10000") {
			t.Errorf("%s: attrs %.200v; want %s saying why they were dropped", txn, e.Attrs, AttrsDropped)
		}
	}
}

// deepFrom decodes raw as encoding/json would, without its depth limit:
// raw is arrays nested in arrays.
func deepFrom(raw string) any {
	var v any = []any{}
	for range strings.Count(raw, "[") - 1 {
		v = []any{v}
	}
	return v
}
