package gateway

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"

	"github.com/sluicehq/sluice/intercept"
)

// hideFromAgent allows everything and hides one upstream's tool from one
// agent's listings (an intercept.ToolFilter).
type hideFromAgent struct {
	intercept.StaticDecider
	agent, upstream, tool string
}

func (h *hideFromAgent) Visible(_ context.Context, d *intercept.ActionDescriptor) bool {
	return !(d.Agent == h.agent && d.Upstream == h.upstream && d.ToolName == h.tool)
}

// TestVirtualHeldNameAgentScoped (review): the bare names a virtual
// server's listing gives out are remembered per principal and method, and
// the tools a listing holds are filtered per agent. One principal's two
// agents shared the record: bob, from whom the policy hides early's
// search, listed search as late's, and alice, whose listings had always
// given search to early, was given late's at her next listing, her calls
// by the name going to the other server.
func TestVirtualHeldNameAgentScoped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	serve := func(name string) string {
		s := server.NewMCPServer(name, "1", server.WithToolCapabilities(true))
		s.AddTool(mcp.NewTool("search", mcp.WithString("q")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("search by " + name), nil
		})
		up := httptest.NewServer(server.NewStreamableHTTPServer(s))
		t.Cleanup(up.Close)
		return up.URL + "/mcp"
	}
	dec := &hideFromAgent{StaticDecider: intercept.StaticDecider{Default: intercept.Allow}, agent: "bob", upstream: "early", tool: "search"}
	g, err := New(Options{
		AgentHeader:    "X-Agent",
		Upstreams:      []Upstream{{Name: "early", URL: serve("early")}, {Name: "late", URL: serve("late")}},
		VirtualServers: []VirtualServer{{Upstreams: []string{"early", "late"}}},
	}, &intercept.Interceptor{Decider: dec, HideDeniedTools: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	as := func(agent string) mcptransport.StreamableHTTPCOption {
		return mcptransport.WithHTTPHeaders(map[string]string{"X-Agent": agent})
	}
	alice := aggClient(t, ctx, gw.URL+"/mcp", as("alice"))
	if names := toolNames(t, ctx, alice); !slices.Contains(names, "search") {
		t.Fatalf("alice listed %v, want search", names)
	}
	if got, _ := callText(t, ctx, alice, "search", map[string]any{"q": "x"}); got != "search by early" {
		t.Fatalf("alice's search: %q, want early's", got)
	}
	bob := aggClient(t, ctx, gw.URL+"/mcp", as("bob"))
	if names := toolNames(t, ctx, bob); !slices.Contains(names, "search") {
		t.Fatalf("bob listed %v, want search (late's)", names)
	}
	if got, _ := callText(t, ctx, bob, "search", map[string]any{"q": "x"}); got != "search by late" {
		t.Fatalf("bob's search: %q, want late's", got)
	}
	alice2 := aggClient(t, ctx, gw.URL+"/mcp", as("alice"))
	toolNames(t, ctx, alice2)
	if got, _ := callText(t, ctx, alice2, "search", map[string]any{"q": "x"}); got != "search by early" {
		t.Errorf("alice's search after bob listed: %q, want early's, as her listings gave it", got)
	}
}
