package gateway

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestAggregateOverSSEAndWebSocket: a virtual server is served on the
// connection transports too — mcp-go's HTTP+SSE client on /sse and a raw
// WebSocket client on /ws/{name} see the merged tools, their calls reach
// the upstream that offers them and policy decides there; the session ends
// with the connection.
func TestAggregateOverSSEAndWebSocket(t *testing.T) {
	f := newAggFixture(t, VirtualServer{Upstreams: []string{"demo", "other"}}, VirtualServer{Name: "code", Upstreams: []string{"other"}, Naming: NamingPrefix})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	c, err := client.NewSSEMCPClient(f.url + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: "2024-11-05", ClientInfo: mcp.Implementation{Name: "sse-agent"}}}); err != nil {
		t.Fatalf("initialize over /sse: %v", err)
	}
	names := toolNames(t, ctx, c)
	if !slices.Contains(names, "echo") || !slices.Contains(names, "other_echo") {
		t.Fatalf("tools over /sse: %v", names)
	}
	if txt, _ := callText(t, ctx, c, "other_echo", map[string]any{"message": "over sse"}); !strings.Contains(txt, "over sse") {
		t.Errorf("other_echo over /sse: %q", txt)
	}
	if got := f.dec.last(); got != "other/echo" {
		t.Errorf("policy saw %q, want other/echo", got)
	}
	if txt, isErr := callText(t, ctx, c, "other_add", map[string]any{"a": 1, "b": 2}); !isErr || !strings.Contains(txt, "not allowed") {
		t.Errorf("other_add over /sse: %q (error %v), want the soft deny", txt, isErr)
	}

	ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(f.url, "http")+"/ws/code", http.Header{"Sec-WebSocket-Protocol": {"mcp"}})
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
	if got := exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ws-agent","version":"1"}}}`); !strings.Contains(got, `"name":"sluice/code"`) {
		t.Fatalf("initialize over /ws/code: %s", got)
	}
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatal(err)
	}
	if got := exchange(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); !strings.Contains(got, `"name":"other_echo"`) || strings.Contains(got, `"name":"echo"`) {
		t.Errorf("tools over /ws/code: %s", got)
	}
	if got := exchange(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"other_echo","arguments":{"message":"over ws"}}}`); !strings.Contains(got, "over ws") || !strings.Contains(got, `"id":3`) {
		t.Errorf("other_echo over /ws/code: %s", got)
	}
	// Each connection was one session; closing it ends the session.
	sessions := func(name string) int {
		a := f.g.virtual[name]
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.sessions)
	}
	if sessions("") != 1 || sessions("code") != 1 {
		t.Fatalf("sessions open: /sse %d, /ws/code %d; want one each", sessions(""), sessions("code"))
	}
	ws.Close()
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for (sessions("") > 0 || sessions("code") > 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if sessions("") > 0 || sessions("code") > 0 {
		t.Errorf("sessions left after the connections closed: /sse %d, /ws/code %d", sessions(""), sessions("code"))
	}
}
