package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackSessionRetainsInitializeBody: a session kept its client's
// capabilities as a slice of the initialize request's body, and its
// upstream session id as a slice of the upstream's response head, so each
// session held the whole of both: a client padding its initialize (in
// _meta, or in its capabilities' experimental member) to max_body_bytes
// made every session it opened hold that much, a tenth of max_sessions of
// them per client address. Now a session keeps copies, its capabilities
// cut to what names its capability set when long (as a session adopted
// by another replica has them).
func TestAttackSessionRetainsInitializeBody(t *testing.T) {
	// An upstream that keeps nothing of what it is sent.
	var n atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Mcp-Session-Id", fmt.Sprintf("upstream-session-%d", n.Add(1)))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"up","version":"1"}}}`)
	}))
	t.Cleanup(up.Close)
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, VirtualServers: []VirtualServer{{}}}, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	pad := strings.Repeat("x", 256<<10)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	open := func(body string) {
		status, hdr, resp := post(t, gw.URL+"/mcp/demo", map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, body)
		if status != 200 || hdr.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize: %d %.200s", status, resp)
		}
	}
	before := heap()
	const sessions = 20
	for i := range sessions {
		switch i % 2 {
		case 0:
			open(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"},"_meta":{"pad":"` + pad + `"}}}`)
		default:
			open(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"experimental":{"pad":"` + pad + `"}},"clientInfo":{"name":"raw","version":"1"}}}`)
		}
	}
	// The virtual server's sessions, whose initialize params are
	// replayed to each upstream it opens a session on.
	for range sessions / 2 {
		status, hdr, resp := post(t, gw.URL+"/mcp", map[string]string{"Mcp-Protocol-Version": "2025-11-25"},
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"},"_meta":{"pad":"`+pad+`"}}}`)
		if status != 200 || hdr.Get("Mcp-Session-Id") == "" {
			t.Fatalf("virtual initialize: %d %.200s", status, resp)
		}
	}
	// /ws connections (a connection is a session), kept open.
	for range sessions / 2 {
		ws, _, err := websocket.DefaultDialer.DialContext(t.Context(), "ws"+strings.TrimPrefix(gw.URL, "http")+"/ws/demo", http.Header{"Sec-WebSocket-Protocol": {"mcp"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"experimental":{"pad":"`+pad+`"}},"clientInfo":{"name":"raw","version":"1"}}}`))
		ws.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, b, err := ws.ReadMessage(); err != nil || !strings.Contains(string(b), `"result"`) {
			t.Fatalf("/ws initialize: %v %.200s", err, b)
		}
	}
	if grew := int64(heap()) - int64(before); grew > sessions*32<<10 {
		t.Errorf("%d sessions and /ws connections opened with 256 KiB initialize requests grew the heap by %d KiB, want under %d KiB: they hold their requests", 2*sessions, grew>>10, sessions*32)
	}
}
