package gateway

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// Hosted MCP servers (Zapier, Composio and the like) put the credential
// in the URL path; redactURL keeps the path, so an unreachable upstream's
// error shows it to the agent.
func TestUpstreamErrorHidesPathSecret(t *testing.T) {
	addr := closedAddr(t)
	ups := []Upstream{{Name: "http", URL: "http://" + addr + "/api/mcp/s/PATHSECRET-5e4d3c2b1a/mcp"}}
	g, err := New(Options{Upstreams: ups}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"echo"}}},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	defer closeServed(t, gw, g)
	_, _, body := post(t, gw.URL+"/mcp/http", modernHeaders("tools/call", "echo"), modernCall(2, "echo", `{}`))
	if strings.Contains(body, "PATHSECRET") {
		t.Errorf("agent got %s", body)
	}
}
