package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/intercept"
)

func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestAttackWSMessagesPastBodyBudget (found by an attacker review): the
// bytes of client messages the gateway holds at once are bounded by
// max_inflight_body_bytes for POST bodies (/mcp, /sse), each at most
// max_body_bytes, but a /ws message was read whole outside that budget:
// one client with many /ws connections (a tenth of max_sessions by
// default, 1,000), each sending a message just under max_body_bytes and
// never its last fragment, had the gateway hold all of them (4 GiB at the
// defaults) until the idle timeout. A /ws message is now read within the
// same budget, and a connection that cannot get room for its message
// within the wait a POST gets is closed.
func TestAttackWSMessagesPastBodyBudget(t *testing.T) {
	up := httptest.NewServer(answerRequests(func(w http.ResponseWriter, m *intercept.Message) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"u","version":"1"},"content":[{"type":"text","text":"ok"}]}}`)
	}))
	t.Cleanup(up.Close)
	const limit, budget = 1 << 20, 2 << 20
	url, _ := messageLimitGateway(t, Upstream{Name: "u", URL: up.URL + "/mcp"}, Options{MaxBodyBytes: limit, MaxInflightBodyBytes: budget})
	wsURL := "ws" + strings.TrimPrefix(strings.TrimSuffix(url, "/mcp/u"), "http") + "/ws/u"
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	base := heapAlloc()
	const conns = 24
	part := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"pad":"` + strings.Repeat("P", limit-100<<10)
	var open []*websocket.Conn
	for range conns {
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, wsURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, ws)
		w, err := ws.NextWriter(websocket.TextMessage)
		if err != nil {
			t.Fatal(err)
		}
		// Every fragment but the last: the message never ends.
		if _, err := w.Write([]byte(part)); err != nil {
			t.Logf("write: %v", err) // a connection the gateway closed
		}
	}
	defer func() {
		for _, ws := range open {
			ws.Close()
		}
	}()
	var grown uint64
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if h := heapAlloc(); h > base {
			grown = max(grown, h-base)
		}
	}
	t.Logf("heap grew %d KiB with %d unfinished /ws messages of %d KiB (budget %d KiB)", grown>>10, conns, len(part)>>10, budget>>10)
	if grown > budget+8<<20 {
		t.Errorf("the gateway held %d MiB of unfinished /ws messages; max_inflight_body_bytes is %d MiB", grown>>20, budget>>20)
	}
	for _, ws := range open {
		ws.Close()
	}
	open = nil

	// Once the gateway has seen them go, a client's calls are served (a
	// loaded machine may take a moment: until then, 1013).
	call := func() error {
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, wsURL, nil)
		if err != nil {
			return err
		}
		defer ws.Close()
		ws.SetReadDeadline(time.Now().Add(20 * time.Second))
		for _, msg := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"pad":"` + strings.Repeat("P", 600<<10) + `"}}}`,
		} {
			if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				return err
			}
		}
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return err
			}
			if strings.Contains(string(b), `"id":2`) {
				if !strings.Contains(string(b), `"ok"`) {
					t.Errorf("a call within the limits: %.300s", b)
				}
				return nil
			}
		}
	}
	for try := 0; ; try++ {
		err := call()
		if err == nil {
			break
		}
		if !websocket.IsCloseError(err, websocket.CloseTryAgainLater) || try == 10 {
			t.Fatalf("a call within the limits: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
