package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// principal.client_name is the name an authenticated client gives itself
// (clientInfo.name in initialize, or in each 2026-07-28 request's _meta).
// A condition on it must see that name, in the call's decision and in the
// screened tool list alike, on HTTP and bridged (stdio) upstreams.
func TestPrincipalClientNameInConditions(t *testing.T) {
	p, err := policy.Compile([]byte(`
default: deny
rules:
  - id: test-client-echo
    match: {match_tool: echo}
    when: 'principal.method == "api_key" && principal.client_name == "test"'
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

	check := func(t *testing.T, names []string, call string, want bool) {
		t.Helper()
		listed := slices.Contains(names, "echo")
		allowed := strings.Contains(call, "Echo: hi")
		if listed != want || allowed != want {
			t.Errorf("client_name condition should hold: %v; echo listed %v (%v), call allowed %v: %s", want, listed, names, allowed, call)
		}
	}
	for _, route := range []string{"json", "stdio"} {
		for _, client := range []string{"test", "other"} {
			t.Run(route+"/ws/"+client, func(t *testing.T) {
				ws, _, err := websocket.DefaultDialer.DialContext(t.Context(), "ws"+strings.TrimPrefix(gw.URL, "http")+"/ws/"+route,
					http.Header{"Sec-WebSocket-Protocol": {"mcp"}, "X-Test-Principal": {"alice"}})
				if err != nil {
					t.Fatal(err)
				}
				defer ws.Close()
				exchange := func(msg string) string {
					t.Helper()
					if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
						t.Fatal(err)
					}
					ws.SetReadDeadline(time.Now().Add(10 * time.Second))
					_, b, err := ws.ReadMessage()
					if err != nil {
						t.Fatal(err)
					}
					return string(b)
				}
				exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` + client + `","version":"1"}}}`)
				if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
					t.Fatal(err)
				}
				var list struct {
					Result jsontext.Value `json:"result"`
				}
				if err := json.Unmarshal([]byte(exchange(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)), &list); err != nil {
					t.Fatal(err)
				}
				names, _ := toolsByName(t, list.Result)
				got := exchange(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
				check(t, names, got, client == "test")
			})
		}
		t.Run(route+"/2026-07-28", func(t *testing.T) {
			u := gw.URL + "/mcp/" + route
			hdr := modernHeaders("tools/list", "")
			hdr["X-Test-Principal"] = "alice"
			_, rh, body := post(t, u, hdr, modernList)
			names, _ := toolsByName(t, responseTo(t, rh, body, "7").Result)
			hdr = modernHeaders("tools/call", "echo")
			hdr["X-Test-Principal"] = "alice"
			_, _, got := post(t, u, hdr, modernCall(8, "echo", `{"message":"hi"}`))
			check(t, names, got, true)
		})
		for _, client := range []string{"test", "other"} {
			t.Run(route+"/2025-11-25/"+client, func(t *testing.T) {
				u := gw.URL + "/mcp/" + route
				hdr := map[string]string{"Mcp-Protocol-Version": "2025-11-25", "X-Test-Principal": "alice"}
				status, h, body := post(t, u, hdr,
					`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+client+`","version":"1"}}}`)
				if status != 200 {
					t.Fatalf("initialize: %d %s", status, body)
				}
				hdr["Mcp-Session-Id"] = h.Get("Mcp-Session-Id")
				post(t, u, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				_, rh, body := post(t, u, hdr, `{"jsonrpc":"2.0","id":"l1","method":"tools/list"}`)
				names, _ := toolsByName(t, responseTo(t, rh, body, `"l1"`).Result)
				_, _, got := post(t, u, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
				check(t, names, got, client == "test")
			})
		}
	}
}

// A sealed session keeps the client's name: a call on another replica is
// decided with the name initialize gave on the first.
func TestClientNameAcrossReplicas(t *testing.T) {
	p, err := policy.Compile([]byte(`
default: deny
rules:
  - id: test-client-echo
    match: {match_tool: echo}
    when: 'principal.client_name == "test"'
    decision: allow
`), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up.Close)
	var urls []string
	for range 2 {
		g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, SessionKeys: [][]byte{key(7)}},
			&intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(withPrincipal(g.Handler()))
		t.Cleanup(func() { closeServed(t, gw, g) })
		urls = append(urls, gw.URL+"/mcp/demo")
	}
	hdr := map[string]string{"Mcp-Protocol-Version": "2025-11-25", "X-Test-Principal": "alice"}
	status, h, body := post(t, urls[0], hdr,
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	if status != 200 || h.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	hdr["Mcp-Session-Id"] = h.Get("Mcp-Session-Id")
	post(t, urls[0], hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, _, got := post(t, urls[1], hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`); !strings.Contains(got, "Echo: hi") {
		t.Errorf("the call on the second replica lost the client's name: %s", got)
	}
}
