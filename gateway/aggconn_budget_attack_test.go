package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackVirtualConnUnboundedCalls (found by an attacker review): on a
// virtual server's /ws (and /sse) connection each message after initialize
// is served on a goroutine of its own, and the next message is read at
// once. Nothing bounded how many were served at a time, or the bytes they
// held: the connection's messages were read within max_inflight_body_bytes
// only while being read, and the calls a virtual server makes through its
// upstreams' routes bypass the request-body budget. One connection sending
// calls of nearly max_body_bytes to a tool that takes its time had the
// gateway hold every one of them. A message being served now keeps its
// room in the budget until its answer; one that finds none is answered
// with the limit error.
func TestAttackVirtualConnUnboundedCalls(t *testing.T) {
	// The demo server's slow_count takes its time; in a process of its
	// own, so that the heap measured is the gateway's.
	bin := buildDemoServer(t)
	const limit, budget = 1 << 20, 2 << 20
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", Command: bin, Args: []string{"-transport", "stdio"}}}, VirtualServers: []VirtualServer{{}},
		MaxBodyBytes: limit, MaxInflightBodyBytes: budget},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(gw.URL, "http")+"/ws", http.Header{"Sec-WebSocket-Protocol": {"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"m","version":"1"}}}`))
	ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, b, err := ws.ReadMessage(); err != nil || !strings.Contains(string(b), `"result"`) {
		t.Fatalf("initialize: %v %.200s", err, b)
	}
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		if strings.Contains(string(b), `"id":1`) {
			break
		}
	}
	answers := make(chan string, 64)
	go func() {
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			answers <- string(b)
		}
	}()

	base := heapAlloc()
	const n = 12
	pad := strings.Repeat("P", limit-100<<10)
	for i := range n {
		msg := `{"jsonrpc":"2.0","id":` + itoa(10+i) + `,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":2,"delay_ms":3000},"_meta":{"pad":"` + pad + `"}}}`
		if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Logf("call %d: %v", i, err) // the gateway closed the connection (1013)
			break
		}
	}
	var grown uint64
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if h := heapAlloc(); h > base {
			grown = max(grown, h-base)
		}
	}
	refused := 0
	for len(answers) > 0 {
		if a := <-answers; strings.Contains(a, "max_inflight_body_bytes") {
			refused++
		}
	}
	t.Logf("heap grew %d KiB with %d calls of %d KiB waiting on one connection (budget %d KiB); %d refused",
		grown>>10, n, len(pad)>>10, budget>>10, refused)
	// Each call served is held a few times over (its message, the inner
	// request, the descriptor); the budget lets one or two be served.
	if grown > 24<<20 {
		t.Errorf("the gateway held %d MiB for one connection's %d waiting calls of %d KiB; max_inflight_body_bytes is %d MiB", grown>>20, n, len(pad)>>10, budget>>20)
	}
}
