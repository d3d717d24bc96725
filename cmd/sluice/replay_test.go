package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/audit"
)

// TestReplay records real traffic under a permissive policy, then replays
// it under a stricter one: the sink after a sensitive read, and a large
// add, change; the rest does not.
func TestReplay(t *testing.T) {
	g := startServe(t, "policy: {default: allow, result_mode: tool_result}\naudit: {keep_arguments: true}\nclassifier: {provider: off}\n")
	modernCall(t, g.url, "tools/call", "web_search", `{"name":"web_search","arguments":{"query":"before"}}`)
	modernCall(t, g.url, "tools/call", "read_document", `{"name":"read_document","arguments":{"path":"/hr/salaries.csv"}}`)
	modernCall(t, g.url, "tools/call", "web_search", `{"name":"web_search","arguments":{"query":"after"}}`)
	modernCall(t, g.url, "tools/call", "add", `{"name":"add","arguments":{"a":5000,"b":1}}`)
	modernCall(t, g.url, "tools/call", "add", `{"name":"add","arguments":{"a":1,"b":1}}`)
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	strict := filepath.Join(t.TempDir(), "strict.yaml")
	os.WriteFile(strict, []byte(`
default: allow
tool_classes:
  read_document: [source:sensitive]
  web_search: [sink:network]
rules:
  - id: big-adds
    match: {match_tool: add}
    when: 'args.a > 1000'
    decision: deny
    reason: too big
route_rules:
  - id: no-sink-after-read
    after: {match_any_class: [source:sensitive]}
    deny: {match_any_class: [sink:network]}
    scope: agent
    reason: no sink after a sensitive read
`), 0o600)
	var out bytes.Buffer
	err := runReplay(context.Background(), []string{"--events", filepath.Join(g.dir, audit.FileName), "--policy", strict, "--json"}, &out, &bytes.Buffer{})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	var sum replaySummary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatalf("output: %v\n%s", err, &out)
	}
	if sum.Calls != 5 || sum.NewlyDenied != 2 || sum.Changed != 2 {
		t.Fatalf("got %d calls, %d changed, %d newly denied; want 5, 2, 2\n%s", sum.Calls, sum.Changed, sum.NewlyDenied, &out)
	}
	rules := map[string]bool{}
	for _, c := range sum.Changes {
		rules[c.Rule] = true
	}
	if !rules["no-sink-after-read"] || !rules["big-adds"] {
		t.Errorf("changes: got rules %v, want no-sink-after-read and big-adds", rules)
	}
}

// TestReplayUndetermined: recorded without arguments (the default), calls
// whose decision under the new policy reads args are reported apart, as
// undetermined, never as changed; the route rule's change, which needs no
// arguments, is still a change.
func TestReplayUndetermined(t *testing.T) {
	g := startServe(t, "policy: {default: allow, result_mode: tool_result}\nclassifier: {provider: off}\n")
	modernCall(t, g.url, "tools/call", "read_document", `{"name":"read_document","arguments":{"path":"/hr/salaries.csv"}}`)
	modernCall(t, g.url, "tools/call", "web_search", `{"name":"web_search","arguments":{"query":"after"}}`)
	modernCall(t, g.url, "tools/call", "add", `{"name":"add","arguments":{"a":5000,"b":1}}`)
	modernCall(t, g.url, "tools/call", "add", `{"name":"add","arguments":{"a":1,"b":1}}`)
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	strict := filepath.Join(t.TempDir(), "strict.yaml")
	os.WriteFile(strict, []byte(`
default: allow
tool_classes:
  read_document: [source:sensitive]
  web_search: [sink:network]
rules:
  - id: big-adds
    match: {match_tool: add}
    when: 'args.a > 1000'
    decision: deny
route_rules:
  - id: no-sink-after-read
    after: {match_any_class: [source:sensitive]}
    deny: {match_any_class: [sink:network]}
    scope: agent
`), 0o600)
	db := filepath.Join(g.dir, audit.FileName)
	var out bytes.Buffer
	if err := runReplay(context.Background(), []string{"--events", db, "--policy", strict, "--json"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	var sum replaySummary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatalf("output: %v\n%s", err, &out)
	}
	if sum.Calls != 4 || sum.Changed != 1 || sum.NewlyDenied != 1 || sum.Undetermined != 2 || len(sum.UndeterminedCalls) != 2 {
		t.Fatalf("got %d calls, %d changed, %d newly denied, %d undetermined; want 4, 1, 1, 2\n%s", sum.Calls, sum.Changed, sum.NewlyDenied, sum.Undetermined, &out)
	}
	if c := sum.Changes[0]; c.Rule != "no-sink-after-read" {
		t.Errorf("change: got rule %q, want no-sink-after-read", c.Rule)
	}
	for _, u := range sum.UndeterminedCalls {
		if u.Tool != "add" {
			t.Errorf("undetermined: got %s, want only the adds", u.Tool)
		}
	}
	out.Reset()
	if err := runReplay(context.Background(), []string{"--events", db, "--policy", strict}, &out, &bytes.Buffer{}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !strings.Contains(out.String(), "2 undetermined (arguments not recorded)") || strings.Contains(out.String(), "add  allow") {
		t.Errorf("text report: got\n%s\nwant the adds counted as undetermined, not listed as changes", &out)
	}
}

// TestReplayTextDefaultDecision: a change to the policy's default names no
// rule, and the text says so rather than "rule  (arguments not recorded)",
// which read as a rule of that name.
func TestReplayTextDefaultDecision(t *testing.T) {
	g := startServe(t, "policy: {default: allow, result_mode: tool_result}\nclassifier: {provider: off}\n")
	modernCall(t, g.url, "tools/call", "echo", `{"name":"echo","arguments":{"message":"hi"}}`)
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	deny := filepath.Join(t.TempDir(), "deny.yaml")
	os.WriteFile(deny, []byte("default: deny\n"), 0o600)
	var out bytes.Buffer
	if err := runReplay(context.Background(), []string{"--events", filepath.Join(g.dir, audit.FileName), "--policy", deny}, &out, &bytes.Buffer{}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	if !strings.Contains(line, "-> deny (default_deny)") || strings.Contains(line, "rule ") {
		t.Errorf("got %q, want the change to deny (default_deny) without a rule", line)
	}
}

// TestReplayRouteMemoryAsServed: replayed under the policy that decided
// them, recorded calls change nothing, route memory included. The gateway
// keeps one route memory for every unauthenticated caller, whatever name
// it gives, and one per principal; replay kept one per recorded name, so
// an unauthenticated client's sink under a new name, denied as it was
// served, read as newly allowed, and a policy change judged by replay
// looked as if it opened the rename escape again.
func TestReplayRouteMemoryAsServed(t *testing.T) {
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(evasionPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	replay := func(t *testing.T, g *running) replaySummary {
		t.Helper()
		if err := g.stop(); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := runReplay(context.Background(), []string{"--events", filepath.Join(g.dir, audit.FileName), "--policy", policyFile, "--json"}, &out, &bytes.Buffer{}); err != nil {
			t.Fatalf("replay: %v", err)
		}
		var sum replaySummary
		if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
			t.Fatalf("output: %v\n%s", err, &out)
		}
		return sum
	}
	t.Run("unauthenticated, renamed", func(t *testing.T) {
		g := startServe(t, evasionPolicy)
		if got := modernCallWithKey(t, g.url, "", "reader", "read_document", readSalaries); !strings.Contains(got, "salary") {
			t.Fatalf("read_document: got %s", got)
		}
		if got := modernCallWithKey(t, g.url, "", "renamed", "web_search", search); !denied(got) {
			t.Fatalf("web_search under another name: got %s, want a deny by no-exfil", got)
		}
		if sum := replay(t, g); sum.Calls != 2 || sum.Changed != 0 {
			t.Errorf("replayed under the same policy: %d calls, %d changed %+v; want 2, none changed", sum.Calls, sum.Changed, sum.Changes)
		}
	})
	t.Run("principals", func(t *testing.T) {
		keyFile := filepath.Join(t.TempDir(), "agent_keys.json")
		g := startServe(t, evasionPolicy+"auth: {mode: api_key, api_keys: {file: "+keyFile+"}}\n")
		base := strings.TrimSuffix(g.url, "/mcp/demo")
		key := func(agent string) string { return liveKey(t, keyFile, base, agent) }
		alice, bob := key("alice"), key("bob")
		if got := modernCallWithKey(t, g.url, alice, "client", "read_document", readSalaries); !strings.Contains(got, "salary") {
			t.Fatalf("alice's read_document: got %s", got)
		}
		if got := modernCallWithKey(t, g.url, bob, "client", "web_search", search); denied(got) {
			t.Fatalf("bob's web_search: got %s, want it allowed", got)
		}
		if got := modernCallWithKey(t, g.url, alice, "client", "web_search", search); !denied(got) {
			t.Fatalf("alice's web_search: got %s, want a deny by no-exfil", got)
		}
		// Five calls: each key's echo when the gateway first took it.
		if sum := replay(t, g); sum.Calls != 5 || sum.Changed != 0 {
			t.Errorf("replayed under the same policy: %d calls, %d changed %+v; want 5, none changed", sum.Calls, sum.Changed, sum.Changes)
		}
	})
}
