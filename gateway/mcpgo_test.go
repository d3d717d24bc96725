package gateway

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// buildDemoServer builds examples/demo-server for stdio upstream tests.
func buildDemoServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "demo-server")
	out, err := exec.Command("go", "build", "-o", bin, "../examples/demo-server").CombinedOutput()
	if err != nil {
		t.Fatalf("building demo-server: %v\n%s", err, out)
	}
	return bin
}

// TestMCPGoClientThroughGateway runs mcp-go's own client against mcp-go's
// server through the gateway in each protocol era, over a relayed HTTP
// upstream and a bridged stdio one.
func TestMCPGoClientThroughGateway(t *testing.T) {
	f := newFixture(t, allowEcho, Options{Upstreams: []Upstream{{Name: "stdio", Command: buildDemoServer(t), Args: []string{"-transport", "stdio"}}}})
	for _, tc := range []struct {
		route, version, want string
	}{
		{"demo", "", mcp.ProtocolVersion20260728}, // mcp-go's default: try 2026-07-28 first
		{"demo", mcp.ProtocolVersion20251125, mcp.ProtocolVersion20251125},
		{"demo", mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250618},
		// Stateless requests to a stdio upstream share one connection.
		{"stdio", "", mcp.ProtocolVersion20260728},
		{"stdio", mcp.ProtocolVersion20251125, mcp.ProtocolVersion20251125},
	} {
		t.Run(tc.route+"/"+tc.want, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			trans, err := mcptransport.NewStreamableHTTP(f.gw.URL + "/mcp/" + tc.route)
			if err != nil {
				t.Fatal(err)
			}
			var opts []client.ClientOption
			if tc.version != "" {
				opts = append(opts, client.WithProtocolVersion(tc.version))
			}
			c := client.NewClient(trans, opts...)
			var progress atomic.Int64
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == string(mcp.MethodNotificationProgress) {
					progress.Add(1)
				}
			})
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "mcpgo-test", Version: "1"}}}); err != nil {
				t.Fatalf("Initialize: %v", err)
			}
			if got := c.ProtocolVersion(); got != tc.want {
				t.Errorf("negotiated %q, want %q", got, tc.want)
			}
			tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil || len(tools.Tools) == 0 {
				t.Fatalf("ListTools: %v, %d tools", err, len(tools.Tools))
			}
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "through"}}})
			if err != nil || res.IsError || !strings.Contains(text(res), "Echo: through") {
				t.Fatalf("echo: %v %+v", err, res)
			}
			// mcp-go's stdio server writes notifications from another
			// goroutine than responses, so a progress notification can reach
			// the gateway after the result it precedes, when a stateless
			// call's HTTP response is already over (a direct client would
			// also see it late). The pause after each step, the last one
			// included, gives the server time to write it first; 1 ms was
			// not always enough under -race on a loaded machine.
			res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "slow_count",
				Arguments: map[string]any{"n": 3, "delay_ms": 25}, Meta: &mcp.Meta{ProgressToken: "p1"}}})
			if err != nil || res.IsError {
				t.Fatalf("slow_count: %v %+v", err, res)
			}
			if got := progress.Load(); got != 3 {
				t.Errorf("progress notifications: got %d, want 3", got)
			}
			res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "a@b", "subject": "s", "body": "b"}}})
			if err != nil || !res.IsError || !strings.Contains(text(res), "not allowed by policy") {
				t.Fatalf("send_email: got %v %+v, want a soft deny", err, res)
			}
		})
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
