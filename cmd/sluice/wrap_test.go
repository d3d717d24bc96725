package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, r)
}

// TestWrap runs `sluice wrap -- demo-server` the way a desktop client
// does: an MCP client spawns sluice as its stdio server, and sluice
// governs the wrapped server's calls, asking the client's user about held
// calls (elicitation in 2025-11-25, input_required in 2026-07-28).
func TestWrap(t *testing.T) {
	dir := buildWrap(t)
	base := "data_dir: " + filepath.Join(dir, "data") + "\nclassifier: {provider: off}\n" +
		"policy: {default: allow, deny: [send_email], require_approval: [add], result_mode: tool_result}\n"
	// Asking the client's user is the operator's choice; by default the
	// held call waits for `sluice approvals`.
	operatorOnly, clientAnswers := filepath.Join(dir, "operator.yaml"), filepath.Join(dir, "client.yaml")
	os.WriteFile(operatorOnly, []byte(base), 0o600)
	os.WriteFile(clientAnswers, []byte(base+"approvals: {client_may_answer: true}\n"), 0o600)
	for _, tc := range []struct {
		name, version string
		approve       bool
		operatorOnly  bool
	}{
		{"2026 approve", "", true, false},
		{"2026 decline", "", false, false},
		{"2025 approve", mcp.ProtocolVersion20251125, true, false},
		{"2025 decline", mcp.ProtocolVersion20251125, false, false},
		{"2026 operator only", "", true, true},
		{"2025 operator only", mcp.ProtocolVersion20251125, true, true},
	} {
		cfg := clientAnswers
		if tc.operatorOnly {
			cfg = operatorOnly
		}
		t.Run(tc.name, func(t *testing.T) {
			var asked int
			opts := []client.ClientOption{client.WithElicitationHandler(elicitFunc(func(_ context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				asked++
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
					Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"approve": tc.approve}}}, nil
			}))}
			if tc.version != "" {
				opts = append(opts, client.WithProtocolVersion(tc.version))
			}
			tr := transport.NewStdio(filepath.Join(dir, "sluice"), nil, "wrap", "--config", cfg, "--", filepath.Join(dir, "demo-server"))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := client.NewClient(tr, opts...)
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "desktop", Version: "1"}}}); err != nil {
				t.Fatalf("Initialize through wrap: %v", err)
			}
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "wrapped"}}})
			if err != nil || res.IsError || !strings.Contains(text(res), "Echo: wrapped") {
				t.Fatalf("echo through wrap: %v %+v", err, res)
			}
			res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "a", "subject": "b", "body": "c"}}})
			if err != nil || !res.IsError || strings.Contains(text(res), "queued") {
				t.Fatalf("send_email through wrap: got %v %+v, want a soft deny", err, res)
			}
			res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}}})
			if err != nil {
				t.Fatalf("add: %v", err)
			}
			if tc.operatorOnly {
				if asked != 0 || !res.IsError || !strings.Contains(text(res), "approval") {
					t.Errorf("operator only: user asked %d times, got %+v; want no question and approval_required", asked, res)
				}
				return
			}
			if asked != 1 {
				t.Errorf("user asked %d times, want once", asked)
			}
			if tc.approve && (res.IsError || text(res) != "5") {
				t.Errorf("approved add: got %+v, want 5", res)
			}
			if !tc.approve && (!res.IsError || !strings.Contains(text(res), "declined")) {
				t.Errorf("declined add: got %+v, want a soft denial", res)
			}
		})
	}
}

// buildWrap builds sluice and the demo server into a temporary directory,
// for tests that run `sluice wrap` as a desktop client would.
func buildWrap(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	dir := t.TempDir()
	for _, b := range []struct{ out, pkg string }{{"sluice", "."}, {"demo-server", "../../examples/demo-server"}} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", b.pkg, err, out)
		}
	}
	return dir
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestWrapRefusesAgentHeaderRequired: wrap serves stdio, which has no
// headers, so a config that requires the agent header is refused up
// front, naming the key.
func TestWrapRefusesAgentHeaderRequired(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "sluice.yaml")
	os.WriteFile(cfg, []byte("agent_header: X-Agent-Id\nagent_header_required: true\n"), 0o600)
	err := runWrap(t.Context(), []string{"--config", cfg, "--", "true"})
	if err == nil || !strings.Contains(err.Error(), "agent_header_required") {
		t.Errorf("wrap with agent_header_required: got %v, want an error naming agent_header_required", err)
	}
}
