package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/internal/invisible"
)

// TestAttackRecommendJSONInvisibleNames (attacker review): `sluice events
// query --json` writes the characters a terminal would not show as
// themselves as \u escapes (TestEventsJSONNoFormatCharacters), but
// `sluice recommend --json` and `sluice replay --json` printed an agent's
// chosen name as it came: a right-to-left override reversed the rest of a
// recommendation's summary on the operator's screen, and a zero-width
// space made "ali\u200bce" read as alice in the proposal to approve.
func TestAttackRecommendJSONInvisibleNames(t *testing.T) {
	dir := t.TempDir()
	polFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(polFile, []byte("default: deny\nresult_mode: tool_result\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := startServe(t, "policy_file: "+polFile+"\nadmin_listen: off\nhide_denied_tools: false\n")
	const agent = `ali\u200bce\u202e`
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
	ctx := context.Background()
	var run bytes.Buffer
	if err := runRecommend(ctx, []string{"run", "--config", cfgFile, "--json"}, &run); err != nil {
		t.Fatal(err)
	}
	var recs []struct {
		ID    string `json:"recommendation_id"`
		Agent string `json:"agent"`
	}
	if err := json.Unmarshal(run.Bytes(), &recs); err != nil || len(recs) != 1 || recs[0].Agent != "ali\u200bce\u202e" {
		t.Fatalf("recommend run --json: %v %+v; want the agent's one ADD_TOOL, its name decoding as sent\n%s", err, recs, run.String())
	}
	var list, show, replay bytes.Buffer
	if err := runRecommend(ctx, []string{"list", "--config", cfgFile, "--json"}, &list); err != nil {
		t.Fatal(err)
	}
	if err := runRecommend(ctx, []string{"show", recs[0].ID, "--config", cfgFile, "--json"}, &show); err != nil {
		t.Fatal(err)
	}
	draft := filepath.Join(dir, "draft.yaml")
	os.WriteFile(draft, []byte("default: allow\n"), 0o644)
	if err := runReplay(ctx, []string{"--events", filepath.Join(g.dir, audit.FileName), "--policy", draft, "--json"}, &replay, io.Discard); err != nil {
		t.Fatal(err)
	}
	for what, out := range map[string]string{"recommend run": run.String(), "recommend list": list.String(), "recommend show": show.String(), "replay": replay.String()} {
		if !strings.Contains(out, "ali") {
			t.Errorf("sluice %s --json does not name the agent:\n%s", what, out)
		}
		if i := strings.IndexFunc(out, func(r rune) bool { return r != '\n' && (invisible.Is(r) || !unicode.IsPrint(r) && r != ' ') }); i >= 0 {
			t.Errorf("sluice %s --json prints the agent's name with %U, which the terminal does not show as itself:\n%q", what, []rune(out[i:])[0], out)
		}
	}
}
