package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackWSClientBinaryMessage: a /ws client's binary message was
// read as a text one and its JSON-RPC message handled and passed on.
// MCP over WebSocket sends text messages; a binary one closes the
// connection with 1003 (unsupported data) and reaches no upstream.
func TestAttackWSClientBinaryMessage(t *testing.T) {
	calls := make(chan string, 10)
	up := httptest.NewServer(answerRequests(func(w http.ResponseWriter, m *intercept.Message) {
		tell(t, calls, m.Method)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(bigResult(m)))
	}))
	t.Cleanup(up.Close)
	url, _ := messageLimitGateway(t, Upstream{Name: "u", URL: up.URL + "/mcp"}, Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(strings.TrimSuffix(url, "/mcp/u"), "http")+"/ws/u", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for _, m := range []struct {
		kind int
		msg  string
	}{
		{websocket.TextMessage, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`},
		{websocket.TextMessage, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{websocket.BinaryMessage, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`},
	} {
		if err := ws.WriteMessage(m.kind, []byte(m.msg)); err != nil {
			t.Fatal(err)
		}
	}
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseUnsupportedData) {
				t.Errorf("got %v, want the connection closed with 1003 (unsupported data)", err)
			}
			break
		}
		if strings.Contains(string(b), `"id":2`) {
			t.Fatalf("the binary message was answered: %.300s", b)
		}
	}
	for len(calls) > 0 {
		if m := <-calls; m == "tools/call" {
			t.Errorf("the upstream got the call sent as a binary message")
		}
	}
}
