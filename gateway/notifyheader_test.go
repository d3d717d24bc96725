package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestModernNotificationWithoutMethodHeader: the MCP TypeScript SDK v2
// client (@modelcontextprotocol/client 2.4.0) sends a 2026-07-28
// notification, notifications/cancelled when it closes a subscription,
// without the Mcp-Method header; its server takes it (202), as it takes
// any notification whose header is absent, and checks only one that is
// present. The gateway refused it 400 (-32020), so the client reported
// an error through Sluice that it does not report directly (found by
// trial85). A notification without the header is now taken as that
// server takes it; one whose header disagrees with its body is still
// refused, as is a request without the header.
func TestModernNotificationWithoutMethodHeader(t *testing.T) {
	up := &scriptUpstream{handle: func([]byte) [][]byte { return nil }}
	_, base := startScriptedGateway(t, up, Options{})
	checkHeaderlessNotification(t, base+"/mcp/u", `"listen:0"`, http.StatusOK)
}

// TestVirtualModernNotificationWithoutMethodHeader: the same client
// through a virtual server. The route takes a 2026-07-28 notification
// without Mcp-Method (TestModernNotificationWithoutMethodHeader); the
// virtual server still refused it 400 -32020, so the MCP TypeScript SDK
// v2 client closing a subscription or cancelling a call through a
// virtual server reported an error it does not report directly or
// through a route (found by review91).
func TestVirtualModernNotificationWithoutMethodHeader(t *testing.T) {
	f := newFixture(t, allowEcho, Options{VirtualServers: []VirtualServer{{}}})
	checkHeaderlessNotification(t, f.gw.URL+"/mcp", "7", http.StatusBadRequest)
}

// checkHeaderlessNotification posts to url a 2026-07-28 cancellation of
// requestID without Mcp-Method, with its own and with another, and calls
// without it (a request, one of id null, a batch: refused, the batch
// with batchStatus): the notification is taken unless its header
// disagrees, every call without the header refused.
func checkHeaderlessNotification(t *testing.T, url, requestID string, batchStatus int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a failure bound, not a speed goal
	defer cancel()
	note := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + requestID + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
	}{
		{"notification without Mcp-Method", map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, note, http.StatusAccepted},
		{"notification with its Mcp-Method", modernHeaders("notifications/cancelled", ""), note, http.StatusAccepted},
		{"notification with another Mcp-Method", modernHeaders("tools/call", ""), note, http.StatusBadRequest},
		{"request without Mcp-Method", map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, modernRequest("tools/list", ""), http.StatusBadRequest},
		// A call is no notification for an id of null, nor in a batch.
		{"call of id null without Mcp-Method", map[string]string{"Mcp-Protocol-Version": "2026-07-28"},
			strings.Replace(modernCall(1, "echo", `{"text":"x"}`), `"id":1`, `"id":null`, 1), http.StatusBadRequest},
		{"batch of a call without Mcp-Method", map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, "[" + modernCall(1, "echo", `{"text":"x"}`) + "]", batchStatus},
	} {
		resp, err := sendPost(ctx, url, tc.hdr, tc.body)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d (%s), want %d", tc.name, resp.StatusCode, strings.TrimSpace(string(b)), tc.status)
		}
		if tc.status != http.StatusAccepted && !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s: %s, want it refused", tc.name, b)
		}
	}
}
