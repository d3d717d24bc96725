package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestWrapCarryAfterRouteRule: through `sluice wrap`, once a sensitive
// read closed the wrapped server's network sink, a completion (bytes of
// the client's choosing for that server) is refused by the gateway with
// the route rule's error instead of reaching the server, while ping and
// tools/list go on; before the read the server itself answers it.
func TestWrapCarryAfterRouteRule(t *testing.T) {
	dir := buildWrap(t)
	cfg := filepath.Join(dir, "carry.yaml")
	os.WriteFile(cfg, []byte("data_dir: "+filepath.Join(dir, "data")+"\nclassifier: {provider: off}\n"+`policy:
  default: allow
  tool_classes:
    read_document: [source:sensitive]
    web_search: [sink:network]
  route_rules:
    - {id: no-exfil, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, reason: no sink after a sensitive read}
`), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.NewClient(transport.NewStdio(filepath.Join(dir, "sluice"), nil, "wrap", "--config", cfg, "--", filepath.Join(dir, "demo-server")),
		client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "desktop", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	complete := func() error {
		_, err := c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{
			Ref: mcp.PromptReference{Type: "ref/prompt", Name: "p"}, Argument: mcp.CompleteArgument{Name: "a", Value: "SECRET"}}})
		return err
	}
	if err := complete(); err != nil && strings.Contains(err.Error(), "no-exfil") {
		t.Fatalf("completion before the read: %v", err)
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_document", Arguments: map[string]any{"path": "/hr/salaries.csv"}}})
	if err != nil || res.IsError {
		t.Fatalf("sensitive read: %v %+v", err, res)
	}
	if err := complete(); err == nil || !strings.Contains(err.Error(), "no-exfil") {
		t.Errorf("completion after the read: got %v, want the gateway's error naming the route rule", err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Errorf("ping after the read: %v", err)
	}
	if tools, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil || len(tools.Tools) == 0 {
		t.Errorf("tools/list after the read: %v", err)
	}
}
