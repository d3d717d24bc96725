package gateway

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackStalledWSUpstreamHoldsSession: a /ws relay writes to its
// upstream with the connection's context, which ends only with the
// relay, and the relay reads its client only between writes. A
// WebSocket upstream that stops reading (hostile, or hung) left the
// write blocked for good once the sockets between were full: the
// client's leaving went unseen (nothing read it), and the session, its
// place in the session limits and the upstream connection were held
// until the gateway stopped. A write to a WebSocket upstream that makes
// no progress for write_stall_timeout now fails, as one to a /ws client
// does, and ends the session.
func TestAttackStalledWSUpstreamHoldsSession(t *testing.T) {
	stopUp := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		if _, _, err := c.ReadMessage(); err != nil { // initialize
			return
		}
		c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`))
		<-stopUp // reads nothing more
	}))
	defer up.Close()
	defer close(stopUp)
	ws, ended := wsSessionOn(t, Upstream{Name: "demo", URL: "ws" + strings.TrimPrefix(up.URL, "http"), Transport: TransportWebSocket})
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	// Pings of 512 KiB each, until the sockets to the upstream are full
	// and the gateway stops reading this client; then the client leaves.
	big := strings.Repeat("x", 512<<10)
	for i := 1; i < 200; i++ {
		ws.SetWriteDeadline(time.Now().Add(3 * time.Second))
		if ws.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"_meta":{"x":"%s"}}}`, i, big)) != nil {
			break
		}
	}
	ws.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Error("session still open 10s after its upstream stopped reading and its client left; want it ended once a write stalled for write_stall_timeout")
	}
}

// wsSessionOn serves up as route demo with a write stall timeout of
// 300 ms, and opens a /ws session on it, initialized; ended hears of the
// session's end.
func wsSessionOn(t *testing.T, up Upstream) (ws *websocket.Conn, ended chan string) {
	t.Helper()
	ended = make(chan string, 8)
	g, err := New(Options{Upstreams: []Upstream{up},
		WriteStallTimeout: 300 * time.Millisecond, OnSessionEnd: func(id string) { tell(t, ended, id) }},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	ws, _, err = websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(gw.URL, "http")+"/ws/demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, b, err := ws.ReadMessage(); err != nil {
		t.Fatalf("initialize: %v %s", err, b)
	}
	return ws, ended
}
