package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/audit"
)

// TestRateLimitEveryRoute: one agent's per-principal bucket is the same
// bucket whichever way it calls: the upstream's route or the virtual
// server, either era, a session, /sse or /ws. The call over the limit is a
// soft rate_limited deny with a retry hint, and an event.
func TestRateLimitEveryRoute(t *testing.T) {
	g := startServe(t, `virtual_servers: [{}]
policy: {default: allow, result_mode: tool_result}
rate_limits:
  rules: [{id: per-agent, by: [principal], tool: echo, rate: 6/h}]
`)
	base := strings.TrimSuffix(g.url, "/mcp/demo")
	const agent = "mallory"
	echo := `{"name":"echo","arguments":{"message":"hi"}}`
	session2025 := func(url string) string {
		_, h, _ := postWithHeaders(t, url, nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"`+agent+`","version":"1"}}}`)
		sid := h.Get("Mcp-Session-Id")
		postWithHeaders(t, url, map[string]string{"Mcp-Session-Id": sid}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		_, _, b := postWithHeaders(t, url, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":`+echo+`}`)
		return b
	}
	ws := func(path string) string {
		c, _, err := (&websocket.Dialer{Subprotocols: []string{"mcp"}}).Dial("ws"+strings.TrimPrefix(base, "http")+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for i, msg := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` + agent + `","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + echo + `}`,
		} {
			c.WriteMessage(websocket.TextMessage, []byte(msg))
			if i == 1 {
				continue
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				_, b, err := c.ReadMessage()
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				if strings.Contains(string(b), fmt.Sprintf(`"id":%d`, min(i+1, 2))) {
					if i == 2 {
						return string(b)
					}
					break
				}
			}
		}
		return ""
	}
	ways := []struct {
		name string
		call func() string
	}{
		{"/mcp/demo 2026", func() string { return modernCallAs(t, base+"/mcp/demo", agent, "tools/call", "echo", echo) }},
		{"/mcp 2026", func() string { return modernCallAs(t, base+"/mcp", agent, "tools/call", "echo", echo) }},
		{"/mcp/demo 2025 session", func() string { return session2025(base + "/mcp/demo") }},
		{"/mcp 2025 session", func() string { return session2025(base + "/mcp") }},
		{"/ws/demo", func() string { return ws("/ws/demo") }},
		{"/ws", func() string { return ws("/ws") }},
	}
	for _, w := range ways {
		if got := w.call(); !strings.Contains(got, "Echo: hi") {
			t.Fatalf("%s, within the limit: %s", w.name, got)
		}
	}
	for _, w := range ways {
		got := w.call()
		if !strings.Contains(got, `"code":"rate_limited"`) || !strings.Contains(got, `"retry_after_ms"`) || !strings.Contains(got, `"isError":true`) {
			t.Errorf("%s, over the limit: %s; want a soft rate_limited deny with retry_after_ms", w.name, got)
		}
	}
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runEvents(context.Background(), []string{"export", "--db", filepath.Join(g.dir, audit.FileName)}, &out); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), `rate_limited`); n < len(ways) {
		t.Errorf("%d events mention rate_limited, want at least %d", n, len(ways))
	}
}
