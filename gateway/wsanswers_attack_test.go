package gateway

import (
	"context"
	"log/slog"
	"net"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackWSUnreadAnswersPile (found by an attacker review): a request a
// POST carries keeps its room in max_inflight_body_bytes until it is
// answered; one a /ws connection carried gave it back once forwarded, and
// an HTTP upstream's request keeps its body until its answer is read. A
// client sending calls on /ws without reading its answers (so that none
// is ever done) had the gateway hold every one of them, up to 1,024 per
// connection (4 GiB at the defaults): 100 echo calls of 500 KiB, 51 MiB
// against a 2 MiB budget. A request a connection forwards now keeps its
// room until its answer has been passed on, and one that gets none within
// 2 s is answered with the limit's error.
func TestAttackWSUnreadAnswersPile(t *testing.T) {
	const limit, budget = 1 << 20, 2 << 20
	// The demo server over HTTP in a process of its own, so that the heap
	// measured is the gateway's.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(buildDemoServer(t), "-transport", "http", "-addr", addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i > 100 {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: "http://" + addr + "/mcp"}}, MaxBodyBytes: limit, MaxInflightBodyBytes: budget},
		&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(gw.URL, "http")+"/ws/demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"m","version":"1"}}}`))
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, b, err := ws.ReadMessage(); err != nil {
		t.Fatalf("initialize: %v %s", err, b)
	}
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	base := heapAlloc()
	pad := strings.Repeat("P", 500<<10)
	const n = 100
	sent := 0
	for i := range n {
		ws.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":`+itoa(10+i)+`,"method":"tools/call","params":{"name":"echo","arguments":{"message":"`+pad+`"}}}`)); err != nil {
			t.Logf("write %d: %v", i, err)
			break
		}
		sent++
	}
	var grown uint64
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if h := heapAlloc(); h > base {
			grown = max(grown, h-base)
		}
	}
	t.Logf("heap grew %d MiB with %d calls of %d KiB sent and their answers unread (budget %d MiB)", grown>>20, sent, len(pad)>>10, budget>>20)
	if grown > 12<<20 {
		t.Errorf("the gateway held %d MiB for one connection's calls whose answers it does not read; max_inflight_body_bytes is %d MiB", grown>>20, budget>>20)
	}
}
