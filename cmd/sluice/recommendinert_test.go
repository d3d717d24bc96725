package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/telemetry"
)

// An agent without authentication names itself (clientInfo, _meta), and
// its name reaches `sluice recommend` through the summary of an ADD_TOOL
// recommendation. The operator's terminal must not run it: here it erases
// its own row and forges a harmless-looking one, so the operator approves
// an id whose change is not the one shown.
func TestRecommendCLIInertNames(t *testing.T) {
	dir := t.TempDir()
	polFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(polFile, []byte("default: deny\nresult_mode: tool_result\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := startServe(t, "policy_file: "+polFile+"\nadmin_listen: off\nhide_denied_tools: false\n")
	const agent = `mallory\u001b[2K\r\u001b[1Arec_0 ADD_TOOL pending 0.5 let reporter call read_doc`
	for range 5 {
		if out := modernCallAs(t, g.url, agent, "tools/call", "echo", `{"name":"echo","arguments":{"text":"x"}}`); !strings.Contains(out, "denied") {
			t.Fatalf("echo by %s: %s, want a denial", agent, out)
		}
	}
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "sluice.yaml")
	os.WriteFile(cfgFile, []byte("data_dir: "+g.dir+"\npolicy_file: "+polFile+"\n"), 0o600)
	var run bytes.Buffer
	if err := runRecommend(context.Background(), []string{"run", "--config", cfgFile}, &run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(run.String(), "ADD_TOOL") {
		t.Fatalf("no ADD_TOOL recommendation for the agent:\n%s", run.String())
	}
	id := strings.Fields(strings.Split(run.String(), "\n")[1])[0]
	var show bytes.Buffer
	if err := runRecommend(context.Background(), []string{"show", id, "--config", cfgFile}, &show); err != nil {
		t.Fatal(err)
	}
	// sluice replay lists the calls a draft would decide otherwise, by agent.
	draft := filepath.Join(dir, "draft.yaml")
	os.WriteFile(draft, []byte("default: allow\n"), 0o644)
	var replay bytes.Buffer
	if err := runReplay(context.Background(), []string{"--events", filepath.Join(g.dir, audit.FileName), "--policy", draft}, &replay, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(replay.String(), "5 changed") {
		t.Fatalf("replay:\n%s", replay.String())
	}
	for what, out := range map[string]string{"recommend run": run.String(), "recommend show " + id: show.String(), "replay": replay.String()} {
		if strings.ContainsAny(out, "\x1b\r") {
			t.Errorf("sluice %s prints the agent's name to the terminal as control characters:\n%q", what, out)
		}
	}
}

// The policy diff `sluice recommend show` (and approve) prints holds the
// agent's name (a manifests key, a rule's reason) and the tool's. The
// YAML encoder quotes control characters but writes format characters as
// they are: a zero-width space makes an agent's new manifest read as a
// second "alice:" entry, and a right-to-left override reverses what
// follows it. Every diff line that holds one is printed quoted.
func TestRecommendShowDiffInert(t *testing.T) {
	dir := t.TempDir()
	polFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(polFile, []byte("default: deny\ntool_classes:\n  read_doc: [docs:read]\n  delete_doc: [docs:write]\nrules:\n  - id: docs\n    match: {match_any_class: [docs:read, docs:write]}\n    decision: allow\nmanifests:\n  alice: {allowed_classes: [docs:read, docs:write]}\n  \"*\": {allowed_classes: [docs:read]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	st, err := audit.Open(filepath.Join(data, audit.FileName), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	for i := range 6 {
		for _, pe := range []telemetry.PolicyEnforcement{
			{Agent: "ali\u200bce", Tool: "delete_doc", Reason: "manifest_class_not_allowed", Evidence: telemetry.Evidence{MatchedToolClasses: []string{"docs:write"}}},
			{Agent: "bob\u202e", Tool: "x\u202egnp.exe", Reason: "default_deny"},
		} {
			pe.Time, pe.TxnID, pe.Upstream, pe.Decision = at.Add(time.Duration(i)*time.Minute), fmt.Sprint("t", i, pe.Agent), "docs", "deny"
			if err := st.Append(context.Background(), pe.Event()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfgFile, []byte("data_dir: "+data+"\npolicy_file: "+polFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var run bytes.Buffer
	if err := runRecommend(context.Background(), []string{"run", "--config", cfgFile}, &run); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(run.String()), "\n")[1:]
	if len(lines) != 2 {
		t.Fatalf("got %d recommendations, want 2:\n%s", len(lines), run.String())
	}
	for _, l := range lines {
		id := strings.Fields(l)[0]
		for _, verb := range []string{"show", "approve"} {
			var out bytes.Buffer
			if err := runRecommend(context.Background(), []string{verb, id, "--config", cfgFile, "--by", "op"}, &out); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "+ ") {
				t.Fatalf("recommend %s %s shows no diff:\n%s", verb, id, out.String())
			}
			for _, r := range out.String() {
				if !unicode.IsPrint(r) && r != ' ' && r != '\n' {
					t.Errorf("recommend %s %s prints %U from an agent's or tool's name to the terminal:\n%q", verb, id, r, out.String())
					break
				}
			}
		}
	}
}
