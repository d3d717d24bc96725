package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestAttackVirtualGETOutsideSession: after a sensitive read through a
// virtual server closes web to the client's (virtual) session (a route
// rule of the default scope, session), nothing the client sends web may
// carry data, its HTTP headers included (TestAttackHeadersPastRouteRule).
// The virtual server's GET stream opens one on each upstream's route,
// passing the client's Traceparent and Tracestate; the route tested
// whether web was closed in web's inner session, which had read nothing,
// so the client's tracestate reached the closed upstream; so did its
// DELETE's, which ends the session on each upstream.
func TestAttackVirtualGETOutsideSession(t *testing.T) {
	s := server.NewMCPServer("web", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("web_search", mcp.WithString("query")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("results"), nil
	})
	tap := &headerTap{next: server.NewStreamableHTTPServer(s)}
	up := httptest.NewServer(tap)
	t.Cleanup(up.Close)
	gw := sessionCarryGateway(t, up.URL)

	vsid := initialize(t, gw.URL+"/mcp")
	sess := map[string]string{"Mcp-Session-Id": vsid, "Mcp-Protocol-Version": "2025-11-25"}
	if _, _, body := post(t, gw.URL+"/mcp", sess, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_document","arguments":{"path":"/hr/salaries.csv"}}}`); !strings.Contains(body, "result") || strings.Contains(body, `"isError":true`) {
		t.Fatalf("sensitive read: %s", body)
	}
	if _, _, body := post(t, gw.URL+"/mcp", sess, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"web_search","arguments":{"query":"q"}}}`); !strings.Contains(body, `"isError":true`) {
		t.Fatalf("web_search after the read in the same session: %s, want it denied (web is closed)", body)
	}
	tap.reset()
	const mark = "SECRET-hr-salaries-9c1d"
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	request(t, ctx, http.MethodGet, gw.URL+"/mcp", withHdr(sess, "Accept", "text/event-stream",
		"Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "Tracestate", "leak="+mark), "")
	if l := tap.leaked(mark); len(l) > 0 {
		t.Errorf("the secret reached the closed upstream in the headers of the virtual session's GET: %q", l)
	}
	// Its end, likewise: each upstream's inner session is ended with the
	// DELETE's trace headers.
	tap.reset()
	if st, _ := request(t, t.Context(), http.MethodDelete, gw.URL+"/mcp", withHdr(sess,
		"Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "Tracestate", "leak="+mark), ""); st != http.StatusNoContent {
		t.Fatalf("DELETE of the virtual session: %d, want 204", st)
	}
	tap.waitFor(t, "DELETE")
	if l := tap.leaked(mark); len(l) > 0 {
		t.Errorf("the secret reached the closed upstream in the headers of the virtual session's DELETE: %q", l)
	}
}

// sessionCarryGateway serves a virtual server over the demo server as
// docs and webURL's /mcp as web, under carryPolicy with the default route
// rule scope, the session's: a sensitive read through docs closes web to
// data for the client's virtual session.
func sessionCarryGateway(t *testing.T, webURL string) *httptest.Server {
	t.Helper()
	docs := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(docs.Close)
	p, err := policy.Compile([]byte(strings.Replace(carryPolicy, "scope: agent, ", "", 1)), "p.yaml", policy.Options{Store: policy.NewMemoryStore(policy.MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Upstreams: []Upstream{{Name: "docs", URL: docs.URL + "/mcp"}, {Name: "web", URL: webURL + "/mcp"}},
		VirtualServers: []VirtualServer{{}}}, &intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	return gw
}
