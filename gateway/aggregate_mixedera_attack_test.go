package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// TestAttackVirtualSessionMixedEra (attacker review): a virtual server
// took a request carrying an Mcp-Session-Id as its 2025-era session's
// whatever else it said, and checked nothing a route checks (classify):
// a request declaring 2026-07-28 in its _meta and header on a session
// that negotiated 2025-11-25, or whose Mcp-Method and Mcp-Name headers
// said tools/list (or another tool) while its body called a tool, was
// served as a plain session call; so was, on a route too, one whose
// Mcp-Protocol-Version header alone said 2026-07-28, though the session
// then checks none of that era's headers. A filter in front that trusts those
// headers, as SEP-2243 lets it since the server refuses any that disagree
// with the body, saw a list where a tool was called. A virtual session's
// requests are checked as a route's session's are.
func TestAttackVirtualSessionMixedEra(t *testing.T) {
	f := newAggFixture(t, VirtualServer{Upstreams: []string{"demo"}})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mixer","version":"1"}}}`
	meta26 := `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"mixer","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for _, path := range []string{"/mcp/demo", "/mcp"} {
		status, hdr, body := post(t, f.url+path, nil, init)
		sid := hdr.Get("Mcp-Session-Id")
		if status != http.StatusOK || sid == "" {
			t.Fatalf("%s initialize: %d %s", path, status, body)
		}
		post(t, f.url+path, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		call := func(id int, hdr map[string]string, meta string) (int, string) {
			t.Helper()
			h := map[string]string{"Mcp-Session-Id": sid}
			for k, v := range hdr {
				h[k] = v
			}
			status, _, body := post(t, f.url+path, h, `{"jsonrpc":"2.0","id":`+itoa(id)+`,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}`+meta+`}}`)
			return status, body
		}
		if status, body := call(2, map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, ""); status != http.StatusOK || !strings.Contains(body, "hi") {
			t.Fatalf("%s: a plain call on the session: %d %s", path, status, body)
		}
		for i, c := range []struct {
			hdr  map[string]string
			meta string
			want string
		}{
			{map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}, meta26, "protocol version"},
			{map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, meta26, "protocol version"},
			{map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}, "", "header mismatch"},
			{map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": "add"}, "", "header mismatch"},
			{map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}`, "header mismatch"},
			// The header alone says 2026-07-28, whose Mcp-Param-* and
			// Mcp-Name rules a filter in front applies; the session,
			// 2025-11-25, checks neither.
			{map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}, "", "header mismatch"},
		} {
			status, body := call(10+i, c.hdr, c.meta)
			if status != http.StatusBadRequest || !strings.Contains(body, c.want) {
				t.Errorf("%s: a tools/call on a 2025-11-25 session with %v and _meta %q: %d %.200s, want 400 and %q", path, c.hdr, c.meta, status, body, c.want)
			}
		}
	}
}
