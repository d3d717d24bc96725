package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
)

// TestApprovalSurvivesRestart: a call held before the gateway stops is
// approved after it starts again on the same data directory, and then
// goes through once.
func TestApprovalSurvivesRestart(t *testing.T) {
	yaml := holdAdd + "data_dir: " + t.TempDir() + "\n"
	const add = `{"name":"add","arguments":{"a":2,"b":3}}`
	g1 := startServe(t, yaml)
	id := approvalID.FindString(modernCall(t, g1.url, "tools/call", "add", add))
	if id == "" {
		t.Fatal("the call was not held")
	}
	if err := g1.stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}

	g2 := startServe(t, yaml)
	var out bytes.Buffer
	if err := runApprovals(context.Background(), []string{"approve", id, "--config", g2.config}, &out); err != nil {
		t.Fatalf("approvals approve %s after the restart: %v", id, err)
	}
	if got := modernCall(t, g2.url, "tools/call", "add", add); strings.Contains(got, "approval_required") || !strings.Contains(got, "5") {
		t.Fatalf("the approved call after the restart: got %s, want it forwarded", got)
	}
	if got := modernCall(t, g2.url, "tools/call", "add", add); !strings.Contains(got, "approval_required") || strings.Contains(got, id) {
		t.Errorf("the same call once more: got %s, want a new hold (the approval is used)", got)
	}
}

// TestWrapApprovalAcrossProcesses: two `sluice wrap` on one data
// directory; a call held by one is approved through the other's admin
// API, and the holding one lets it through once.
func TestWrapApprovalAcrossProcesses(t *testing.T) {
	demoSrv := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	defer demoSrv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("data_dir: data\nadmin_listen: 127.0.0.1:0\nclassifier: {provider: off}\n"+
		"policy:\n  default: allow\n  rules:\n    - {id: hold-echo, match: {match_tool: demo/echo}, decision: require_approval}\n"), 0o600)
	a := startWrap(t, "--name", "demo", "--config", cfg, "--url", demoSrv.URL+"/mcp")
	b := startWrap(t, "--name", "other", "--config", cfg, "--url", demoSrv.URL+"/mcp")
	if held := a.try(t, "echo", map[string]any{"message": "hi"}); !strings.Contains(held, "approval") {
		t.Fatalf("echo through a: got %q, want it held", held)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "data", "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_ADMIN_TOKEN", strings.TrimSpace(string(tok)))
	var out bytes.Buffer
	// b lists the request a holds.
	if err := runApprovals(context.Background(), []string{"list", "--admin", "http://" + b.admin}, &out); err != nil {
		t.Fatalf("approvals list on b: %v", err)
	}
	id := approvalID.FindString(out.String())
	if id == "" {
		t.Fatalf("approvals list on b: got %s, want the request held by a", &out)
	}
	if err := runApprovals(context.Background(), []string{"approve", id, "--admin", "http://" + b.admin}, &out); err != nil {
		t.Fatalf("approvals approve %s on b: %v", id, err)
	}
	if got := a.try(t, "echo", map[string]any{"message": "hi"}); !strings.Contains(got, "Echo: hi") {
		t.Fatalf("echo through a after approval on b: got %q, want the echo", got)
	}
	if got := a.try(t, "echo", map[string]any{"message": "hi"}); !strings.Contains(got, "approval") {
		t.Errorf("echo once more: got %q, want it held again (the approval is used)", got)
	}
}

// try is call that returns a JSON-RPC error as "error: " and its message
// and data, instead of failing.
func (w *wrapped) try(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := w.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		return "error: " + err.Error()
	}
	return text(res)
}
