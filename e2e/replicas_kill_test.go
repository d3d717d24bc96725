package e2e

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

// startDemoHTTP runs the demo server over Streamable HTTP and returns its URL.
func startDemoHTTP(t *testing.T, bin string) string {
	t.Helper()
	return startAnnounced(t, "demo-server listening on ", filepath.Join(bin, "demo-server"), "-transport", "http", "-addr", "127.0.0.1:0")
}

// rpc posts a 2025-era JSON-RPC message in session sid (empty: none) and
// returns the response's headers and body.
func rpc(t *testing.T, url, sid, body string) (http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Header, string(b)
}

// TestReplicaKilledMidSession: two `sluice serve` processes share a
// session key and keep approvals in a real redis-server. A session opened
// on A is served by B; a call held on A is approved through B's admin API
// and completes on A; A is killed with SIGKILL and the session goes on
// through B; with Redis down a call that needs it is refused, not hung,
// and once Redis is back the gateway serves it without a restart.
func TestReplicaKilledMidSession(t *testing.T) {
	redis := redistest.Start(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/sluice", "./examples/demo-server")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	up := startDemoHTTP(t, bin)
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	config := func(name string) string {
		return fmt.Sprintf(`listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
admin_token: t0k
data_dir: %s
session_keys: [%q]
approvals: {redis_url: %q, timeout: 1m}
policy: {default: allow, result_mode: tool_result, require_approval: [add]}
upstreams: [{name: demo, url: %q}]
`, filepath.Join(t.TempDir(), name), key, redis.URL(), up)
	}
	gwA, adminA, procA := startServeProc(t, bin, config("a"))
	gwB, adminB, _ := startServeProc(t, bin, config("b"))
	_ = adminA

	hdr, body := rpc(t, gwA+"/mcp/demo", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent-r","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize on A: %s", body)
	}
	rpc(t, gwA+"/mcp/demo", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	echo := func(gw string, id int, msg string) string {
		_, b := rpc(t, gw+"/mcp/demo", sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":%q}}}`, id, msg))
		return b
	}
	if b := echo(gwB, 2, "on B"); !strings.Contains(b, "on B") {
		t.Fatalf("A's session through B: %s", b)
	}

	// Held on A, approved through B, retried on A.
	add := func(gw string, id, a, b int) string {
		_, out := rpc(t, gw+"/mcp/demo", sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"add","arguments":{"a":%d,"b":%d}}}`, id, a, b))
		return out
	}
	approveOn := func(admin, heldBody string) {
		t.Helper()
		id := regexp.MustCompile(`apr_[0-9a-f]+`).FindString(heldBody)
		if id == "" || !strings.Contains(heldBody, "approval_required") {
			t.Fatalf("not held: %s", heldBody)
		}
		req, _ := http.NewRequest(http.MethodPost, admin+"/admin/approvals/"+id, strings.NewReader(`{"action":"approve","by":"ops"}`))
		req.Header.Set("Authorization", "Bearer t0k")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("approve %s: %d %s", id, resp.StatusCode, b)
		}
	}
	approveOn(adminB, add(gwA, 3, 2, 3))
	if b := add(gwA, 4, 2, 3); !strings.Contains(b, `"text":"5"`) {
		t.Fatalf("the retry on A after approval on B: %s", b)
	}

	// A dies; the session goes on through B.
	if err := procA.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = procA.Wait()
	if b := echo(gwB, 4, "after A died"); !strings.Contains(b, "after A died") {
		t.Fatalf("the session through B after A was killed: %s", b)
	}

	// Redis down: a call that must be held is refused at once, not hung;
	// a call that needs no Redis goes on.
	redis.Stop()
	began := time.Now()
	if b := add(gwB, 5, 1, 1); strings.Contains(b, `"text":"2"`) || time.Since(began) > 20*time.Second {
		t.Fatalf("with Redis down a held call: %s after %v", b, time.Since(began))
	} else {
		t.Logf("with Redis down: %.300s", b)
	}
	if b := echo(gwB, 6, "not held"); !strings.Contains(b, "not held") {
		t.Errorf("a call that needs no Redis, with Redis down: %s", b)
	}
	// Redis back: holds work again without restarting the gateway.
	if err := redis.Restart(); err != nil {
		t.Fatal(err)
	}
	var heldBody string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if heldBody = add(gwB, 7, 4, 4); strings.Contains(heldBody, "apr_") {
			break
		}
	}
	approveOn(adminB, heldBody)
	if b := add(gwB, 8, 4, 4); !strings.Contains(b, `"text":"8"`) {
		t.Errorf("after Redis came back: %s", b)
	}
}
