package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gateway/transport"
)

var approvalID = regexp.MustCompile(`apr_[0-9a-f]+`)

const holdAdd = "policy: {default: allow, result_mode: tool_result, require_approval: [add]}\n"

// rawPost posts body to url with headers and returns status, content type
// and body.
func rawPost(t *testing.T, url string, hdr map[string]string, body string) (int, string, string) {
	t.Helper()
	status, h, b := postWithHeaders(t, url, hdr, body)
	return status, h.Get("Content-Type"), b
}

// postWithHeaders is rawPost returning the answer's headers.
func postWithHeaders(t *testing.T, url string, hdr map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	// A stream that never ends (an elicitation nobody answers) must not
	// hang the test.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := openPost(ctx, url, hdr, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// selfApprove is the add call again with the answer to an approval
// question nobody asked: the agent approving itself.
func selfApprove(id int, approval, meta string) string {
	return `{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},` +
		`"inputResponses":{"sluice-approval":{"action":"accept","content":{"approve":true}}},"requestState":"` + approval + `"` + meta + `}}`
}

const modernMeta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"agent-1","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

var modernHdr = map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "add"}

// TestNoSelfApprovalByDefault: with the default config only an operator
// approves a held call. The agent answering the gateway's question itself
// — over 2026-07-28 stateless /mcp, in a 2025 session over /ws, or through
// the elicitation form of a 2025 session over HTTP — releases nothing.
func TestNoSelfApprovalByDefault(t *testing.T) {
	g := startServe(t, holdAdd)
	t.Run("2026 stateless", func(t *testing.T) {
		_, _, held := rawPost(t, g.url, modernHdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}`+modernMeta+`}}`)
		id := approvalID.FindString(held)
		if id == "" || strings.Contains(held, "input_required") {
			t.Fatalf("held: got %s, want approval_required with an id and no question to the client", held)
		}
		_, _, got := rawPost(t, g.url, modernHdr, selfApprove(2, id, modernMeta))
		if strings.Contains(got, `"text":"5"`) || !strings.Contains(got, `"error"`) {
			t.Errorf("self-approval: got %s, want it refused with an error", got)
		}
	})
	t.Run("websocket 2025 session", func(t *testing.T) {
		c, err := (&transport.WSDialer{URL: "ws" + strings.TrimPrefix(strings.Replace(g.url, "/mcp/", "/ws/", 1), "http")}).Dial(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rpc := func(msg, id string) string {
			t.Helper()
			if err := c.Write(t.Context(), []byte(msg)); err != nil {
				t.Fatal(err)
			}
			for {
				b, err := c.Read(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(b, []byte(`"id":`+id)) {
					return string(b)
				}
			}
		}
		rpc(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ws-agent","version":"1"}}}`, "0")
		_ = c.Write(t.Context(), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		held := rpc(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`, "1")
		id := approvalID.FindString(held)
		if id == "" {
			t.Fatalf("held: got %s, want approval_required with an id", held)
		}
		if got := rpc(selfApprove(2, id, ""), "2"); strings.Contains(got, `"text":"5"`) || !strings.Contains(got, `"error"`) {
			t.Errorf("self-approval: got %s, want it refused with an error", got)
		}
	})
	t.Run("elicitation in a 2025 session", func(t *testing.T) {
		status, _, _ := rawPost(t, g.url, map[string]string{"Mcp-Protocol-Version": "2025-11-25"},
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
		if status != 200 {
			t.Fatalf("initialize: %d", status)
		}
		req, _ := http.NewRequest(http.MethodPost, g.url, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		hdr := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
		rawPost(t, g.url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		_, ctype, body := rawPost(t, g.url, hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`)
		if !strings.HasPrefix(ctype, "application/json") || strings.Contains(body, "elicitation/create") || !strings.Contains(body, "approval_required") {
			t.Errorf("held call: got %s %s, want approval_required and no question to the client", ctype, body)
		}
	})
}

// TestClientMayAnswerOptIn: approvals.client_may_answer lets a 2026-07-28
// client that can elicit answer the question, through serve.
func TestClientMayAnswerOptIn(t *testing.T) {
	g := startServe(t, holdAdd+"approvals: {client_may_answer: true, timeout: 1m}\n")
	_, _, held := rawPost(t, g.url, modernHdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}`+modernMeta+`}}`)
	state := regexp.MustCompile(`"requestState":"([^"]+)"`).FindStringSubmatch(held)
	if state == nil || !strings.Contains(held, "input_required") {
		t.Fatalf("held: got %s, want an input_required result", held)
	}
	if _, _, got := rawPost(t, g.url, modernHdr, selfApprove(2, state[1], modernMeta)); !strings.Contains(got, `"text":"5"`) {
		t.Errorf("answered: got %s, want the add result", got)
	}
}

// adminDo sends a request to the admin API and returns its status.
func adminDo(t *testing.T, method, url, ctype, body string, hdr map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAdminListenerGuards: an admin listener configured without a token
// gets a random one, stored in the data directory (0600) for the CLI; a
// rebound Host, a foreign Origin and a body a cross-origin page can send
// without a preflight (text/plain) are refused, so a web page the
// operator visits cannot approve a held call or a drifted tool.
func TestAdminListenerGuards(t *testing.T) {
	g := startServe(t, holdAdd)
	base := "http://" + g.admin
	_, _, held := rawPost(t, g.url, modernHdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}`+modernMeta+`}}`)
	id := approvalID.FindString(held)
	if id == "" {
		t.Fatalf("held: got %s", held)
	}
	approve := base + "/admin/approvals/" + id
	// The browser attack first, while the request is pending.
	if got := adminDo(t, "POST", approve, "text/plain", `{"action":"approve"}`, map[string]string{"Origin": "http://evil.example"}); got < 400 {
		t.Errorf("cross-origin text/plain approve: got %d, want it refused", got)
	}
	if got := adminDo(t, "POST", approve, "text/plain", `{"action":"approve"}`, map[string]string{"Host": "evil.example"}); got < 400 {
		t.Errorf("DNS-rebound text/plain approve: got %d, want it refused", got)
	}
	if got := adminDo(t, "GET", base+"/admin/approvals", "", "", nil); got != http.StatusUnauthorized {
		t.Errorf("no token: got %d, want 401", got)
	}
	path := filepath.Join(g.dir, "admin.token")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file %s: %v (mode %v), want it with mode 0600", path, err, fi)
	}
	tok, _ := os.ReadFile(path)
	auth := map[string]string{"Authorization": "Bearer " + strings.TrimSpace(string(tok))}
	with := func(k, v string) map[string]string {
		h := map[string]string{k: v}
		for a, b := range auth {
			h[a] = b
		}
		return h
	}
	for _, tc := range []struct {
		name, method, url, ctype, body string
		hdr                            map[string]string
		want                           int
	}{
		{"rebound host", "GET", base + "/admin/approvals", "", "", with("Host", "evil.example:8081"), http.StatusForbidden},
		{"foreign origin", "GET", base + "/admin/approvals", "", "", with("Origin", "http://evil.example"), http.StatusForbidden},
		{"text/plain approval", "POST", approve, "text/plain", `{"action":"approve"}`, auth, http.StatusUnsupportedMediaType},
		{"text/plain inventory approve", "POST", base + "/admin/inventory/demo/approve", "text/plain", `{"tool":"*"}`, auth, http.StatusUnsupportedMediaType},
		{"form inventory pin", "POST", base + "/admin/inventory/demo/pin", "application/x-www-form-urlencoded", ``, auth, http.StatusUnsupportedMediaType},
		{"list", "GET", base + "/admin/approvals", "", "", auth, http.StatusOK},
		{"loopback origin", "GET", base + "/admin/approvals", "", "", with("Origin", "http://127.0.0.1:9999"), http.StatusOK},
	} {
		if got := adminDo(t, tc.method, tc.url, tc.ctype, tc.body, tc.hdr); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
	// Nothing above approved the call.
	if got := modernCall(t, g.url, "tools/call", "add", `{"name":"add","arguments":{"a":2,"b":3}}`); !strings.Contains(got, "approval_required") {
		t.Errorf("after the refused requests: got %s, want the call still held", got)
	}

	// The CLI finds the address and the token through the gateway's config.
	var out bytes.Buffer
	if err := runApprovals(context.Background(), []string{"approve", id, "--config", g.config}, &out); err != nil {
		t.Fatalf("approvals approve --config: %v", err)
	}
	t.Setenv("SLUICE_ADMIN_TOKEN", strings.TrimSpace(string(tok)))
	if err := runApprovals(context.Background(), []string{"list", "--admin", base}, &out); err != nil || !strings.Contains(out.String(), id) {
		t.Fatalf("approvals list with $SLUICE_ADMIN_TOKEN: %v\n%s", err, &out)
	}
}

// TestApprovalsConfig: approvals.timeout, and approval_timeout, its old
// name, still accepted; contradictions and negative values are load
// errors naming the key.
func TestApprovalsConfig(t *testing.T) {
	for _, tc := range []struct {
		yaml    string
		want    time.Duration
		wantErr string
	}{
		{"approval_timeout: 2m\n", 2 * time.Minute, ""},
		{"approvals: {timeout: 3m}\n", 3 * time.Minute, ""},
		{"approvals: {timeout: 3m}\napproval_timeout: 3m\n", 3 * time.Minute, ""},
		{"approvals: {timeout: 3m}\napproval_timeout: 2m\n", 0, "approvals.timeout"},
		{"approvals: {timeout: -1m}\n", 0, "approvals.timeout"},
	} {
		cfg, err := parseConfig("test", []byte(tc.yaml))
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: got %v, want an error naming %s", tc.yaml, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || cfg.Approvals.Timeout != tc.want):
			t.Errorf("%q: got %v, %v; want timeout %v", tc.yaml, cfg, err, tc.want)
		}
	}
}

// TestAdminTokenKept: the generated token survives a restart, so the CLI
// and scripts keep working.
func TestAdminTokenKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), adminTokenFile)
	first, err := loadOrCreateToken(path, slog.New(slog.DiscardHandler))
	if err != nil || len(first) < 40 {
		t.Fatalf("first start: got %q, %v; want a random token", first, err)
	}
	if again, err := loadOrCreateToken(path, slog.New(slog.DiscardHandler)); err != nil || again != first {
		t.Errorf("second start: got %q, %v; want the same token %q", again, err, first)
	}
}

// TestAdminTokenFileEmpty: an admin token file that holds nothing (made
// by hand, or truncated) made serve recurse without end: read as no
// token, a new one generated, linking it in place failed because the
// file exists, read again as no token, and so on, a temporary file left
// in data_dir at each turn, until the stack overflowed and the process
// died. Now it is an error naming the file and what to do.
func TestAdminTokenFileEmpty(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(8 << 20)) // without the fix: a quick overflow, not 1 GB of it
	dir := t.TempDir()
	path := filepath.Join(dir, adminTokenFile)
	if err := os.WriteFile(path, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := loadOrCreateToken(path, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty token file: got %q, %v; want an error naming the file as empty", tok, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("data_dir holds %d entries, want only the token file", len(ents))
	}
}
