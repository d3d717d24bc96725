package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestMCPRootWithoutVirtualServerSaysWhere: without an unnamed virtual
// server nothing is served at /mcp, and a client sent there (the MCP
// Inspector's CLI posts to /mcp of a URL such as /mcp/demo) got Go's "404
// page not found". The 404 now names the routes and how to serve /mcp.
func TestMCPRootWithoutVirtualServerSaysWhere(t *testing.T) {
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: "http://127.0.0.1:9/mcp"}, {Name: "files", URL: "http://127.0.0.1:9/mcp"}}},
		&intercept.Interceptor{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404", resp.StatusCode)
	}
	for _, want := range []string{"/mcp/demo", "/mcp/files", "virtual_servers"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("body %s does not name %s", b, want)
		}
	}
}
