package gateway

import (
	"bufio"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/intercept"
)

// TestHelperHungStdio is a stdio MCP server for
// TestAttackHungStdioHoldsWSSession, run as its child process; on its own
// it does nothing. It answers initialize, then hangs, reading nothing.
func TestHelperHungStdio(t *testing.T) {
	if os.Getenv("SLUICE_TEST_HUNG_STDIO") != "1" {
		return
	}
	br := bufio.NewReader(os.Stdin)
	br.ReadString('\n')
	os.Stdout.WriteString(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}` + "\n")
	select {}
}

// TestAttackHungStdioHoldsWSSession is TestAttackStalledWSUpstreamHoldsSession
// with a stdio child that hangs: the /ws relay's write to its stdin,
// with a context that ends only with the relay, waited for good once the
// pipe was full, so the client's leaving went unseen and the session was
// held until the gateway stopped. A write the child takes nothing of for
// write_stall_timeout now fails: the child is taken for broken and
// restarted, and the relay reads its client again.
func TestAttackHungStdioHoldsWSSession(t *testing.T) {
	ended := make(chan string, 8)
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", Command: os.Args[0], Args: []string{"-test.run=^TestHelperHungStdio$"}, Env: map[string]string{"SLUICE_TEST_HUNG_STDIO": "1"}}},
		WriteStallTimeout: 300 * time.Millisecond, OnSessionEnd: func(id string) { tell(t, ended, id) }},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	defer closeServed(t, gw, g)
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(gw.URL, "http")+"/ws/demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, b, err := ws.ReadMessage(); err != nil {
		t.Fatalf("initialize: %v %s", err, b)
	}
	big := strings.Repeat("x", 512<<10)
	for n := 1; n < 200; n++ {
		ws.SetWriteDeadline(time.Now().Add(3 * time.Second))
		if ws.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"_meta":{"x":"%s"}}}`, n, big)) != nil {
			break
		}
	}
	ws.Close()
	select {
	case <-ended:
	case <-time.After(8 * time.Second):
		t.Error("session still open 8s after its stdio upstream hung and its client left; want the stalled write given up after write_stall_timeout")
	}
}
