package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAttackAdminApprovalsShowSecrets: a held call's arguments carry
// secrets (a password, a PIN named in audit.secret_keys, a bearer token
// inside a string, an API key in _meta). The admin API's list and one
// request, and `sluice approvals list`, show them as the audit log
// keeps them: redacted, the rest of the call as sent. Before, the admin
// API gave every secret of every held call to whoever read the list.
func TestAttackAdminApprovalsShowSecrets(t *testing.T) {
	g := startServe(t, "policy: {default: allow, result_mode: tool_result, require_approval: [echo]}\nadmin_token: t0k\naudit: {secret_keys: [pin]}\n")
	hdr := session2025(t, g.url, "agent", `{}`)
	const secrets = "hunter2|4242|abcdef0123456789abcdef0123456789|sk-live-0123456789abcdefghij"
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"use Bearer abcdef0123456789abcdef0123456789","password":"hunter2","pin":"4242"},"_meta":{"api_key":"sk-live-0123456789abcdefghij"}}}`
	if status, _, body := rawPost(t, g.url, hdr, call); status != http.StatusOK || !strings.Contains(body, "approval") {
		t.Fatalf("the held call: %d %s", status, body)
	}
	get := func(url string) string {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer t0k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
		}
		return string(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	apr, listing := heldOn(t, ctx, g.admin)
	var cli bytes.Buffer
	cli.WriteString(listing)
	for name, shown := range map[string]string{
		"GET /admin/approvals":      get("http://" + g.admin + "/admin/approvals"),
		"GET /admin/approvals/{id}": get("http://" + g.admin + "/admin/approvals/" + apr),
		"sluice approvals list":     cli.String(),
	} {
		for _, s := range strings.Split(secrets, "|") {
			if strings.Contains(shown, s) {
				t.Errorf("%s shows the secret %q: %s", name, s, shown)
			}
		}
		if !strings.Contains(shown, "[REDACTED]") || !strings.Contains(shown, "use Bearer") {
			t.Errorf("%s: %s, want the call shown with its secrets redacted", name, shown)
		}
	}
}
