package gateway

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestAggregateParamHeaders2026: a 2026-07-28 call through a virtual
// server of a tool whose arguments its HTTP upstream marks with
// x-mcp-header (SEP-2243) was refused by the gateway itself, -32020
// "Mcp-Param-Region header is required": the virtual server's inner
// request to the upstream's route carried Mcp-Method and Mcp-Name but not
// the Mcp-Param-* headers the route checks, so no client could call such
// a tool through a virtual server, the MCP TypeScript SDK v2 client,
// which mirrors them, included (found by trial85). The inner request now
// carries them, written from the inner call's arguments.
func TestAggregateParamHeaders2026(t *testing.T) {
	var executed sync.Map
	gw := regionVirtualServer(t, &executed)
	hdr := modernHeaders("tools/call", "transfer")
	hdr["Mcp-Param-Region"] = "us"
	_, _, body := post(t, gw.URL+"/mcp", hdr, modernCall(2, "transfer", `{"region":"us","amount":5}`))
	if !strings.Contains(body, "executed in us") {
		t.Errorf("a US transfer through the virtual server: %s, want it executed", body)
	}
}

// regionVirtualServer serves a virtual server at /mcp over regionBackend's
// bank (its transfer marks region with x-mcp-header) under usOnlyPolicy,
// its tools listed once; executed records what the bank ran.
func regionVirtualServer(t *testing.T, executed *sync.Map) *httptest.Server {
	t.Helper()
	bank := regionBackend(t, "us", executed)
	g, err := New(Options{Upstreams: []Upstream{{Name: "bank", URL: bank.URL}}, VirtualServers: []VirtualServer{{}}},
		&intercept.Interceptor{Decider: usOnlyPolicy(t)}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	if status, _, body := post(t, gw.URL+"/mcp", modernHeaders("tools/list", ""), modernRequest("tools/list", "")); status != 200 || !strings.Contains(body, `"transfer"`) {
		t.Fatalf("tools/list: %d %s", status, body)
	}
	return gw
}
