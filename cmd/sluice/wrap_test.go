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
	"github.com/mark3labs/mcp-go/mcp"
)

// TestWrap runs `sluice wrap -- demo-server` the way a desktop client
// does: an MCP client spawns sluice as its stdio server, and sluice
// governs the wrapped server's calls.
func TestWrap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	dir := t.TempDir()
	for _, b := range []struct{ out, pkg string }{{"sluice", "."}, {"demo-server", "../../examples/demo-server"}} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", b.pkg, err, out)
		}
	}
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("data_dir: "+filepath.Join(dir, "data")+"\npolicy: {default: allow, deny: [send_email], result_mode: tool_result}\n"), 0o600)
	c, err := client.NewStdioMCPClient(filepath.Join(dir, "sluice"), nil, "wrap", "--config", cfg, "--", filepath.Join(dir, "demo-server"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
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
