package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestAttackOneAgentTakesEveryChild (found by an attacker review): a stdio
// route runs a child per 2025-era session, /ws and /sse connection, at
// most max_children (16) of them, and sessions are bounded per agent (a
// tenth of max_sessions, 1,000) so that one agent cannot lock the others
// out. The children had no such share: one agent opening max_children
// sessions (or /ws connections), kept alive for the idle timeout, left
// every other agent 503 on that route. An agent now holds at most half of
// a route's children; the others stay for the other agents.
func TestAttackOneAgentTakesEveryChild(t *testing.T) {
	script, _ := countingStdio(t)
	f := newFixture(t, allowEcho, Options{AgentHeader: "X-Agent", Upstreams: []Upstream{{Name: "stdio", Command: script, MaxChildren: 4}}})
	url := f.gw.URL + "/mcp/stdio"
	wsURL := "ws" + strings.TrimPrefix(f.gw.URL, "http") + "/ws/stdio"
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	initAs := func(agent string) (int, string) {
		t.Helper()
		status, _, body := post(t, url, map[string]string{"X-Agent": agent, "Mcp-Protocol-Version": "2025-11-25"}, init)
		return status, body
	}
	t.Run("sessions", func(t *testing.T) {
		got := 0
		for range 4 {
			if status, _ := initAs("mallory"); status == http.StatusOK {
				got++
			}
		}
		t.Logf("mallory holds %d of 4 children", got)
		if status, body := initAs("alice"); status != http.StatusOK {
			t.Errorf("another agent's session, after one agent opened 4: got %d %.200s, want 200", status, body)
		}
	})
	t.Run("websocket", func(t *testing.T) {
		f := newFixture(t, allowEcho, Options{AgentHeader: "X-Agent", Upstreams: []Upstream{{Name: "stdio", Command: script, MaxChildren: 4}}})
		wsURL = "ws" + strings.TrimPrefix(f.gw.URL, "http") + "/ws/stdio"
		for range 4 {
			ws, _, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"X-Agent": {"mallory"}, "Sec-Websocket-Protocol": {"mcp"}})
			if err != nil {
				continue
			}
			defer ws.Close()
		}
		ws, resp, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"X-Agent": {"alice"}, "Sec-Websocket-Protocol": {"mcp"}})
		if err != nil {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			t.Fatalf("another agent's /ws connection, after one agent opened 4: %v (HTTP %d)", err, status)
		}
		defer ws.Close()
		ws.WriteMessage(websocket.TextMessage, []byte(init))
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, b, err := ws.ReadMessage(); err != nil || !strings.Contains(string(b), `"result"`) {
			t.Errorf("alice's initialize: %v %.200s", err, b)
		}
	})
}
