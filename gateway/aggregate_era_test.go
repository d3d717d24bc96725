package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestAggregateClientThatTries2026 runs mcp-go's client with its default,
// which tries MCP 2026-07-28 first: the virtual server's clear refusal of
// a stateless request sends it to initialize, and it works.
func TestAggregateClientThatTries2026(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := newAggFixture(t, VirtualServer{Upstreams: []string{"demo"}})
	trans, err := mcptransport.NewStreamableHTTP(f.url + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "x"}}})
	if err != nil || res.ProtocolVersion != mcp.ProtocolVersion20251125 {
		t.Fatalf("initialize: %+v %v", res, err)
	}
	if l, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil || len(l.Tools) == 0 {
		t.Fatalf("tools/list: %v %v", l, err)
	}
}
