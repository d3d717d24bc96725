package recommend

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/telemetry"
)

const basePolicy = `# the team's policy
default: deny
allow: [echo, legacy_export]          # tools anyone may call
tool_classes:
  read_document: [source:local]
  docs/read_page: [docs:access]
  docs/delete_page: [docs:access]
manifests:
  agent-a: {allowed_classes: [source:local]}
`

var now = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// corpus writes events through a real audit store and reads them back
// into an engine, as `sluice recommend` does.
func corpus(t *testing.T, events []telemetry.Event) []Recommendation {
	t.Helper()
	ctx := context.Background()
	st, err := audit.Open(filepath.Join(t.TempDir(), "events.db"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, e := range events {
		if err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	doc, err := ParseDoc([]byte(basePolicy), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eng := NewEngine(doc, Options{Now: func() time.Time { return now }})
	if err := st.Scan(ctx, audit.Filter{}, func(e telemetry.Event) error { eng.Observe(e); return nil }); err != nil {
		t.Fatal(err)
	}
	return eng.Recommendations()
}

func enforced(at time.Time, agent, upstream, tool, decision, reason, boundary string, classes ...string) telemetry.Event {
	return telemetry.PolicyEnforcement{Time: at, TxnID: at.Format("150405.000") + tool, Agent: agent, Upstream: upstream, Tool: tool,
		Decision: decision, Reason: reason, BoundaryDeclared: boundary,
		Evidence: telemetry.Evidence{MatchedToolClasses: classes, ReasonCode: reason}}.Event()
}

func classified(at time.Time, agent, upstream, tool, declared, verdict, action string) telemetry.Event {
	return telemetry.IntentClassification{Time: at, TxnID: at.Format("150405.000") + tool, Agent: agent, Upstream: upstream, Tool: tool,
		CapabilityClassDeclared: declared, CapabilityClassVerdict: verdict, ConsistentWithDeclaration: declared == "" || declared == verdict,
		CapabilityClassConfidence: 0.9, CompositeConfidence: 0.85,
		Axes: map[string]telemetry.AxisClassification{"action_type": {Classified: action, Confidence: 0.9}, "boundary": {Classified: "Local", Confidence: 0.8}}}.Event()
}

func only(t *testing.T, recs []Recommendation, typ Type) []Recommendation {
	t.Helper()
	var out []Recommendation
	for _, r := range recs {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

func TestAddTool(t *testing.T) {
	var evs []telemetry.Event
	for i := range 6 { // manifest denials of agent-a's web_search, class sink:network
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "agent-a", "web", "web_search", "deny", "manifest_class_not_allowed", "", "sink:network"))
	}
	for i := range 5 { // default denials of agent-b's send_email
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "agent-b", "mail", "send_email", "deny", "default_deny", ""))
	}
	for i := range 4 { // too few: no recommendation
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "agent-c", "mail", "send_email", "deny", "default_deny", ""))
	}
	// Old denials (outside the 30-day window) do not count.
	for i := range 9 {
		evs = append(evs, enforced(now.AddDate(0, 0, -40-i), "agent-d", "mail", "send_email", "deny", "default_deny", ""))
	}
	recs := only(t, corpus(t, evs), AddTool)
	if len(recs) != 2 {
		t.Fatalf("ADD_TOOL: %+v, want agent-a and agent-b", recs)
	}
	a, b := recs[0], recs[1]
	if a.Agent != "agent-a" || a.Change.Field() != "manifests.agent-a.allowed_classes" || a.Change.Operation != "add" ||
		strings.Join(toStrings(a.Change.Value), ",") != "sink:network" || a.Evidence.Count != 6 || a.Evidence.Reasons["manifest_class_not_allowed"] != 6 {
		t.Errorf("agent-a: %+v", a)
	}
	if len(a.Evidence.ExampleTxnIDs) != 5 || a.Evidence.FirstObserved.IsZero() {
		t.Errorf("agent-a evidence: %+v", a.Evidence)
	}
	if b.Agent != "agent-b" || b.Change.Field() != "rules" || b.Tool != "mail/send_email" {
		t.Errorf("agent-b: %+v", b)
	}
	// The approved change compiles and does what it says.
	out, err := Apply([]byte(basePolicy), a)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := ParseDoc(out, "x"); err != nil || strings.Join(d.Manifests["agent-a"].AllowedClasses, ",") != "source:local,sink:network" || !strings.Contains(string(out), "# the team's policy") {
		t.Errorf("applied (%v):\n%s", err, out)
	}
	out, err = Apply([]byte(basePolicy), b)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ParseDoc(out, "x")
	if err != nil || doc.Version == recs[1].PolicyVersion {
		t.Errorf("new policy: %v, version %s unchanged", err, doc.Version)
	}
	for _, want := range []string{"id: " + b.ID, "match_tool: send_email", "upstream: mail", `when: agent == "agent-b"`, "decision: allow"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("applied rule lacks %q:\n%s", want, out)
		}
	}
	// Ids are deterministic: the same corpus proposes the same ids.
	if again := only(t, corpus(t, evs), AddTool); again[0].ID != a.ID || again[1].ID != b.ID {
		t.Errorf("ids changed: %s %s vs %s %s", again[0].ID, again[1].ID, a.ID, b.ID)
	}
}

func TestRemoveTool(t *testing.T) {
	old := now.AddDate(0, 0, -120)
	evs := []telemetry.Event{
		enforced(old, "agent-a", "", "echo", "allow", "tool_allowed", ""),
		enforced(old, "agent-a", "", "legacy_export", "allow", "tool_allowed", ""),
		enforced(now.AddDate(0, 0, -10), "agent-a", "", "echo", "allow", "tool_allowed", ""),
	}
	recs := only(t, corpus(t, evs), RemoveTool)
	if len(recs) != 1 || recs[0].Tool != "legacy_export" || recs[0].Change.Field() != "allow" || recs[0].Change.Operation != "remove" {
		t.Fatalf("REMOVE_TOOL: %+v", recs)
	}
	out, err := Apply([]byte(basePolicy), recs[0])
	if err != nil || strings.Contains(string(out), "legacy_export") || !strings.Contains(string(out), "allow: [echo]") {
		t.Errorf("applied (%v):\n%s", err, out)
	}
	// A tool that was held for approval once is not proposed.
	evs = append(evs, enforced(old.Add(time.Hour), "agent-a", "", "legacy_export", "require_approval", "approval_required", ""))
	if recs := only(t, corpus(t, evs), RemoveTool); len(recs) != 0 {
		t.Errorf("escalated tool proposed: %+v", recs)
	}
	// A corpus younger than 90 days cannot say "never".
	if recs := only(t, corpus(t, evs[2:]), RemoveTool); len(recs) != 0 {
		t.Errorf("short corpus proposed: %+v", recs)
	}
}

func TestElevateClass(t *testing.T) {
	var evs []telemetry.Event
	for i := range 10 {
		v := "finance.invoicing.delete"
		if i == 9 {
			v = "finance.invoicing.write"
		}
		evs = append(evs, classified(now.Add(-time.Duration(i)*time.Hour), "taxbot", "billing", "update_invoice", "finance.invoicing.management", v, "Write"))
	}
	recs := only(t, corpus(t, evs), ElevateClass)
	if len(recs) != 1 {
		t.Fatalf("ELEVATE_CLASS: %+v", recs)
	}
	r := recs[0]
	if r.CapabilityClass != "finance.invoicing.delete" || r.Change.Field() != "tool_classes.billing/update_invoice" || r.Evidence.ClassifierVerdictConsistency != 0.9 {
		t.Errorf("%+v", r)
	}
	if r.Evidence.Axes["action_type"]["Write"].N != 10 || r.Evidence.Axes["action_type"]["Write"].MeanConfidence != 0.9 {
		t.Errorf("axes: %+v", r.Evidence.Axes)
	}
	// Mostly consistent classifications propose nothing.
	var fine []telemetry.Event
	for i := range 10 {
		fine = append(fine, classified(now.Add(-time.Duration(i)*time.Hour), "taxbot", "billing", "read_invoice", "finance.read", "finance.read", "Read"))
	}
	if recs := only(t, corpus(t, fine), ElevateClass); len(recs) != 0 {
		t.Errorf("consistent: %+v", recs)
	}
}

func TestRestrictBoundary(t *testing.T) {
	var evs []telemetry.Event
	for i := range 6 {
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "agent-a", "docs", "read_page", "allow", "rule", "intra-org"))
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "agent-b", "web", "fetch", "allow", "rule", "external"))
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "agent-c", "docs", "read_page", "allow", "rule", ""))
	}
	recs := only(t, corpus(t, evs), RestrictBoundary)
	if len(recs) != 1 || recs[0].Agent != "agent-a" || recs[0].Change.Value != "intra-org" {
		t.Fatalf("RESTRICT_BOUNDARY: %+v (agent-b goes external; agent-c's boundary is unknown)", recs)
	}
	out, err := Apply([]byte(basePolicy), recs[0])
	if err != nil || !strings.Contains(string(out), "boundary_ceiling: intra-org") {
		t.Errorf("applied (%v):\n%s", err, out)
	}
}

func TestSplitClass(t *testing.T) {
	var evs []telemetry.Event
	for i := range 4 {
		evs = append(evs, classified(now.Add(-time.Duration(i)*time.Hour), "agent-a", "docs", "read_page", "", "", "Read"))
		evs = append(evs, classified(now.Add(-time.Duration(i)*time.Hour), "agent-a", "docs", "delete_page", "", "", "Write"))
	}
	recs := only(t, corpus(t, evs), SplitClass)
	if len(recs) != 1 || recs[0].CapabilityClass != "docs:access" {
		t.Fatalf("SPLIT_CLASS: %+v", recs)
	}
	out, err := Apply([]byte(basePolicy), recs[0])
	if err != nil {
		t.Fatal(err)
	}
	if d, err := ParseDoc(out, "x"); err != nil || strings.Join(d.ToolClasses["docs/delete_page"], ",") != "docs:access,docs:access:write" || len(d.ToolClasses["docs/read_page"]) != 1 {
		t.Errorf("applied (%v):\n%s", err, out)
	}
	if d := Diff([]byte(basePolicy), out); !strings.Contains(d, "- ") || !strings.Contains(d, "+ ") || !strings.Contains(d, "delete_page") {
		t.Errorf("diff:\n%s", d)
	}
}

func TestDeclineSuppresses(t *testing.T) {
	var evs []telemetry.Event
	for i := range 6 {
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "agent-b", "mail", "send_email", "deny", "default_deny", ""))
	}
	recs := only(t, corpus(t, evs), AddTool)
	st := OpenStore(filepath.Join(t.TempDir(), "recommendations.json"))
	pending, err := st.Merge(recs, now)
	if err != nil || len(pending) != 1 {
		t.Fatalf("merge: %v %v", pending, err)
	}
	id := pending[0].ID
	if _, err := st.Decline(id, "ops@example.com", "MAYBE", now); err == nil {
		t.Error("a decline without a listed reason code was accepted")
	}
	if _, err := st.Decline(id, "", "NOT_NEEDED", now); err == nil {
		t.Error("a decline naming nobody was accepted")
	}
	r, err := st.Decline(id, "ops@example.com", "NOT_NEEDED", now)
	if err != nil || r.Status != StatusDeclined || r.Decision.DecidedBy != "ops@example.com" {
		t.Fatalf("decline: %+v %v", r, err)
	}
	// Proposed again within 30 days: suppressed.
	if pending, _ := st.Merge(recs, now.AddDate(0, 0, 29)); len(pending) != 0 {
		t.Errorf("proposed again after 29 days: %+v", pending)
	}
	if _, err := st.Approved(id, "ops", "v2", now); err == nil {
		t.Error("approved a declined recommendation")
	}
	// After 30 days it is pending again.
	if pending, _ := st.Merge(recs, now.AddDate(0, 0, 31)); len(pending) != 1 || pending[0].ID != id {
		t.Errorf("after 31 days: %+v", pending)
	}
	if r, err := st.Approved(id, "ops", "v2", now.AddDate(0, 0, 31)); err != nil || r.Decision.ResultingPolicyVersion != "v2" {
		t.Errorf("approve: %+v %v", r, err)
	}
	// An approved finding is never proposed again.
	if pending, _ := st.Merge(recs, now.AddDate(0, 0, 90)); len(pending) != 0 {
		t.Errorf("approved one proposed again: %+v", pending)
	}
}

// TestApplyKeepsTheRest: approving a change leaves every other line of
// the policy as the author wrote it.
func TestApplyKeepsTheRest(t *testing.T) {
	r := Recommendation{ID: "rec_x", Type: AddTool, Change: Change{Path: []string{"manifests", "agent-a", "allowed_classes"}, Operation: "add", Value: []string{"sink:network"}}}
	out, err := Apply([]byte(basePolicy), r)
	if err != nil {
		t.Fatal(err)
	}
	d := Diff([]byte(basePolicy), out)
	var changed []string
	for _, l := range strings.Split(d, "\n") {
		if strings.HasPrefix(l, "+ ") || strings.HasPrefix(l, "- ") {
			changed = append(changed, l)
		}
	}
	if len(changed) != 2 || !strings.Contains(changed[0]+changed[1], "agent-a: {allowed_classes: [source:local, sink:network]}") {
		t.Errorf("diff changes more than the manifest line:\n%s", d)
	}
}

// TestCutNamesNotProposed: a name the audit store cut (longer than any a
// rule could name, recorded as a prefix and a marker) is no tool to
// propose a rule for, as the whole name was not before.
func TestCutNamesNotProposed(t *testing.T) {
	var evs []telemetry.Event
	long := strings.Repeat("x", 8<<10)
	for i := range 6 {
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "agent-b", "mail", long, "deny", "default_deny", ""))
	}
	if recs := only(t, corpus(t, evs), AddTool); len(recs) != 0 {
		t.Errorf("ADD_TOOL for a cut name: %.300v", recs)
	}
}
