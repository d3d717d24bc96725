package gateway

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestAttackSinkWhileReadInFlight: an agent sends a network sink while its
// sensitive read is still running at the upstream (two requests in flight
// together, the sink in another session). The read is in route memory
// before it reaches the upstream, so the sink is denied: nothing the read
// returns can reach a sink decided after it started. (A sink decided
// before the read was remembered carries arguments fixed before the read's
// answer existed.)
func TestAttackSinkWhileReadInFlight(t *testing.T) {
	entered, release := make(chan struct{}, 4), make(chan struct{})
	s := server.NewMCPServer("up", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("read_secret"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("the secret is 42"), nil
	})
	s.AddTool(mcp.NewTool("send_out", mcp.WithString("text")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("sent"), nil
	})
	gwURL, rec := sinkAfterSourceGateway(t, s, `  read_secret: [source:sensitive]
  send_out: [sink:network]
`)
	t.Cleanup(func() { close(release) }) // before the gateway closes: it waits for the read
	for _, path := range []string{"/mcp/up", "/mcp"} {
		t.Run(path, func(t *testing.T) {
			u, agent := gwURL+path, "alice"+path
			hdr := openSession(t, u, agent, nil)
			go func() {
				// Ended with the subtest's context, still unanswered.
				if resp, err := sendPost(t.Context(), u, hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_secret","arguments":{}}}`); err == nil {
					resp.Body.Close()
				}
			}()
			select {
			case <-entered:
			case <-t.Context().Done():
				t.Fatal("the read never reached the upstream")
			}
			_, _, got := post(t, u, openSession(t, u, agent, nil), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_out","arguments":{"text":"exfil`+path+`"}}}`)
			if !strings.Contains(got, "no-network-after-sensitive-read") || rec.count("exfil"+path) > 0 {
				t.Errorf("send_out while the read is in flight: got %s, want the route rule's denial", got)
			}
		})
	}
}

// sinkAfterSourceGateway serves s as upstream "up", directly and through
// the virtual server /mcp, behind the policy that denies a sink:network
// tool after a source:sensitive one for the agent (route rule
// no-network-after-sensitive-read), with classes the tool_classes lines
// naming them. It returns the gateway's base URL and the upstream's
// recorder.
func sinkAfterSourceGateway(t *testing.T, s *server.MCPServer, classes string) (string, *recorder) {
	t.Helper()
	rec := &recorder{next: server.NewStreamableHTTPServer(s)}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	p, err := policy.Compile([]byte(`default: allow
result_mode: tool_result
tool_classes:
`+classes+`route_rules:
  - {id: no-network-after-sensitive-read, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, reason: no sink after a sensitive read}
`), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Upstreams: []Upstream{{Name: "up", URL: up.URL + "/mcp"}}, VirtualServers: []VirtualServer{{}}},
		&intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	return gw.URL, rec
}
