package recommend

// The tests in this file were written by an attacker review of the
// recommendation engine; each failed before its fix.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/telemetry"
)

func corpusOf(t *testing.T, src string, events []telemetry.Event) []Recommendation {
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
	doc, err := ParseDoc([]byte(src), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eng := NewEngine(doc, Options{Now: func() time.Time { return now }})
	if err := st.Scan(ctx, audit.Filter{}, func(e telemetry.Event) error { eng.Observe(e); return nil }); err != nil {
		t.Fatal(err)
	}
	return eng.Recommendations()
}

func decideIn(t *testing.T, src []byte, agent, upstream, tool, boundary string) intercept.Decision {
	t.Helper()
	p, err := policy.Compile(src, "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := p.Decide(context.Background(), &intercept.ActionDescriptor{Method: "tools/call", ToolName: tool, Upstream: upstream,
		Agent: agent, SessionID: "s", BoundaryDeclared: boundary, Parameters: jsontext.Value("{}")})
	return d
}

// ELEVATE_CLASS says "class X as Y too", but for a tool classified under
// its bare name the change creates a pinned upstream/tool entry, which
// replaces the bare entry's classes: the declared class is gone, and with
// it the deny rule that matched it. The evidence is one agent's own calls.
func TestAttackElevateClassDropsDeclaredClass(t *testing.T) {
	const src = `default: deny
tool_classes:
  delete_repo: [vcs:destructive]
  read_repo: [vcs:read]
rules:
  - id: no-destructive
    match: {match_any_class: [vcs:destructive]}
    decision: deny
  - id: reads
    match: {match_any_class: [vcs:read]}
    decision: allow
`
	if d := decideIn(t, []byte(src), "mallory", "github", "delete_repo", ""); d.Verdict != intercept.Deny {
		t.Fatalf("before: %s", d.Verdict)
	}
	var evs []telemetry.Event
	for i := range 6 { // mallory shapes its arguments so the classifier calls them reads
		evs = append(evs, classified(now.Add(-time.Duration(i)*time.Hour), "mallory", "github", "delete_repo", "vcs:destructive", "vcs:read", "Read"))
	}
	recs := only(t, corpusOf(t, src, evs), ElevateClass)
	if len(recs) != 1 {
		t.Fatalf("ELEVATE_CLASS: %+v", recs)
	}
	out, err := Apply([]byte(src), recs[0])
	if err != nil {
		t.Fatal(err)
	}
	if d := decideIn(t, out, "mallory", "github", "delete_repo", ""); d.Verdict != intercept.Deny {
		t.Errorf("approving %q (%s) makes mallory's delete_repo %s by %q; diff:\n%s", recs[0].Summary, recs[0].Change.Field(), d.Verdict, d.RuleID, Diff([]byte(src), out))
	}
}

// RESTRICT_BOUNDARY for an agent governed by the "*" manifest creates a
// manifest of its own with only a ceiling, which replaces "*" for it: its
// allowed_classes no longer apply. The agent steers it with the boundary
// its own calls declare.
func TestAttackRestrictBoundaryEscapesDefaultManifest(t *testing.T) {
	const src = `default: deny
tool_classes:
  read_doc: [docs:read]
  delete_doc: [docs:write]
rules:
  - id: docs
    match: {match_any_class: [docs:read, docs:write]}
    decision: allow
manifests:
  "*": {allowed_classes: [docs:read]}
  editor: {allowed_classes: [docs:read, docs:write]}
`
	if d := decideIn(t, []byte(src), "intern", "docs", "delete_doc", "local"); d.Verdict != intercept.Deny {
		t.Fatalf("before: %s", d.Verdict)
	}
	var evs []telemetry.Event
	for i := range 6 {
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "intern", "docs", "read_doc", "allow", "rule_allow", "local", "docs:read"))
	}
	recs := only(t, corpusOf(t, src, evs), RestrictBoundary)
	if len(recs) != 1 {
		t.Fatalf("RESTRICT_BOUNDARY: %+v", recs)
	}
	out, err := Apply([]byte(src), recs[0])
	if err != nil {
		t.Fatal(err)
	}
	if d := decideIn(t, out, "intern", "docs", "delete_doc", "local"); d.Verdict != intercept.Deny {
		t.Errorf("approving %q makes intern's delete_doc %s by %q; diff:\n%s", recs[0].Summary, d.Verdict, d.RuleID, Diff([]byte(src), out))
	}
}

// "*" in manifests is the manifest of every agent without its own, not an
// agent; but an agent may call itself "*" (clientInfo without
// authentication; a JWT subject). Its denials under the default manifest
// made ADD_TOOL add the class to "*", and approving "let * call
// delete_doc" let every agent without a manifest call it.
func TestAttackAgentNamedStarWidensDefaultManifest(t *testing.T) {
	const src = `default: deny
tool_classes:
  read_doc: [docs:read]
  delete_doc: [docs:write]
rules:
  - id: docs
    match: {match_any_class: [docs:read, docs:write]}
    decision: allow
manifests:
  "*": {allowed_classes: [docs:read]}
`
	if d := decideIn(t, []byte(src), "intern", "docs", "delete_doc", ""); d.Verdict != intercept.Deny {
		t.Fatalf("before: %s", d.Verdict)
	}
	var evs []telemetry.Event
	for i := range 6 {
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "*", "docs", "delete_doc", "deny", "manifest_class_not_allowed", "", "docs:write"))
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "*", "docs", "read_doc", "allow", "rule_allow", "local", "docs:read"))
	}
	for _, r := range corpusOf(t, src, evs) {
		out, err := Apply([]byte(src), r)
		if err != nil {
			continue
		}
		if d := decideIn(t, out, "intern", "docs", "delete_doc", ""); d.Verdict != intercept.Deny {
			t.Errorf("approving %s %q makes intern's delete_doc %s; diff:\n%s", r.Type, r.Summary, d.Verdict, Diff([]byte(src), out))
		}
		if d := decideIn(t, out, "intern", "docs", "read_doc", "external"); d.Verdict != intercept.Allow {
			t.Errorf("approving %s %q makes intern's read_doc %s; diff:\n%s", r.Type, r.Summary, d.Verdict, Diff([]byte(src), out))
		}
	}
}

// TestAttackAddToolFlood: an agent calling made-up tool names five times
// each (every one a default denial) got an ADD_TOOL proposal per name,
// burying the others under as many as it liked. An agent now gets at
// most MaxAddToolPerAgent, those with the most evidence; other agents'
// proposals are all there.
func TestAttackAddToolFlood(t *testing.T) {
	var evs []telemetry.Event
	for n := range MaxAddToolPerAgent + 30 {
		for i := range 5 + n%3 {
			evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Minute), "flooder", "mail", fmt.Sprintf("made_up_%03d", n), "deny", "default_deny", ""))
		}
	}
	for i := range 5 {
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "agent-b", "mail", "send_email", "deny", "default_deny", ""))
	}
	recs := only(t, corpus(t, evs), AddTool)
	var flood, b int
	minFlood := 99
	for _, r := range recs {
		switch r.Agent {
		case "flooder":
			flood++
			minFlood = min(minFlood, r.Evidence.Count)
		case "agent-b":
			b++
		}
	}
	if flood != MaxAddToolPerAgent || b != 1 {
		t.Errorf("ADD_TOOL: %d for the flooder, %d for agent-b; want %d and 1", flood, b, MaxAddToolPerAgent)
	}
	if minFlood < 6 {
		t.Errorf("the flooder's kept proposals include one with %d denials; want those with the most evidence", minFlood)
	}
}

// TestAttackMadeUpNamesExhaustMemory: a call to a tool no rule allows is
// denied and recorded, and so is its classification; the engine kept a
// tally of each for every tool name an agent made up, and a last-call
// time and action types too, some 2 KB a name: 50,000 calls to made-up
// names had each run hold 100 MB in the serving gateway, a million 2 GB.
// The engine now keeps a bounded lot (MaxToolsPerAgent, MaxTallies), those
// with the most events, and proposes what it proposed before.
func TestAttackMadeUpNamesExhaustMemory(t *testing.T) {
	doc, err := ParseDoc([]byte(basePolicy), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	eng := NewEngine(doc, Options{Now: func() time.Time { return now }})
	for i := range 8 { // denials that call for a proposal, before and after the flood
		at := now.Add(-time.Duration(i) * time.Hour)
		eng.Observe(enforced(at, "mallory", "mail", "send_email", "deny", "default_deny", ""))
		eng.Observe(enforced(at, "agent-b", "mail", "send_email", "deny", "default_deny", ""))
	}
	for i := range 50_000 {
		tool := fmt.Sprintf("made_up_%06d", i)
		at := now.Add(-time.Duration(i) * time.Second)
		eng.Observe(enforced(at, "mallory", "web", tool, "deny", "default_deny", ""))
		eng.Observe(classified(at, "mallory", "web", tool, "", "web:read", "Read"))
	}
	for i := range 3_000 { // and names as long as a request body allows
		tool := fmt.Sprintf("long_%06d_", i) + strings.Repeat("x", 64<<10)
		at := now.Add(-time.Duration(i) * time.Second)
		eng.Observe(enforced(at, "mallory", "web", tool, "deny", "default_deny", ""))
		eng.Observe(classified(at, "mallory", "web", tool, "", "web:read", "Read"))
	}
	for i := range 8 {
		eng.Observe(enforced(now.Add(-time.Duration(i)*time.Minute), "agent-c", "mail", "send_email", "deny", "default_deny", ""))
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if held := int64(ms.HeapAlloc) - int64(before); held > 25<<20 {
		t.Errorf("the engine holds %d MB after 53,000 calls to made-up tool names; want it bounded (under 25 MB)", held>>20)
	}
	want := map[string]bool{"mallory": false, "agent-b": false, "agent-c": false}
	for _, r := range only(t, eng.Recommendations(), AddTool) {
		if r.Tool == "mail/send_email" {
			want[r.Agent] = true
		}
	}
	for agent, got := range want {
		if !got {
			t.Errorf("no ADD_TOOL for %s's mail/send_email after the flood", agent)
		}
	}
}

// TestAttackElevateClassAllowsDefaultDenied: ELEVATE_CLASS reads as
// scrutiny ("class delete_repo as vcs:read too: the classifier finds it
// there"), but a class added to a tool is a class rules match: under
// default: deny, a destructive tool no rule names is denied, and the
// class an agent's shaped arguments had the classifier find for it was
// one an allow rule takes. Approving it allowed delete_repo for every
// agent. A change that lets any agent do more than before is no
// elevation: it is not proposed.
func TestAttackElevateClassAllowsDefaultDenied(t *testing.T) {
	const src = `default: deny
tool_classes:
  delete_repo: [vcs:destructive]
  read_repo: [vcs:read]
rules:
  - id: reads
    match: {match_any_class: [vcs:read]}
    decision: allow
`
	approvalsKeepDenied(t, src, shapedReads(), "mallory's delete_repo", true, func(p []byte) intercept.Decision {
		return decideIn(t, p, "mallory", "github", "delete_repo", "")
	})
	// Nor is it applied, if the policy has come to allow the class since
	// it was proposed.
	applyRefused(t, src, elevateDeleteRepoToRead)
}

// shapedReads are mallory's delete_repo calls, their arguments shaped so
// that the classifier calls them reads.
func shapedReads() []telemetry.Event {
	var evs []telemetry.Event
	for i := range 6 {
		evs = append(evs, classified(now.Add(-time.Duration(i)*time.Hour), "mallory", "github", "delete_repo", "vcs:destructive", "vcs:read", "Read"))
	}
	return evs
}

// elevateDeleteRepoToRead is the elevation those calls argue for.
var elevateDeleteRepoToRead = Recommendation{ID: "rec_x", Type: ElevateClass, Agent: "mallory", Tool: "github/delete_repo",
	Change: Change{Path: []string{"tool_classes", "github/delete_repo"}, Operation: "add", Value: "vcs:read"}}

// approvalsKeepDenied checks that the call decide makes is denied under
// src, and still is once any recommendation the engine makes of evs is
// approved; with strict, a proposal that cannot be applied is an error
// too.
func approvalsKeepDenied(t *testing.T, src string, evs []telemetry.Event, call string, strict bool, decide func([]byte) intercept.Decision) {
	t.Helper()
	if d := decide([]byte(src)); d.Verdict != intercept.Deny {
		t.Fatalf("before: %s %s", call, d.Verdict)
	}
	for _, r := range corpusOf(t, src, evs) {
		out, err := Apply([]byte(src), r)
		if err != nil {
			if strict {
				t.Errorf("proposed %s %q, which cannot be approved: %v", r.Type, r.Summary, err)
			}
			continue
		}
		if d := decide(out); d.Verdict != intercept.Deny {
			t.Errorf("approving %s %q makes %s %s by %q; diff:\n%s", r.Type, r.Summary, call, d.Verdict, d.RuleID, Diff([]byte(src), out))
		}
	}
}

// applyRefused checks that Apply refuses r under src as a change that
// widens what an agent may do.
func applyRefused(t *testing.T, src string, r Recommendation) {
	t.Helper()
	if _, err := Apply([]byte(src), r); !errors.Is(err, ErrWidens) {
		t.Errorf("Apply of %s %v at %s: got %v, want ErrWidens", r.Type, r.Change.Value, r.Change.Field(), err)
	}
}

// TestAttackSplitClassAllowsDefaultDenied: SPLIT_CLASS gives the tools of
// a class that the classifier finds writing the class {class}:write, "so
// rules can tell them apart"; where a rule already allows that class (for
// the tools classed so by hand), the split allowed them.
func TestAttackSplitClassAllowsDefaultDenied(t *testing.T) {
	const src = `default: deny
tool_classes:
  read_doc: [docs]
  purge_doc: [docs]
  write_note: [docs:write]
rules:
  - id: notes
    match: {match_any_class: [docs:write]}
    decision: allow
`
	approvalsKeepDenied(t, src, docsReadAndPurge(), "mallory's purge_doc", true, decidePurgeDoc(t))
}

// docsReadAndPurge are calls of one class, docs, that the classifier
// finds reading (read_doc) and writing (purge_doc).
func docsReadAndPurge() []telemetry.Event {
	var evs []telemetry.Event
	for i := range 4 {
		at := now.Add(-time.Duration(i) * time.Hour)
		evs = append(evs, classified(at, "mallory", "docs", "read_doc", "docs", "docs", "Read"),
			classified(at, "mallory", "docs", "purge_doc", "docs", "docs", "Write"))
	}
	return evs
}

func decidePurgeDoc(t *testing.T) func([]byte) intercept.Decision {
	return func(p []byte) intercept.Decision { return decideIn(t, p, "mallory", "docs", "purge_doc", "") }
}

// TestAttackRestrictBoundaryRaisesDefaultCeiling: RESTRICT_BOUNDARY
// compared an agent's calls with the ceiling of its own manifest only. An
// agent governed by "*" (ceiling local) whose allowed calls in the window
// declared intra-org (made before "*" was tightened) got "lower intern's
// boundary ceiling to intra-org" proposed, which gave it a manifest of its
// own with the wider ceiling: approving it let intern's intra-org calls
// through again. The ceiling that applies to the agent is compared, and a
// change that raises it is not applied.
func TestAttackRestrictBoundaryRaisesDefaultCeiling(t *testing.T) {
	const src = `default: deny
tool_classes:
  read_doc: [docs:read]
rules:
  - id: docs
    match: {match_any_class: [docs:read]}
    decision: allow
manifests:
  "*": {allowed_classes: [docs:read], boundary_ceiling: local}
`
	var evs []telemetry.Event
	for i := range 6 {
		evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), "intern", "docs", "read_doc", "allow", "rule_allow", "intra-org", "docs:read"))
	}
	approvalsKeepDenied(t, src, evs, "intern's intra-org read_doc", true, func(p []byte) intercept.Decision {
		return decideIn(t, p, "intern", "docs", "read_doc", "intra-org")
	})
	applyRefused(t, src, Recommendation{ID: "rec_x", Type: RestrictBoundary, Agent: "intern",
		Change: Change{Path: []string{"manifests", "intern", "boundary_ceiling"}, Operation: "set", Value: "external"}})
}

// TestAttackElevateClassPastCondition: widens probed the tool with no
// arguments, no principal and no classification, where a condition on an
// allow rule fails; the calls the agent makes have them. Under default:
// deny, "class delete_repo as vcs:read too" was proposed and applied
// where the rule allowing vcs:read asks for a repo argument (or an admin
// principal, or a Read classification, which the agent's shaped arguments
// get), and approving it allowed delete_repo {"repo": "prod"}.
func TestAttackElevateClassPastCondition(t *testing.T) {
	for _, when := range []string{
		`has(args.repo)`,
		`args.repo.startsWith("p")`,
		`principal.id == "mallory"`,
		`classification.action_type == "Read"`,
	} {
		t.Run(when, func(t *testing.T) {
			src := `default: deny
tool_classes:
  delete_repo: [vcs:destructive]
  read_repo: [vcs:read]
rules:
  - id: reads
    match: {match_any_class: [vcs:read]}
    when: '` + when + `'
    decision: allow
`
			decide := func(src []byte) intercept.Decision {
				p, err := policy.Compile(src, "p.yaml", policy.Options{})
				if err != nil {
					t.Fatal(err)
				}
				d, _ := p.Decide(context.Background(), &intercept.ActionDescriptor{Method: "tools/call", ToolName: "delete_repo", Upstream: "github",
					Agent: "mallory", SessionID: "s", Parameters: jsontext.Value(`{"repo":"prod"}`),
					Principal:      &intercept.Principal{ID: "mallory", Method: "api_key"},
					Classification: map[string]any{"action_type": "Read"}})
				return d
			}
			approvalsKeepDenied(t, src, shapedReads(), `mallory's delete_repo {"repo":"prod"}`, false, decide)
			applyRefused(t, src, elevateDeleteRepoToRead)
		})
	}
}

// TestAttackSplitClassOnNamedUpstream: widens probed a bare tool key on
// no upstream, where a rule scoped to one (upstream: docs) does not
// match; the calls are on that upstream. "split docs: give purge_doc the
// class docs:write" was proposed and applied where only docs's
// docs:write tools are allowed, and approving it allowed purge_doc there.
func TestAttackSplitClassOnNamedUpstream(t *testing.T) {
	const src = `default: deny
tool_classes:
  read_doc: [docs]
  purge_doc: [docs]
  write_note: [docs:write]
rules:
  - id: notes
    match: {upstream: docs, match_any_class: [docs:write]}
    decision: allow
`
	approvalsKeepDenied(t, src, docsReadAndPurge(), "mallory's purge_doc", false, decidePurgeDoc(t))
	applyRefused(t, src, Recommendation{ID: "rec_x", Type: SplitClass, CapabilityClass: "docs",
		Change: Change{Path: []string{"tool_classes"}, Operation: "add", Value: map[string]any{"class": "docs:write", "tools": []any{"purge_doc"}}}})
}
