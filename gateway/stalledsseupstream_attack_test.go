package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/gateway/transport"
)

// TestAttackStalledSSEUpstreamHoldsSession is
// TestAttackStalledWSUpstreamHoldsSession with a legacy SSE upstream that
// never answers a POST: the write's context ends only with the relay, so
// the POST waited for good, the client's leaving went unseen and the
// session was held until the gateway stopped. A POST that makes no
// progress for write_stall_timeout now fails, and the session ends.
func TestAttackStalledSSEUpstreamHoldsSession(t *testing.T) {
	stopUp := make(chan struct{})
	msgs := make(chan []byte, 1)
	posts := 0 // the handler's, one POST at a time
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			transport.WriteSSEEvent(w, transport.SSEEvent{Event: "endpoint", Data: []byte("/message")})
			w.(http.Flusher).Flush()
			for {
				select {
				case m := <-msgs:
					transport.WriteSSEMessage(w, m)
					w.(http.Flusher).Flush()
				case <-stopUp:
					return
				case <-r.Context().Done():
					return
				}
			}
		}
		posts++
		if posts == 1 {
			io.ReadAll(r.Body)
			w.WriteHeader(202)
			msgs <- []byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
			return
		}
		select { // never answers
		case <-stopUp:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(stopUp)
	ws, ended := wsSessionOn(t, Upstream{Name: "demo", URL: up.URL + "/sse", Transport: TransportSSE})
	// The POST of this ping is never answered; the client leaves.
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	ws.Close()
	select {
	case <-ended:
	case <-time.After(8 * time.Second):
		t.Error("session still open 8s after its SSE upstream stalled a POST and its client left; want the POST given up after write_stall_timeout")
	}
}
