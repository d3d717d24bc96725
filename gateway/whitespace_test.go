package gateway

import (
	"strings"
	"testing"
)

// TestStdioBodyWhitespace: JSON allows whitespace around a value, and
// clients end bodies with a newline (curl -d @file, many encoders). A
// request body with leading or trailing whitespace sent on /mcp to a stdio
// upstream reaches it (compacted onto one line), in a 2025-era session and
// in a 2026-07-28 stateless request alike.
func TestStdioBodyWhitespace(t *testing.T) {
	f := newFixture(t, allowEcho, Options{Upstreams: []Upstream{{Name: "stdio", Command: buildDemoServer(t), Args: []string{"-transport", "stdio"}}}})
	url := f.gw.URL + "/mcp/stdio"
	for _, ws := range []struct{ name, before, after string }{
		{"trailing newline", "", "\n"},
		{"trailing CRLF", "", "\r\n"},
		{"around", " \t\n", "\n \t\r\n"},
	} {
		t.Run(ws.name+"/2026-07-28", func(t *testing.T) {
			status, _, body := post(t, url, modernHeaders("tools/call", "echo"), ws.before+modernCall(1, "echo", `{"message":"ws"}`)+ws.after)
			if status != 200 || !strings.Contains(body, "Echo: ws") {
				t.Errorf("got %d %s, want the echo", status, body)
			}
		})
		t.Run(ws.name+"/session", func(t *testing.T) {
			status, h, body := post(t, url, map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, ws.before+
				`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+ws.after)
			if status != 200 || h.Get("Mcp-Session-Id") == "" {
				t.Fatalf("initialize: got %d %s, want a session", status, body)
			}
			hdr := map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
			if status, _, body := post(t, url, hdr, ws.before+`{"jsonrpc":"2.0","method":"notifications/initialized"}`+ws.after); status != 202 {
				t.Errorf("initialized: got %d %s, want 202", status, body)
			}
			call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"ws"}}}`
			status, _, body = post(t, url, hdr, ws.before+call+ws.after)
			if status != 200 || !strings.Contains(body, "Echo: ws") {
				t.Errorf("call: got %d %s, want the echo", status, body)
			}
		})
	}
}
