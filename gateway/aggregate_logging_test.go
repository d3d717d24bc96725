package gateway

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	mgomcp "github.com/mark3labs/mcp-go/mcp"
	mgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAggregateLogging: a virtual server declares logging when an
// upstream does (MCP: a server that sends log messages declares it, and
// the virtual server passes its upstreams' on), and offers
// logging/setLevel only then, as a server with or without logging would.
// Before, it declared no logging and answered logging/setLevel anyway,
// whatever its upstreams declared.
func TestAggregateLogging(t *testing.T) {
	silent := mgoserver.NewMCPServer("silent", "1", mgoserver.WithToolCapabilities(true))
	silent.AddTool(mgomcp.NewTool("noop"), func(context.Context, mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		return mgomcp.NewToolResultText("ok"), nil
	})
	srv := httptest.NewServer(mgoserver.NewStreamableHTTPServer(silent))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name, url string
		logs      bool
	}{
		{"upstream with logging", startHTTPServer(t, "mcpgo"), true},
		{"upstream without", srv.URL + "/mcp", false},
	} {
		for _, era := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(tc.name+"/"+era, func(t *testing.T) {
				_, base := startPermissiveGateway(t, Upstream{Name: "up", URL: tc.url})
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
				cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: era})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				if got := cs.InitializeResult().Capabilities.Logging != nil; got != tc.logs {
					t.Errorf("logging declared: got %v, want %v", got, tc.logs)
				}
				err = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
				var werr *jsonrpc.Error
				switch {
				case tc.logs && err != nil:
					t.Errorf("logging/setLevel: got %v, want its result", err)
				case !tc.logs && (!errors.As(err, &werr) || werr.Code != jsonrpc.CodeMethodNotFound):
					t.Errorf("logging/setLevel: got %v, want method not found", err)
				}
			})
		}
	}
}
