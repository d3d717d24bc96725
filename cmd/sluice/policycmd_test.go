package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyCommands(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	if err := runPolicy(ctx, []string{"test", "../../policy/testdata/cases"}, &out); err != nil || !strings.Contains(out.String(), " 0 failed") {
		t.Fatalf("policy test on the package's cases: %v\n%s", err, &out)
	}

	dir := t.TempDir()
	failing := filepath.Join(dir, "wrong.yaml")
	os.WriteFile(failing, []byte("policy: {default: deny}\ncases:\n  - note: expects the wrong thing\n    calls:\n      - {tool: echo, want: {decision: allow}}\n"), 0o600)
	out.Reset()
	if err := runPolicy(ctx, []string{"test", dir}, &out); !errors.Is(err, errFailed) || !strings.Contains(out.String(), "FAIL") || !strings.Contains(out.String(), "wrong.yaml:5") {
		t.Errorf("a failing case: got %v\n%s, want errFailed naming the file and line", err, &out)
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("policy:\n  default: deny\n  rulez: []\n"), 0o600)
	out.Reset()
	if err := runPolicy(ctx, []string{"validate", bad}, &out); !errors.Is(err, errFailed) || !strings.Contains(out.String(), "bad.yaml:3") || !strings.Contains(out.String(), "rulez") {
		t.Errorf("validate with an unknown key: got %v\n%s, want the file, line and key", err, &out)
	}

	out.Reset()
	err := runPolicy(ctx, []string{"explain", "--policy", "../../policy/testdata/cases/route_scope.yaml", "--tool", "web_search", "--history", "read_document", "--agent", "a"}, &out)
	if err != nil || !strings.Contains(out.String(), `"matched_route_rule_id": "no-sink-after-sensitive-any-session"`) {
		t.Errorf("explain with history: %v\n%s", err, &out)
	}
}

// TestPolicyValidateGatewayConfig: `policy validate sluice.yaml` follows
// policy_file (relative to the config), and a config with no policy says
// so instead of calling its keys unknown policy keys.
func TestPolicyValidateGatewayConfig(t *testing.T) {
	withFile := writeConfig(t, map[string]string{"sluice.yaml": "upstreams: []\npolicy_file: p.yaml\n", "p.yaml": "default: allow\n"})
	var out bytes.Buffer
	if err := runPolicy(context.Background(), []string{"validate", withFile}, &out); err != nil || !strings.Contains(out.String(), "p.yaml: ok") {
		t.Errorf("config with policy_file: got %v, %q, want p.yaml validated", err, &out)
	}
	none := writeConfig(t, map[string]string{"sluice.yaml": "upstreams: [{name: a, url: 'http://x/mcp'}]\n"})
	out.Reset()
	err := runPolicy(context.Background(), []string{"validate", none}, &out)
	if err == nil || !strings.Contains(err.Error(), "no policy: section") || !strings.Contains(err.Error(), "sluice config validate") {
		t.Errorf("config without a policy: got %v, %q, want it to say there is no policy", err, &out)
	}
}
