package gateway

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/intercept"
)

// TestGoSDKSessionGone: a session the gateway no longer has (ended, idle
// past session_idle_timeout, a restarted replica's) is answered 404, which
// the MCP specification has a client take as its session gone and start
// a new one. go-sdk's client (v1.8) does so only for a 404 without a
// JSON-RPC error in its body: with one, it took the 404 as one request
// refused and went on with a session that no longer exists, every call
// failing. The body is the reason as text, on a route and on a virtual
// server.
func TestGoSDKSessionGone(t *testing.T) {
	up := strictUpstream()
	t.Cleanup(up.Close)
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "demo", URL: up.URL + "/mcp"}},
		VirtualServers: []VirtualServer{{Naming: NamingPrefix}},
	}, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	for _, tc := range []struct{ name, path, tool string }{
		{"route", "/mcp/demo", "echo"},
		{"virtual server", "/mcp", "demo_echo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(t.Context(),
				&mcp.StreamableClientTransport{Endpoint: gw.URL + tc.path, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"message": "hop"}}); err != nil {
				t.Fatalf("call: %v", err)
			}
			// The session ends behind the client's back (as an idle
			// timeout or a restart would end it).
			req, _ := http.NewRequest(http.MethodDelete, gw.URL+tc.path, nil)
			req.Header.Set(hdrSession, cs.ID())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"message": "hop"}}); !errors.Is(err, mcp.ErrSessionMissing) {
				t.Errorf("a call after the session ended: got %v, want go-sdk's ErrSessionMissing", err)
			}
		})
	}
}
