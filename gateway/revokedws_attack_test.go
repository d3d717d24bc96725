package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackRevokedWSStaysOpen: a /ws connection whose principal's
// credential was revoked was refused only at its next message, in either
// direction: a client that sent nothing, and whose upstream sent nothing,
// kept its connection (and its session, its calls held for approval)
// open on the revoked key for as long as it liked. Now the gateway asks
// about the credential while the connection is quiet too, and closes it
// at once with status 1008 (policy violation) and a reason saying why,
// on a route and on a virtual server; a legacy /sse stream ends after a
// JSON-RPC error saying why.
func TestAttackRevokedWSStaysOpen(t *testing.T) {
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up.Close)
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, VirtualServers: []VirtualServer{{Naming: NamingPrefix}}},
		&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	alice, revoked := revocable("alice")
	t.Cleanup(func() { g.Close() })
	gw := servedAs(t, g, as(alice))

	for _, path := range []string{"/ws/demo", "/ws"} {
		t.Run(path, func(t *testing.T) {
			revoked.Store(false)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(gw.URL, "http")+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
			ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, b, err := ws.ReadMessage(); err != nil || !strings.Contains(string(b), "protocolVersion") {
				t.Fatalf("initialize: %v %s", err, b)
			}
			ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			// Answered: everything the client sent was taken.
			ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			if _, b, err := ws.ReadMessage(); err != nil || !strings.Contains(string(b), `"id":1`) {
				t.Fatalf("ping: %v %s", err, b)
			}

			revoked.Store(true)
			// The client sends nothing more and waits for what comes.
			const within = 5 * time.Second
			ws.SetReadDeadline(time.Now().Add(within))
			var said []string
			for {
				_, b, err := ws.ReadMessage()
				if err == nil {
					said = append(said, string(b))
					continue
				}
				var ce *websocket.CloseError
				if !errors.As(err, &ce) {
					t.Fatalf("a quiet connection whose key was revoked: %v after %d messages %q; want it closed within %v with 1008", err, len(said), said, within)
				}
				if ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "credential") {
					t.Errorf("close frame: got %d %q, want 1008 saying the credential no longer holds", ce.Code, ce.Text)
				}
				return
			}
		})
	}

	// The legacy SSE transport: the stream ends, after an error saying
	// why, on a route and on a virtual server.
	for _, path := range []string{"/sse/demo", "/sse"} {
		t.Run(path, func(t *testing.T) {
			revoked.Store(false)
			c := dialWith(t, &transport.SSEDialer{URL: gw.URL + path})
			if m := exchangeOn(t, c, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, "0"); m.Kind != intercept.KindResponse {
				t.Fatalf("initialize: got %s", m.Raw)
			}
			if m := exchangeOn(t, c, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "1"); m.Kind != intercept.KindResponse {
				t.Fatalf("ping: got %s", m.Raw)
			}
			revoked.Store(true)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			var said []string
			for {
				b, err := c.Read(ctx)
				if err == nil {
					said = append(said, string(b))
					continue
				}
				if ctx.Err() != nil {
					t.Fatalf("a quiet SSE stream whose key was revoked: still open after 5s (%d messages %q); want it ended", len(said), said)
				}
				if len(said) == 0 || !strings.Contains(said[len(said)-1], "credential") {
					t.Errorf("the stream ended (%v) after %q; want an error saying the credential no longer holds", err, said)
				}
				return
			}
		})
	}
}
