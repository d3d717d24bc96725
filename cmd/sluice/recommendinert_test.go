package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/audit"
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
