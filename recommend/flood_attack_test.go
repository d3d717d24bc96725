package recommend

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

// TestAttackAgentNamesFlood (attacker review): MaxAddToolPerAgent bounds
// one agent's proposals, but without authentication an agent is the name
// its client gives, at every call: a client calling a made-up tool five
// times under each of 600 names had 600 ADD_TOOL proposals made (and,
// with five allowed calls a name, 600 RESTRICT_BOUNDARY), up to tens of
// thousands a run, burying the one an operator needs among them. Each
// type now keeps at most MaxPerType, those with the most evidence.
func TestAttackAgentNamesFlood(t *testing.T) {
	var evs []telemetry.Event
	for n := range 3 * MaxPerType {
		agent := fmt.Sprintf("agent-%04d", n)
		for i := range 5 {
			at := now.Add(-time.Duration(i) * time.Minute)
			evs = append(evs, enforced(at, agent, "mail", "made_up", "deny", "default_deny", ""),
				enforced(at, agent, "mail", "echo", "allow", "tool_allowed", "local"))
		}
	}
	for i := range 8 {
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "agent-b", "mail", "send_email", "deny", "default_deny", ""))
	}
	recs := corpus(t, evs)
	for _, typ := range []Type{AddTool, RestrictBoundary} {
		if n := len(only(t, recs, typ)); n > MaxPerType {
			t.Errorf("%s: %d proposals from %d names; want at most %d", typ, n, 3*MaxPerType, MaxPerType)
		}
	}
	found := false
	for _, r := range only(t, recs, AddTool) {
		found = found || r.Agent == "agent-b" && r.Tool == "mail/send_email"
	}
	if !found {
		t.Error("agent-b's ADD_TOOL proposal (the most evidence) is not among those kept")
	}
}

// TestAttackStoreKeepsEveryProposal (attacker review): the store kept a
// pending recommendation for good once proposed, even when no later run
// proposed it (its evidence gone from the window, or its agent's name
// made up for one run): a flood of names a day grew recommendations.json,
// read and written whole at every run, approval and decline, and every
// page of the console listing them, without bound. A pending
// recommendation the engine no longer proposes is dropped by the next
// Merge; decided ones are kept.
func TestAttackStoreKeepsEveryProposal(t *testing.T) {
	st := OpenStore(filepath.Join(t.TempDir(), "recommendations.json"))
	rec := func(agent string) Recommendation {
		r := Recommendation{Type: AddTool, Agent: agent, Tool: "mail/send_email",
			Change: Change{Path: []string{"rules"}, Operation: "add", Value: map[string]any{"agent": agent}}}
		r.ID = recommendationID(&r)
		return r
	}
	var first []Recommendation
	for n := range 50 {
		first = append(first, rec(fmt.Sprintf("made-up-%02d", n)))
	}
	first = append(first, rec("agent-b"), rec("agent-c"))
	if _, err := st.Merge(first, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Decline(rec("agent-c").ID, "ops", "NOT_NEEDED", now); err != nil {
		t.Fatal(err)
	}
	pending, err := st.Merge([]Recommendation{rec("agent-b")}, now.Add(24*time.Hour))
	if err != nil || len(pending) != 1 {
		t.Fatalf("second run: %v, %v", pending, err)
	}
	all, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, r := range all {
		status[r.Agent] = r.Status
	}
	if len(all) != 2 || status["agent-b"] != StatusPending || status["agent-c"] != StatusDeclined {
		t.Errorf("after a run proposing only agent-b's: %d stored (%v); want agent-b's pending and agent-c's decline", len(all), status)
	}
}
