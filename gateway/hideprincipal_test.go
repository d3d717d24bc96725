package gateway

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// hide_denied_tools now decides conditions on principal for the whole
// tool. The list must then be filtered with the principal the calls are
// decided with: a tool an authenticated agent may call must not be left
// out of its list. For a bridged upstream (stdio, SSE, WebSocket) the
// answer is screened on the upstream's reader, with context.Background()
// (bridge.go readLoop) or the gateway's context (stateless.go) and a
// call context without Principal (exchange.callContext), so Visible sees
// no principal (and the header/clientInfo agent) while the call is
// decided with the request's principal as the agent.
func TestHiddenToolAllowedForItsPrincipal(t *testing.T) {
	p, err := policy.Compile([]byte(`
default: deny
rules:
  - id: keyholders-echo
    match: {match_tool: echo}
    when: 'principal.method == "api_key"'
    decision: allow
`), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	jsonUp := httptest.NewServer(withLength(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{JSONResponse: true})))
	t.Cleanup(jsonUp.Close)
	g, err := New(Options{Upstreams: []Upstream{{Name: "json", URL: jsonUp.URL + "/mcp"},
		{Name: "stdio", Command: buildDemoServer(t), Args: []string{"-transport", "stdio"}}}},
		&intercept.Interceptor{Decider: p, HideDeniedTools: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(withPrincipal(g.Handler()))
	t.Cleanup(func() { closeServed(t, gw, g) })

	for _, route := range []string{"json", "stdio"} {
		t.Run(route+"/2026-07-28", func(t *testing.T) {
			u := gw.URL + "/mcp/" + route
			hdr := modernHeaders("tools/list", "")
			hdr["X-Test-Principal"] = "alice"
			status, rh, body := post(t, u, hdr, modernList)
			if status != 200 {
				t.Fatalf("tools/list: %d %s", status, body)
			}
			names, _ := toolsByName(t, responseTo(t, rh, body, "7").Result)
			hidden := !strings.Contains(strings.Join(names, ","), "echo")

			hdr = modernHeaders("tools/call", "echo")
			hdr["X-Test-Principal"] = "alice"
			_, _, got := post(t, u, hdr, modernCall(8, "echo", `{"message":"hi"}`))
			allowed := strings.Contains(got, "Echo: hi")
			if hidden && allowed {
				t.Errorf("echo is hidden from alice's list (%v) but her call is allowed: %s", names, got)
			}
			t.Logf("list %v; call %s", names, got)
		})
	}
	for _, route := range []string{"json", "stdio"} {
		t.Run(route+"/2025-11-25", func(t *testing.T) {
			u := gw.URL + "/mcp/" + route
			hdr := map[string]string{"Mcp-Protocol-Version": "2025-11-25", "X-Test-Principal": "alice"}
			status, h, body := post(t, u, hdr,
				`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			if status != 200 {
				t.Fatalf("initialize: %d %s", status, body)
			}
			hdr["Mcp-Session-Id"] = h.Get("Mcp-Session-Id")
			post(t, u, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			status, rh, body := post(t, u, hdr, `{"jsonrpc":"2.0","id":"l1","method":"tools/list"}`)
			if status != 200 {
				t.Fatalf("tools/list: %d %s", status, body)
			}
			names, _ := toolsByName(t, responseTo(t, rh, body, `"l1"`).Result)
			hidden := !strings.Contains(strings.Join(names, ","), "echo")
			_, _, got := post(t, u, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
			allowed := strings.Contains(got, "Echo: hi")
			if hidden && allowed {
				t.Errorf("echo is hidden from alice's list (%v) but her call is allowed: %s", names, got)
			}
			t.Logf("list %v; call %s", names, got)
		})
	}
}
