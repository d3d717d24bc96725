package gateway

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gateway/transport"
)

// The spelling of a plain message. Its id and progress token are the
// gateway's on a closed upstream (ids.go), but the rest went on as the
// client spelt it: each character of a string escaped (\u0069) or not,
// in upper- or lower-case hex, and its members in any order, a few bits a
// character, chosen by the client, in messages every client may send.

// spelledMessages are plain messages spelt to carry bits: escapes in the
// method, the members out of order.
var spelledMessages = []string{
	`{"jsonrpc":"2.0","id":"s1","method":"p\u0069ng"}`,
	`{"method":"tools/list","jsonrpc":"2.0","id":"s2"}`,
	`{"jsonrpc":"2.0","method":"notifications/\u0069nitialized"}`,
}

// spelt reports which of got, messages an upstream received, keep a
// spelling of the client's: an escape or the members out of order.
func spelt(got []string) []string {
	var out []string
	for _, g := range got {
		if strings.Contains(g, `\u00`) || strings.Contains(g, `{"method":"tools/list"`) {
			out = append(out, g)
		}
	}
	return out
}

// TestAttackSpellingPastRouteRule: after the sensitive read, plain
// messages spelt by the client reached the closed upstream as spelt, on
// a 2025 session to an HTTP upstream, on a bridged session and over /ws.
func TestAttackSpellingPastRouteRule(t *testing.T) {
	t.Run("session", func(t *testing.T) {
		gw, web := carryGateway(t)
		readSecret(t, gw.URL)
		sid := initialize(t, gw.URL+"/mcp/web")
		hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		web.mu.Lock()
		web.posts = nil
		web.mu.Unlock()
		for _, m := range spelledMessages {
			post(t, gw.URL+"/mcp/web", hdr, m)
		}
		web.mu.Lock()
		var got []string
		for _, p := range web.posts {
			got = append(got, string(p))
		}
		web.mu.Unlock()
		if len(got) != len(spelledMessages) {
			t.Fatalf("the upstream got %q, want %d messages", got, len(spelledMessages))
		}
		if s := spelt(got); len(s) > 0 {
			t.Errorf("the client's spelling reached the closed upstream: %q", s)
		}
	})
	t.Run("bridged", func(t *testing.T) {
		gw, web := bridgedGateway(t)
		readSecret(t, gw.URL)
		sid := initialize(t, gw.URL+"/mcp/web")
		hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		for _, m := range spelledMessages {
			post(t, gw.URL+"/mcp/web", hdr, m)
		}
		post(t, gw.URL+"/mcp/web", hdr, `{"jsonrpc":"2.0","id":"probe","method":"ping"}`)
		web.mu.Lock()
		got := append([]string(nil), web.got...)
		web.mu.Unlock()
		if s := spelt(got); len(s) > 0 {
			t.Errorf("the client's spelling reached the closed bridged upstream: %q", s)
		}
	})
	// (A 2026-07-28 notification names no agent without auth: it is
	// screened as no one's, README's Identity.)
	t.Run("stateless bridged", func(t *testing.T) {
		gw, web := bridgedGateway(t)
		readSecret(t, gw.URL)
		const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		for _, m := range []struct{ method, msg string }{
			{"ping", `{"jsonrpc":"2.0","id":"s1","method":"p\u0069ng","params":{` + meta + `}}`},
			{"tools/list", `{"method":"tools/list","jsonrpc":"2.0","id":"s2","params":{` + meta + `}}`},
		} {
			post(t, gw.URL+"/mcp/web", modernHeaders(m.method, ""), m.msg)
		}
		post(t, gw.URL+"/mcp/web", modernHeaders("ping", ""), `{"jsonrpc":"2.0","id":"probe","method":"ping","params":{`+meta+`}}`)
		web.mu.Lock()
		got := append([]string(nil), web.got...)
		web.mu.Unlock()
		if s := spelt(got); len(s) > 0 {
			t.Errorf("the client's spelling reached the closed bridged upstream as 2026-07-28 requests: %q", s)
		}
	})
	t.Run("ws", func(t *testing.T) {
		gw, web := carryGateway(t)
		readSecret(t, gw.URL)
		send := relayedSender(t, dialWith(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw.URL, "http") + "/ws/web"}))
		send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		for _, m := range spelledMessages {
			send(m)
		}
		web.mu.Lock()
		var got []string
		for _, p := range web.posts {
			got = append(got, string(p))
		}
		web.mu.Unlock()
		if s := spelt(got); len(s) > 0 {
			t.Errorf("the client's spelling reached the closed upstream over /ws: %q", s)
		}
	})
}
