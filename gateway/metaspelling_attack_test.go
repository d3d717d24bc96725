package gateway

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackMetaSpellingsAgainstHeaders: a 2026-07-28 request's _meta is
// read once, by Decode (Message.MetaVersion); its protocol version is
// the one every reader finds, however it is spelt, and a header that
// disagrees with it is refused, as is a _meta spelt twice or in another
// case, before anything reaches the upstream.
func TestAttackMetaSpellingsAgainstHeaders(t *testing.T) {
	f := newFixture(t, allowEcho, Options{})
	call := modernCall(1, "echo", `{"message":"hi"}`)
	old := strings.Replace(call, `"2026-07-28"`, `"2025-11-25"`, 1)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion"`
	notify := func(v string) string {
		return `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `"}}}`
	}
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		body string
		code int
	}{
		{"escaped _meta", modernHeaders("tools/call", "echo"), strings.Replace(old, `"_meta"`, `"\u005fmeta"`, 1), intercept.CodeHeaderMismatch},
		{"escaped version name", modernHeaders("tools/call", "echo"), strings.Replace(old, `protocolVersion"`, `protocol\u0056ersion"`, 1), intercept.CodeHeaderMismatch},
		{"escaped version value", modernHeaders("tools/call", "echo"), strings.Replace(old, `"2025-11-25"`, `"2025\u002d11-25"`, 1), intercept.CodeHeaderMismatch},
		{"version twice", modernHeaders("tools/call", "echo"), strings.Replace(call, meta, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/protocolVersion"`, 1), intercept.CodeInvalidRequest},
		{"version twice, escaped", modernHeaders("tools/call", "echo"), strings.Replace(call, meta, `"_meta":{"io.modelcontextprotocol/protocol\u0056ersion":"2025-11-25","io.modelcontextprotocol/protocolVersion"`, 1), intercept.CodeInvalidRequest},
		{"_meta twice", modernHeaders("tools/call", "echo"), strings.Replace(call, `"_meta":`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"},"_meta":`, 1), intercept.CodeInvalidRequest},
		{"_meta twice, escaped", modernHeaders("tools/call", "echo"), strings.Replace(call, `"_meta":`, `"\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"},"_meta":`, 1), intercept.CodeInvalidRequest},
		{"_Meta beside _meta", modernHeaders("tools/call", "echo"), strings.Replace(call, `"_meta":`, `"_Meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"},"_meta":`, 1), intercept.CodeInvalidParams},
		{"notification disagrees in a batch", map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, `[` + call + `,` + notify("2025-11-25") + `]`, intercept.CodeHeaderMismatch},
		{"notification disagrees with the header", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "notifications/progress"}, notify("2025-11-25"), intercept.CodeHeaderMismatch},
		{"requests disagree in a batch", map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, `[` + call + `,` + strings.Replace(old, `"id":1`, `"id":2`, 1) + `]`, intercept.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.rec.n.Load()
			status, _, body := post(t, f.gw.URL+"/mcp/demo", tc.hdr, tc.body)
			if status != 400 {
				t.Errorf("status %d, want 400 (%s)", status, body)
			}
			if got := errorCode(t, body); got != tc.code {
				t.Errorf("code %d, want %d (%s)", got, tc.code, body)
			}
			if got := f.rec.n.Load(); got != before {
				t.Error("refused request reached the upstream")
			}
		})
	}
}
