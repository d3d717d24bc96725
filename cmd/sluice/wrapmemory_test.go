package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestWrapRouteMemoryAcrossWraps (found by an attacker review): the
// README's desktop setup is one config shared by several `sluice wrap
// --name …` processes, one per server, as in examples/desktop/sluice.yaml.
// Route memory was each process's own, so a sensitive read through one
// wrap was unknown to the wrap of the network sink, which forwarded it;
// every wrap on a data directory now shares data_dir/route-memory.db.
func TestWrapRouteMemoryAcrossWraps(t *testing.T) {
	dir := buildWrap(t)
	wrapsShareRouteMemory(t, dir, "data_dir: "+filepath.Join(dir, "data")+"\n")
}

// TestWrapRouteMemoryDefaultDataDir: the same for a config that sets no
// data_dir, as the Quickstart's wrap and a wrap without --config: the
// wraps shared route memory only when data_dir was set, and with the
// default ($XDG_STATE_HOME/sluice) each kept its own in memory.
func TestWrapRouteMemoryDefaultDataDir(t *testing.T) {
	dir := buildWrap(t)
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	wrapsShareRouteMemory(t, dir, "")
	if _, err := os.Stat(filepath.Join(dir, "state", "sluice", "route-memory.db")); err != nil {
		t.Errorf("route memory is not in the default data_dir: %v", err)
	}
}

// wrapsShareRouteMemory runs two wraps under one config, which starts
// with head, and checks that a read through one counts for the other.
func wrapsShareRouteMemory(t *testing.T, dir, head string) {
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte(head+"classifier: {provider: off}\n"+`policy:
  default: allow
  result_mode: tool_result
  tool_classes:
    docs/read_document: [source:sensitive]
    web/read_document: [source:sensitive]
    web/web_search: [sink:network]
  route_rules:
    - {id: no-exfil, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, reason: no sink after a sensitive read}
`), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := func(name string) *client.Client {
		tr := transport.NewStdio(filepath.Join(dir, "sluice"), nil, "wrap", "--name", name, "--admin-listen", "off", "--config", cfg, "--", filepath.Join(dir, "demo-server"))
		c := client.NewClient(tr)
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "desktop", Version: "1"}}}); err != nil {
			t.Fatalf("Initialize through wrap %s: %v", name, err)
		}
		return c
	}
	docs, web := start("docs"), start("web")

	res, err := docs.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_document", Arguments: map[string]any{"path": "/hr/salaries.csv"}}})
	if err != nil || res.IsError {
		t.Fatalf("sensitive read through wrap docs: %v %+v", err, res)
	}
	res, err = web.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "web_search", Arguments: map[string]any{"query": "salaries"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Errorf("network sink through wrap web after the same client's sensitive read through wrap docs was forwarded: %.120s", text(res))
	}
	// Control: within one wrap the rule holds.
	if res, err := web.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_document", Arguments: map[string]any{"path": "/hr/salaries.csv"}}}); err != nil || res.IsError {
		t.Fatalf("sensitive read through wrap web: %v %+v", err, res)
	}
	if res, err := web.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "web_search", Arguments: map[string]any{"query": "salaries"}}}); err != nil || !res.IsError {
		t.Fatalf("control: sink after a read in the same wrap: %v %+v, want the no-exfil deny", err, res)
	}
}
