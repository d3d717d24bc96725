package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// TestAggregateSessionlessUpstream: an upstream that gives no
// Mcp-Session-Id at initialize (a stateless Streamable HTTP server, as the
// go-sdk's Stateless option, mcp-go's and the TypeScript SDK's stateless
// modes serve; the specification lets a server not assign one) is served
// on its own route, and must be in a virtual server too. Before, a
// 2025-era virtual session left it out of every list ("initialize gave
// no session"), and a call of its tools, the denied ones included, was
// answered "no tool or prompt named" instead of reaching it or its policy.
func TestAggregateSessionlessUpstream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := gosdk.NewServer(&gosdk.Implementation{Name: "sessionless", Version: "1"}, nil)
	type in struct {
		Message string `json:"message"`
	}
	for _, name := range []string{"shout", "wipe"} {
		gosdk.AddTool(srv, &gosdk.Tool{Name: name}, func(_ context.Context, _ *gosdk.CallToolRequest, a in) (*gosdk.CallToolResult, any, error) {
			return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: name + ": " + strings.ToUpper(a.Message)}}}, nil, nil
		})
	}
	stateless := httptest.NewServer(gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return srv }, &gosdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(stateless.Close)
	stateful := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(stateful.Close)
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "demo", URL: stateful.URL + "/mcp"}, {Name: "loose", URL: stateless.URL}},
		VirtualServers: []VirtualServer{{Upstreams: []string{"demo", "loose"}}},
	}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"loose/wipe"}, Mode: intercept.ModeToolResult}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	c := aggClient(t, ctx, gw.URL+"/mcp")
	if names := toolNames(t, ctx, c); !slices.Contains(names, "shout") || !slices.Contains(names, "wipe") || !slices.Contains(names, "echo") {
		t.Fatalf("tools/list of the virtual server: %v, want the sessionless upstream's shout and wipe beside demo's echo", names)
	}
	if txt, isErr := callText(t, ctx, c, "shout", map[string]any{"message": "hi"}); isErr || txt != "shout: HI" {
		t.Errorf("shout through the virtual server: %q (error %v)", txt, isErr)
	}
	if txt, isErr := callText(t, ctx, c, "wipe", map[string]any{"message": "all"}); !isErr || !strings.Contains(txt, "needs a human's approval") {
		t.Errorf("wipe, held by policy: %q (error %v), want the hold's reason", txt, isErr)
	}
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Errorf("the session after the calls: %v", err)
	}
}
