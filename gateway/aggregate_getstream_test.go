package gateway

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	mgomcp "github.com/mark3labs/mcp-go/mcp"
	mgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAggregateNotificationsOnGETStream: what an upstream sends on its GET
// stream other than list changes (mcp-go's server sends a call's first
// progress there, before its answer becomes a stream; a message to all
// its clients always) reaches a virtual server's client on its own GET
// stream, as it would directly. Before, the virtual server dropped every
// notification an upstream's GET stream carried but list changes, so the
// transparency script's "started" never came.
func TestAggregateNotificationsOnGETStream(t *testing.T) {
	s := mgoserver.NewMCPServer("announcer", "1", mgoserver.WithToolCapabilities(true), mgoserver.WithLogging())
	s.AddTool(mgomcp.NewTool("announce"), func(context.Context, mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		s.SendNotificationToAllClients("notifications/message", map[string]any{"level": "info", "data": "hello"})
		return mgomcp.NewToolResultText("announced"), nil
	})
	up := httptest.NewServer(mgoserver.NewStreamableHTTPServer(s))
	t.Cleanup(up.Close)
	_, base := startPermissiveGateway(t, Upstream{Name: "up", URL: up.URL + "/mcp"})

	got := make(chan any, 64)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			select {
			case got <- req.Params.Data:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// Until the virtual server's GET stream on the upstream is open, the
	// upstream has no stream to send to: ask again until one arrives.
	deadline := time.After(5 * time.Second)
	for {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "announce", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-got:
			if d != "hello" {
				t.Errorf("got %v, want hello", d)
			}
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("the upstream's notifications/message on its GET stream never reached the virtual server's client")
		}
	}
}
