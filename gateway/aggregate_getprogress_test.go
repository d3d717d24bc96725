package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAggregateProgressOnGETStream: mcp-go's server sends a call's first
// progress notification on its GET stream (the answer becomes a stream
// only after it); a virtual server's client gets it on its own GET
// stream, as it would directly. Before, the virtual server dropped every
// notification an upstream's GET stream carried but list changes, so the
// script's "started" never came.
func TestAggregateProgressOnGETStream(t *testing.T) {
	_, base := startPermissiveGateway(t, Upstream{Name: "up", URL: startHTTPServer(t, "mcpgo")})
	got := make(chan string, 8)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			got <- req.Params.Message
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	p := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}}
	p.SetProgressToken("tok")
	if _, err := cs.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < 3 {
		select {
		case m := <-got:
			seen[m] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("progress notifications through the virtual server: got %v, want steps 1 to 3", seen)
		}
	}
}
