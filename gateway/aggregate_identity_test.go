package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// TestAggregateSessionAgentHeader: with an agent header (no API keys), a
// route's session belongs to the header's value at initialize, and a
// request naming another agent gets 404 ("a session id seen by someone
// else is of no use to them"). The virtual server must hold its sessions
// to the same rule: another agent holding alice's /mcp session id must not
// call in it, end it or open its GET stream.
func TestAggregateSessionAgentHeader(t *testing.T) {
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	defer up.Close()
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "demo", URL: up.URL + "/mcp"}},
		VirtualServers: []VirtualServer{{}},
		AgentHeader:    "X-Agent",
	}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"a"}}}`
	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`

	// Baseline: the direct route refuses bob in alice's session.
	_, h, _ := post(t, srv.URL+"/mcp/demo", map[string]string{"X-Agent": "alice"}, init)
	direct := h.Get("Mcp-Session-Id")
	if code, _, body := post(t, srv.URL+"/mcp/demo", map[string]string{"X-Agent": "bob", "Mcp-Session-Id": direct}, call); code != http.StatusNotFound {
		t.Fatalf("direct route, bob in alice's session: %d %s (baseline)", code, body)
	}

	_, h, _ = post(t, srv.URL+"/mcp", map[string]string{"X-Agent": "alice"}, init)
	sid := h.Get("Mcp-Session-Id")
	if code, _, body := post(t, srv.URL+"/mcp", map[string]string{"X-Agent": "alice", "Mcp-Session-Id": sid}, call); code != 200 || strings.Contains(body, `"error"`) {
		t.Fatalf("alice's call: %d %s", code, body)
	}
	if code, _, body := post(t, srv.URL+"/mcp", map[string]string{"X-Agent": "bob", "Mcp-Session-Id": sid}, call); code != http.StatusNotFound {
		t.Errorf("/mcp, bob's tools/call in alice's session: %d %.200s; want 404 as on the route", code, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/mcp", nil)
	req.Header.Set("X-Agent", "bob")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/mcp, bob's DELETE of alice's session: %d; want 404", resp.StatusCode)
	}
	if code, _, body := post(t, srv.URL+"/mcp", map[string]string{"X-Agent": "alice", "Mcp-Session-Id": sid}, call); code != 200 {
		t.Errorf("alice's call after bob's DELETE: %d %.200s; her session is gone", code, body)
	}
}

// TestVirtualSessionAgentFixed: on a virtual server (/mcp) without
// authentication, the agent header of the initialize names the agent for
// the whole session, as on a route: a later request in the same session
// carrying another agent header value must not be served as that other
// agent. Here alice reads a sensitive document (the agent-scoped route
// rule then denies her network calls) and, in the same Mcp-Session-Id,
// sends web_search with X-Agent: bob.
func TestVirtualSessionAgentFixed(t *testing.T) {
	f, _ := identityFixture(t, Options{AgentHeader: "X-Agent", VirtualServers: []VirtualServer{{}}})
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cli","version":"1"}}}`
	status, h, body := post(t, f.gw.URL+"/mcp", map[string]string{"X-Agent": "alice"}, init)
	sid := h.Get(hdrSession)
	if status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	alice := map[string]string{"X-Agent": "alice", hdrSession: sid, "Mcp-Protocol-Version": "2025-11-25"}
	post(t, f.gw.URL+"/mcp", alice, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, _, body := post(t, f.gw.URL+"/mcp", alice, readDocument(2)); !strings.Contains(body, "handbook") && strings.Contains(body, `"error"`) {
		t.Fatalf("read_document as alice: %s", body)
	}
	if _, _, body := post(t, f.gw.URL+"/mcp", alice, webSearch(3, "exfil", "")); !routeDenied(body) {
		t.Fatalf("web_search as alice after the read: %s, want the route rule's denial", body)
	}
	// Same session, another agent header.
	_, _, body = post(t, f.gw.URL+"/mcp", with(alice, "X-Agent", "bob"), webSearch(4, "exfil", ""))
	if !routeDenied(body) && strings.Contains(body, `"result"`) {
		t.Errorf("alice's virtual session with X-Agent: bob: the call was served as another agent: %s", body)
	}
}

// TestSealedVirtualSessionAgentFixed: a virtual session's sealed id
// carries who opened it, so another replica adopting it holds it to the
// same agent header.
func TestSealedVirtualSessionAgentFixed(t *testing.T) {
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up.Close)
	var urls []string
	for range 2 {
		g, err := New(Options{
			Upstreams:      []Upstream{{Name: "demo", URL: up.URL + "/mcp"}},
			VirtualServers: []VirtualServer{{}},
			AgentHeader:    "X-Agent",
			SessionKeys:    [][]byte{key(1)},
		}, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(g.Handler())
		t.Cleanup(func() { closeServed(t, gw, g) })
		urls = append(urls, gw.URL)
	}
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cli","version":"1"}}}`
	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`
	_, h, body := post(t, urls[0]+"/mcp", map[string]string{"X-Agent": "alice"}, init)
	sid := h.Get(hdrSession)
	if !strings.HasPrefix(sid, virtualPrefix) {
		t.Fatalf("initialize: %q %s", sid, body)
	}
	if code, _, body := post(t, urls[1]+"/mcp", map[string]string{"X-Agent": "bob", hdrSession: sid}, call); code != http.StatusNotFound {
		t.Errorf("bob with alice's sealed virtual session on another replica: %d %.200s, want 404", code, body)
	}
	if code, _, body := post(t, urls[1]+"/mcp", map[string]string{"X-Agent": "alice", hdrSession: sid}, call); code != 200 || !strings.Contains(body, "Echo: x") {
		t.Errorf("alice on another replica: %d %.200s", code, body)
	}
}
