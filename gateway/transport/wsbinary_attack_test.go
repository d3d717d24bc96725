package transport

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestAttackWSBinaryMessage: a binary message, which MCP over WebSocket
// does not send (a JSON-RPC message is a text message), was read as if
// it were text, from a client and from an upstream alike. The message is
// refused: Read fails with ErrBinaryMessage and the peer is told why,
// close 1003 (unsupported data), with or without a message budget.
func TestAttackWSBinaryMessage(t *testing.T) {
	stdioNoLeaks(t)
	const msg = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email"}}`
	for name, opts := range map[string]*WSAcceptOptions{"plain": nil, "budget": {Budget: &countBudget{max: 1 << 20}}} {
		t.Run("from client/"+name, func(t *testing.T) {
			s := newWSServer(t, opts, wsPingInterval)
			ws, _, err := websocket.DefaultDialer.DialContext(testContext(t), s.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			server := s.accept(t)
			if err := ws.WriteMessage(websocket.BinaryMessage, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			if got, err := server.Read(testContext(t)); !errors.Is(err, ErrBinaryMessage) {
				t.Errorf("server Read of a binary message: got %q, %v; want ErrBinaryMessage", got, err)
			}
			ws.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseUnsupportedData) {
				t.Errorf("client: got %v, want close 1003", err)
			}
		})
	}

	t.Run("from upstream", func(t *testing.T) {
		closed := make(chan error, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			up := websocket.Upgrader{Subprotocols: []string{wsSubprotocol}}
			ws, err := up.Upgrade(w, r, nil)
			if err != nil {
				closed <- err
				return
			}
			defer ws.Close()
			ws.WriteMessage(websocket.BinaryMessage, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
			ws.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, _, err = ws.ReadMessage()
			closed <- err
		}))
		defer srv.Close()
		client := mustDial(t, &WSDialer{URL: "ws" + strings.TrimPrefix(srv.URL, "http")})
		defer client.Close()
		if got, err := client.Read(testContext(t)); !errors.Is(err, ErrBinaryMessage) {
			t.Errorf("client Read of a binary message: got %q, %v; want ErrBinaryMessage", got, err)
		}
		if err := <-closed; !websocket.IsCloseError(err, websocket.CloseUnsupportedData) {
			t.Errorf("upstream: got %v, want close 1003", err)
		}
	})
}
